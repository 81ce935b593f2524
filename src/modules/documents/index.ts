/** Public face of the documents module: files people and organisations upload, checked by their bytes and encrypted at rest. */
export { DOCUMENT_CONTENT_TYPES, detectContentType, type DocumentContentType } from './document-content-type';
export { DOCUMENT_MAX_BYTES, DocumentTooLargeError, UnsupportedDocumentTypeError } from './document-errors';
export { type DocumentOwnerType, type StoredDocument } from './document-repository';
export { DocumentService, type StoreDocumentInput, type StoredDocumentSummary } from './document-service';

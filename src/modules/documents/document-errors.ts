import { PayloadTooLargeError, UnprocessableError } from '../../errors';
import { DOCUMENT_CONTENT_TYPES } from './document-content-type';

/** At most 5 MB (5,000,000 bytes) per document (the multipart limit of the HTTP layer is the same number). */
export const DOCUMENT_MAX_BYTES = 5_000_000;

/** 413: the file is larger than DOCUMENT_MAX_BYTES. */
export class DocumentTooLargeError extends PayloadTooLargeError {
  constructor() {
    super('PayloadTooLarge', `A document is at most ${DOCUMENT_MAX_BYTES} bytes (5 MB).`);
  }
}

/**
 * 422: the file's bytes are not a JPEG, PNG or PDF, whatever its name or declared type says.
 * (415 stays the answer for a request whose own Content-Type is wrong.)
 */
export class UnsupportedDocumentTypeError extends UnprocessableError {
  constructor() {
    super('UnsupportedDocumentType', `The file is not a JPEG, PNG or PDF (its type is read from its content, not its name): accepted ${DOCUMENT_CONTENT_TYPES.join(', ')}.`);
  }
}

/** 422: an empty file. */
export class EmptyDocumentError extends UnprocessableError {
  constructor() {
    super('UnsupportedDocumentType', 'The file is empty.');
  }
}

import crypto from 'node:crypto';
import type { Knex } from 'knex';
import type { Clock } from '../../clock';
import type { PiiCipher } from '../../pii-cipher';
import { detectContentType, type DocumentContentType } from './document-content-type';
import { DOCUMENT_MAX_BYTES, DocumentTooLargeError, EmptyDocumentError, UnsupportedDocumentTypeError } from './document-errors';
import { DocumentRepository, type DocumentOwnerType, type StoredDocument } from './document-repository';

type Db = Knex | Knex.Transaction;

export interface StoreDocumentInput {
  ownerType: DocumentOwnerType;
  ownerId: string;
  /** What the document is to its owner's process (`id_front`, `selfie`, `certificate_of_incorporation`): lower snake case, at most 40 characters. */
  kind: string;
  bytes: Buffer;
}

export interface StoredDocumentSummary {
  id: string;
  contentType: DocumentContentType;
  sizeBytes: number;
}

/** What a document's bytes are bound to: they open only as this document. */
function contextOf(id: string): string {
  return `uploaded_documents.ciphertext:${id}`;
}

/**
 * Uploaded documents of people and organisations (identity documents, selfies, company papers):
 * each checked (at most 5 MB, 5,000,000 bytes; a JPEG, PNG or PDF by its bytes) and stored encrypted at rest
 * (AES-256-GCM under the current PII key, bound to its row). Runs on the caller's transaction,
 * so a document exists only if the change that uploaded it commits.
 */
export class DocumentService {
  constructor(private readonly deps: { cipher: PiiCipher; clock: Clock }) {}

  /** Checks and stores one document. 413 PayloadTooLarge, 422 UnsupportedDocumentType. */
  async store(db: Db, input: StoreDocumentInput): Promise<StoredDocumentSummary> {
    if (input.bytes.length > DOCUMENT_MAX_BYTES) throw new DocumentTooLargeError();
    if (input.bytes.length === 0) throw new EmptyDocumentError();
    const contentType = detectContentType(input.bytes);
    if (!contentType) throw new UnsupportedDocumentTypeError();
    const id = crypto.randomUUID();
    const stored = await new DocumentRepository(db).insert({
      id,
      ownerType: input.ownerType,
      ownerId: input.ownerId,
      kind: input.kind,
      contentType,
      sizeBytes: input.bytes.length,
      keyId: this.deps.cipher.keyId,
      ciphertext: this.deps.cipher.sealBytes(input.bytes, contextOf(id)),
      createdAt: this.deps.clock(),
    });
    return { id: stored.id, contentType: stored.contentType, sizeBytes: stored.sizeBytes };
  }

  find(db: Db, id: string): Promise<StoredDocument | undefined> {
    return new DocumentRepository(db).find(id);
  }

  listOf(db: Db, ownerType: DocumentOwnerType, ownerId: string): Promise<StoredDocument[]> {
    return new DocumentRepository(db).listOf(ownerType, ownerId);
  }

  /** The document's bytes, decrypted (for a reviewer or a provider); undefined when absent or erased. */
  async read(db: Db, id: string): Promise<Buffer | undefined> {
    const sealed = await new DocumentRepository(db).findCiphertext(id);
    return sealed ? this.deps.cipher.openBytes(sealed, contextOf(id)) : undefined;
  }

  /** Erases the bytes of every document of an owner (the rows stay, as a record of what was uploaded). */
  eraseAllOf(db: Db, ownerType: DocumentOwnerType, ownerId: string): Promise<number> {
    return new DocumentRepository(db).eraseAllOf(ownerType, ownerId, this.deps.clock());
  }
}

import type { Knex } from 'knex';
import type { DocumentContentType } from './document-content-type';

type Db = Knex | Knex.Transaction;

export type DocumentOwnerType = 'user' | 'organization';

/** A stored document without its bytes. */
export interface StoredDocument {
  id: string;
  ownerType: DocumentOwnerType;
  ownerId: string;
  kind: string;
  contentType: DocumentContentType;
  sizeBytes: number;
  keyId: string;
  createdAt: Date;
  erasedAt: Date | null;
}

interface DocumentRow {
  id: string;
  owner_type: DocumentOwnerType;
  owner_id: string;
  kind: string;
  content_type: DocumentContentType;
  size_bytes: number;
  key_id: string;
  created_at: Date;
  erased_at: Date | null;
}

const COLUMNS = ['id', 'owner_type', 'owner_id', 'kind', 'content_type', 'size_bytes', 'key_id', 'created_at', 'erased_at'];

function toDocument(row: DocumentRow): StoredDocument {
  return {
    id: row.id,
    ownerType: row.owner_type,
    ownerId: row.owner_id,
    kind: row.kind,
    contentType: row.content_type,
    sizeBytes: Number(row.size_bytes),
    keyId: row.key_id,
    createdAt: row.created_at,
    erasedAt: row.erased_at,
  };
}

export class DocumentRepository {
  constructor(private readonly db: Db) {}

  async insert(row: { id: string; ownerType: DocumentOwnerType; ownerId: string; kind: string; contentType: DocumentContentType; sizeBytes: number; keyId: string; ciphertext: Buffer; createdAt: Date }): Promise<StoredDocument> {
    const [inserted] = (await this.db('uploaded_documents')
      .insert({
        id: row.id,
        owner_type: row.ownerType,
        owner_id: row.ownerId,
        kind: row.kind,
        content_type: row.contentType,
        size_bytes: row.sizeBytes,
        key_id: row.keyId,
        ciphertext: row.ciphertext,
        created_at: row.createdAt,
      })
      .returning(COLUMNS)) as DocumentRow[];
    return toDocument(inserted as DocumentRow);
  }

  async find(id: string): Promise<StoredDocument | undefined> {
    const row = (await this.db('uploaded_documents').where({ id }).first(COLUMNS)) as DocumentRow | undefined;
    return row ? toDocument(row) : undefined;
  }

  async findCiphertext(id: string): Promise<Buffer | null | undefined> {
    const row = (await this.db('uploaded_documents').where({ id }).first('ciphertext')) as { ciphertext: Buffer | null } | undefined;
    return row ? row.ciphertext : undefined;
  }

  async listOf(ownerType: DocumentOwnerType, ownerId: string): Promise<StoredDocument[]> {
    const rows = (await this.db('uploaded_documents').where({ owner_type: ownerType, owner_id: ownerId }).orderBy([{ column: 'created_at' }, { column: 'id' }]).select(COLUMNS)) as DocumentRow[];
    return rows.map(toDocument);
  }

  /** Drops the bytes of every document of the owner still holding them; returns how many. */
  async eraseAllOf(ownerType: DocumentOwnerType, ownerId: string, at: Date): Promise<number> {
    const count = await this.db('uploaded_documents').where({ owner_type: ownerType, owner_id: ownerId }).whereNull('erased_at').update({ ciphertext: null, erased_at: at });
    return Number(count);
  }
}

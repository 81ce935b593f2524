import type { Knex } from 'knex';
import { Keyset, type PageRequest } from '../../db/keyset';
import type { ApiKeyScope } from '../../contract';
import type { ApiKeyEnvironment } from './api-key-format';

type Db = Knex | Knex.Transaction;

/** A key with its current secret's public id and last four characters. */
export interface ApiKeyRecord {
  id: string;
  organizationId: string;
  name: string;
  scopes: ApiKeyScope[];
  environment: ApiKeyEnvironment;
  createdBy: string;
  /** Whom the key answers for: its creator, or whoever took it over. */
  heldBy: string;
  createdAt: Date;
  expiresAt: Date;
  revokedAt: Date | null;
  revokedReason: 'revoked' | 'creator_lost_access' | null;
  lastUsedAt: Date | null;
  lastUsedIp: string | null;
  publicId: string;
  last4: string;
}

/** What authenticating one secret needs, read in one query by the secret's public id. */
export interface ApiKeyCredential {
  keyId: string;
  organizationId: string;
  scopes: ApiKeyScope[];
  createdBy: string;
  /** Whom the key answers for (the caller its requests act as). */
  heldBy: string;
  expiresAt: Date;
  revokedAt: Date | null;
  lastUsedAt: Date | null;
  secretHash: string;
  retiresAt: Date | null;
}

export interface NewSecret {
  publicId: string;
  secretHash: string;
  last4: string;
}

interface KeyRow {
  id: string;
  organization_id: string;
  name: string;
  scopes: ApiKeyScope[] | string;
  environment: ApiKeyEnvironment;
  created_by: string;
  held_by: string | null;
  created_at: Date;
  expires_at: Date;
  revoked_at: Date | null;
  revoked_reason: ApiKeyRecord['revokedReason'];
  last_used_at: Date | null;
  last_used_ip: string | null;
  public_id: string;
  last4: string;
}

/** A text[] read back: the pg driver parses it; a raw array literal (`{a,b}`) is parsed here. */
function scopesOf(value: ApiKeyScope[] | string): ApiKeyScope[] {
  if (Array.isArray(value)) return value;
  const inner = value.replace(/^\{|\}$/g, '');
  return (inner === '' ? [] : inner.split(',')) as ApiKeyScope[];
}

function toRecord(row: KeyRow): ApiKeyRecord {
  return {
    id: row.id,
    organizationId: row.organization_id,
    name: row.name,
    scopes: scopesOf(row.scopes),
    environment: row.environment,
    createdBy: row.created_by,
    heldBy: row.held_by ?? row.created_by,
    createdAt: new Date(row.created_at),
    expiresAt: new Date(row.expires_at),
    revokedAt: row.revoked_at === null ? null : new Date(row.revoked_at),
    revokedReason: row.revoked_at === null ? null : (row.revoked_reason ?? 'revoked'),
    lastUsedAt: row.last_used_at === null ? null : new Date(row.last_used_at),
    lastUsedIp: row.last_used_ip,
    publicId: row.public_id,
    last4: row.last4,
  };
}

const KEYS = new Keyset({ table: 'api_keys', alias: 'k', noun: 'an API key of this organisation' });
const KEY_COLUMNS = [
  'k.id',
  'k.organization_id',
  'k.name',
  'k.scopes',
  'k.environment',
  'k.created_by',
  'k.held_by',
  'k.created_at',
  'k.expires_at',
  'k.revoked_at',
  'k.revoked_reason',
  'k.last_used_at',
  'k.last_used_ip',
  's.public_id',
  's.last4',
];

/** The Knex queries of API keys; snake_case stays here. */
export class ApiKeyRepository {
  constructor(private readonly db: Db) {}

  private withCurrentSecret(): Knex.QueryBuilder {
    return this.db('api_keys as k').join('api_key_secrets as s', (join) => {
      join.on('s.api_key_id', 'k.id').andOnNull('s.retires_at');
    });
  }

  /** The secret found by its public id, with its key's state (one query, no cache: a revocation counts from its commit). */
  async credential(publicId: string): Promise<ApiKeyCredential | undefined> {
    const row = await this.db('api_key_secrets as s')
      .join('api_keys as k', 'k.id', 's.api_key_id')
      .where('s.public_id', publicId)
      .first<
        | {
            id: string;
            organization_id: string;
            scopes: ApiKeyScope[] | string;
            created_by: string;
            held_by: string | null;
            expires_at: Date;
            revoked_at: Date | null;
            last_used_at: Date | null;
            secret_hash: string;
            retires_at: Date | null;
          }
        | undefined
      >('k.id', 'k.organization_id', 'k.scopes', 'k.created_by', 'k.held_by', 'k.expires_at', 'k.revoked_at', 'k.last_used_at', 's.secret_hash', 's.retires_at');
    if (!row) return undefined;
    return {
      keyId: row.id,
      organizationId: row.organization_id,
      scopes: scopesOf(row.scopes),
      createdBy: row.created_by,
      heldBy: row.held_by ?? row.created_by,
      expiresAt: new Date(row.expires_at),
      revokedAt: row.revoked_at === null ? null : new Date(row.revoked_at),
      lastUsedAt: row.last_used_at === null ? null : new Date(row.last_used_at),
      secretHash: row.secret_hash,
      retiresAt: row.retires_at === null ? null : new Date(row.retires_at),
    };
  }

  /** Records a use, unless one was recorded since `notBefore` (at most one write a minute per key). */
  async recordUse(keyId: string, at: Date, ip: string, notBefore: Date): Promise<void> {
    await this.db('api_keys')
      .where('id', keyId)
      .andWhere((q) => q.whereNull('last_used_at').orWhere('last_used_at', '<=', notBefore))
      .update({ last_used_at: at, last_used_ip: ip });
  }

  /**
   * The key with its current secret. `forUpdate` locks the key's row first, in a statement of its
   * own: a join in the locking statement would keep the snapshot from before a lock wait, and a
   * roll that waited for another would read the secret that roll had just retired.
   */
  /** The key's revocation and expiry, its row locked FOR SHARE until the transaction ends (a revocation waits for it). */
  async stateForShare(keyId: string): Promise<{ revokedAt: Date | null; expiresAt: Date } | undefined> {
    const row = (await this.db('api_keys').where({ id: keyId }).forShare().first('revoked_at', 'expires_at')) as { revoked_at: Date | null; expires_at: Date | string } | undefined;
    return row && { revokedAt: row.revoked_at, expiresAt: new Date(row.expires_at) };
  }

  async find(organizationId: string, keyId: string, options: { forUpdate?: boolean } = {}): Promise<ApiKeyRecord | undefined> {
    if (options.forUpdate && !(await this.db('api_keys').where({ organization_id: organizationId, id: keyId }).forUpdate().first('id'))) return undefined;
    const row = (await this.withCurrentSecret().where({ 'k.organization_id': organizationId, 'k.id': keyId }).first(KEY_COLUMNS)) as KeyRow | undefined;
    return row && toRecord(row);
  }

  async list(organizationId: string, request: PageRequest): Promise<ApiKeyRecord[]> {
    const rows = await KEYS.rows<KeyRow>(this.db, this.withCurrentSecret().where('k.organization_id', organizationId).select(KEY_COLUMNS), { organization_id: organizationId }, request);
    return rows.map(toRecord);
  }

  /** Locks the organisation's row: key creations of one organisation run one at a time (the active-key limit holds). */
  async lockOrganization(organizationId: string): Promise<boolean> {
    return (await this.db('organizations').where('id', organizationId).forUpdate().first('id')) !== undefined;
  }

  async countActive(organizationId: string, at: Date): Promise<number> {
    const row = (await this.db('api_keys').where('organization_id', organizationId).whereNull('revoked_at').andWhere('expires_at', '>', at).count({ n: '*' }).first()) as
      | { n: string | number }
      | undefined;
    return Number(row?.n ?? 0);
  }

  async insert(key: {
    organizationId: string;
    name: string;
    scopes: readonly ApiKeyScope[];
    environment: ApiKeyEnvironment;
    createdBy: string;
    createdAt: Date;
    expiresAt: Date;
  }): Promise<string> {
    const [row] = (await this.db('api_keys')
      .insert({
        organization_id: key.organizationId,
        name: key.name,
        scopes: [...key.scopes],
        environment: key.environment,
        created_by: key.createdBy,
        created_at: key.createdAt,
        expires_at: key.expiresAt,
      })
      .returning(['id'])) as Array<{ id: string }>;
    return (row as { id: string }).id;
  }

  async insertSecret(keyId: string, secret: NewSecret, at: Date): Promise<void> {
    await this.db('api_key_secrets').insert({ api_key_id: keyId, public_id: secret.publicId, secret_hash: secret.secretHash, last4: secret.last4, created_at: at });
  }

  /** The current secret retires at `retiresAt` (it keeps working until then); a secret already retiring keeps the earlier date. */
  async retireCurrentSecret(keyId: string, retiresAt: Date): Promise<void> {
    await this.db('api_key_secrets').where('api_key_id', keyId).whereNull('retires_at').update({ retires_at: retiresAt });
    await this.db('api_key_secrets').where('api_key_id', keyId).andWhere('retires_at', '>', retiresAt).update({ retires_at: retiresAt });
  }

  async revoke(keyId: string, by: string, at: Date): Promise<void> {
    await this.db('api_keys').where('id', keyId).whereNull('revoked_at').update({ revoked_at: at, revoked_by: by, revoked_reason: 'revoked' });
  }

  /** The key now answers for `holder`. */
  async transfer(keyId: string, holder: string): Promise<void> {
    await this.db('api_keys').where('id', keyId).update({ held_by: holder });
  }
}

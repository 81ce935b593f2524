import type { Knex } from 'knex';
import { Keyset, type PageRequest } from '../../db/keyset';

type Db = Knex | Knex.Transaction;

export interface NetworkStatusRecord {
  isOpen: boolean | null;
  isVisible: boolean;
  version: number;
  updatedBy: string | null;
  updatedAt: Date | null;
}

export interface NetworkStatusChange {
  id: string;
  actorUserId: string | null;
  before: { isOpen: boolean | null; version: number };
  after: { isOpen: boolean | null; version: number };
  requestId: string | null;
  createdAt: Date;
}

interface StatusRow {
  is_open: boolean | null;
  is_visible: boolean;
  version: number;
  updated_by: string | null;
  updated_at: Date | null;
}

interface ChangeRow {
  id: string;
  actor_user_id: string | null;
  before_is_open: boolean | null;
  before_version: number;
  after_is_open: boolean | null;
  after_version: number;
  request_id: string | null;
  created_at: Date;
}

/** Before the first change an organisation has no row: it reads as never set. */
export const NEVER_SET: NetworkStatusRecord = { isOpen: null, isVisible: false, version: 0, updatedBy: null, updatedAt: null };

const toRecord = (row: StatusRow): NetworkStatusRecord => ({
  isOpen: row.is_open,
  isVisible: row.is_visible,
  version: Number(row.version),
  updatedBy: row.updated_by,
  updatedAt: row.updated_at,
});

const toChange = (row: ChangeRow): NetworkStatusChange => ({
  id: row.id,
  actorUserId: row.actor_user_id,
  before: { isOpen: row.before_is_open, version: Number(row.before_version) },
  after: { isOpen: row.after_is_open, version: Number(row.after_version) },
  requestId: row.request_id,
  createdAt: row.created_at,
});

/** An organisation's versions are unique: the history pages by version, newest first. */
const CHANGES = new Keyset({ table: 'network_status_changes', alias: 'n', orderBy: ['after_version'], noun: 'a change of this organization' });

export class NetworkStatusRepository {
  constructor(private readonly db: Db) {}

  async find(organizationId: string): Promise<NetworkStatusRecord> {
    const row = (await this.db('organization_network_status')
      .where({ organization_id: organizationId })
      .first('is_open', 'is_visible', 'version', 'updated_by', 'updated_at')) as StatusRow | undefined;
    return row ? toRecord(row) : NEVER_SET;
  }

  /** Creates the never-set row if missing; a concurrent creator makes this a no-op. */
  async ensureRow(organizationId: string): Promise<void> {
    await this.db.raw('INSERT INTO organization_network_status (organization_id) VALUES (?) ON CONFLICT (organization_id) DO NOTHING', [organizationId]);
  }

  /**
   * Compare-and-set in one statement: the row is changed only while its version is still
   * `expectedVersion`, and the version moves by one. The CTE locks the row (re-checking the
   * version after any wait), so the values before the change come from the very row version
   * that was replaced. Only is_open, version, updated_by and updated_at are written: never
   * is_visible nor the publication or address fields. Undefined when the version is stale.
   */
  async compareAndSet(
    organizationId: string,
    expectedVersion: number,
    isOpen: boolean | null,
    actorUserId: string,
  ): Promise<{ before: NetworkStatusRecord; after: NetworkStatusRecord } | undefined> {
    const result = await this.db.raw<{ rows: Array<StatusRow & { before_is_open: boolean | null; before_version: number; before_updated_by: string | null; before_updated_at: Date | null }> }>(
      `WITH current_status AS (
         SELECT organization_id, is_open, version, updated_by, updated_at FROM organization_network_status
          WHERE organization_id = ? AND version = ?
          FOR UPDATE
       )
       UPDATE organization_network_status s
          SET is_open = ?, version = s.version + 1, updated_by = ?, updated_at = now()
         FROM current_status c
        WHERE s.organization_id = c.organization_id AND s.version = ?
       RETURNING s.is_open, s.is_visible, s.version, s.updated_by, s.updated_at,
                 c.is_open AS before_is_open, c.version AS before_version,
                 c.updated_by AS before_updated_by, c.updated_at AS before_updated_at`,
      [organizationId, expectedVersion, isOpen, actorUserId, expectedVersion],
    );
    const row = result.rows[0];
    if (!row) return undefined;
    return {
      before: { isOpen: row.before_is_open, isVisible: row.is_visible, version: Number(row.before_version), updatedBy: row.before_updated_by, updatedAt: row.before_updated_at },
      after: toRecord(row),
    };
  }

  async insertChange(input: {
    organizationId: string;
    actorUserId: string;
    before: NetworkStatusRecord;
    after: NetworkStatusRecord;
    requestId: string | null;
  }): Promise<NetworkStatusChange> {
    const [row] = await this.db('network_status_changes')
      .insert({
        organization_id: input.organizationId,
        actor_user_id: input.actorUserId,
        before_is_open: input.before.isOpen,
        before_version: input.before.version,
        after_is_open: input.after.isOpen,
        after_version: input.after.version,
        request_id: input.requestId,
      })
      .returning(['id', 'actor_user_id', 'before_is_open', 'before_version', 'after_is_open', 'after_version', 'request_id', 'created_at']);
    return toChange(row as ChangeRow);
  }

  /** Newest change first (by version), `limit + 1` rows; 400 when the cursor is not one of the organisation's changes. */
  async listChanges(organizationId: string, page: PageRequest): Promise<NetworkStatusChange[]> {
    const query = this.db('network_status_changes as n')
      .where('n.organization_id', organizationId)
      .select('n.id', 'n.actor_user_id', 'n.before_is_open', 'n.before_version', 'n.after_is_open', 'n.after_version', 'n.request_id', 'n.created_at');
    const rows = await CHANGES.rows<ChangeRow>(this.db, query, { organization_id: organizationId }, page);
    return rows.map(toChange);
  }
}

import type { Knex } from 'knex';
import { queryPrepared } from '../../db/prepared';
import { withTransaction } from '../../db/transaction';
import { withPendingKey, type ClaimAttempt, type PendingKey } from '../idempotency';
import { appliedDecision, applyDecision, decisionData, refusalOf, responseStatusOf, writeApplyAnswer, type Decision } from './write-path';

/**
 * The group commit of the one write path, for requests whose decision needs no locked read (a
 * transfer: its recipient is read plainly, and what is money-critical is checked by ledger_post
 * under its locks): the decisions of a window applied in ONE statement, write_apply_batch
 * (src/modules/writes/sql), each request with its own outcome. Per item, in its own
 * subtransaction: write_claim, then write_apply with the key's completion. A key the window did
 * not claim is settled by the pipeline's rules (PendingKey.settle), the request alone
 * (`applyAlone`); so is every request of a window that failed as a whole.
 *
 * A window costs one statement (one transaction, one commit) however many requests it holds.
 */

/** A request of a window: its key and its decision, or the refusal it meets once its key is its own. */
export interface WindowItem {
  key: PendingKey;
  decided: { decision: Decision } | { refusal: unknown };
}

/**
 * An item's outcome: the ids of its postings and the decision applied (its own, or the
 * alternative of a payout held; key completed), or its answer as an error, or a key left to the
 * pipeline.
 */
export type WindowOutcome = { postingIds: string[]; applied: Decision } | { error: unknown } | { unclaimed: ClaimAttempt };

interface Row {
  item: number;
  held: boolean | null;
  key_id: string | null;
  posting_ids: Array<string | null> | null;
  code: string | null;
  detail: string | null;
}

const WRITE_APPLY_BATCH_SQL =
  'SELECT b.item, b.held, b.key_id, to_json(b.posting_ids) AS posting_ids, b.code, b.detail FROM write_apply_batch($1::jsonb) AS b ORDER BY b.item';

/** The claim arguments of write_claim, by name. */
function claimData(key: PendingKey): Record<string, unknown> {
  const [userId, organizationId, operation, keyValue, requestHash, claimToken, leaseSeconds, ttlHours] = key.claimArguments();
  return { user_id: userId, organization_id: organizationId, operation, key: keyValue, request_hash: requestHash, claim_token: claimToken, lease_seconds: leaseSeconds, ttl_hours: ttlHours };
}

/** The item as write_apply_batch reads it. */
export function windowItemData(item: WindowItem): Record<string, unknown> {
  if ('refusal' in item.decided) return { claim: claimData(item.key), refused: true };
  const { decision } = item.decided;
  return { claim: claimData(item.key), decision: decisionData(decision, (decided) => ({ claimToken: item.key.claimToken, responseStatus: responseStatusOf(decided, item.key) })) };
}

/**
 * Applies a window in one statement (its own transaction) and answers one outcome per item, in
 * order, once committed. An error that is no item's own outcome fails the whole call.
 */
export async function applyWindow(db: Knex, items: readonly WindowItem[]): Promise<WindowOutcome[]> {
  const rows = await queryPrepared<Row>(db, 'write_apply_batch', WRITE_APPLY_BATCH_SQL, [JSON.stringify(items.map(windowItemData))]);
  if (rows.length !== items.length) throw new Error(`write_apply_batch answered ${rows.length} rows for ${items.length} items`);
  return rows.map((row, index) => outcomeOf(row, items[index] as WindowItem));
}

function outcomeOf(row: Row, item: WindowItem): WindowOutcome {
  const { key, decided } = item;
  if (row.code === 'WRT05' && 'refusal' in decided) return { error: decided.refusal };
  if (row.code !== null) {
    if (!('decision' in decided)) throw new Error(`write_apply_batch refused an item without a decision: ${row.code}`);
    return { error: refusalOf({ code: row.code, detail: row.detail ?? undefined }, decided.decision) };
  }
  if (row.posting_ids === null) return { unclaimed: { held: row.held === true } };
  if (!('decision' in decided)) throw new Error('write_apply_batch applied an item without a decision');
  const { postingIds, heldFor } = writeApplyAnswer(row.posting_ids);
  const applied = appliedDecision(decided.decision, heldFor);
  const { resource } = applied.answer;
  key.claimed = { id: row.key_id as string, claimToken: key.claimToken };
  key.completedWith = { responseStatus: responseStatusOf(applied, key), resourceType: resource.type, resourceId: resource.id, resourceStatus: resource.status };
  return { postingIds, applied };
}

/**
 * One request alone, in its own transaction, by the pipeline's rules: its key claimed (or the
 * window's first try at it, `first`), settled by PendingKey.settle (a replay, a reuse, a key in
 * use: thrown; an abandoned claim: taken over), then its refusal thrown or its decision applied
 * (applyDecision). Answers the ids of its postings.
 */
export async function applyAlone(db: Knex, item: WindowItem, first?: ClaimAttempt): Promise<string[]> {
  const { key, decided } = item;
  let firstTry = first;
  // Retried on a deadlock and, on a new connection, on a lost one: a run whose commit went
  // through unanswered finds its key completed by its own claim token (CompletedByThisRequest).
  return withTransaction(
    db,
    (trx) =>
      withPendingKey(trx, key, async () => {
        const attempt = firstTry;
        firstTry = undefined;
        key.claimed = undefined;
        key.completedWith = undefined;
        await key.settle(trx, attempt ?? (await claimIn(trx, key)));
        if ('refusal' in decided) throw decided.refusal;
        return applyDecision(trx, decided.decision);
      }),
    { retryOnConnectionLoss: true },
  );
}

/** write_claim for the key, alone. */
async function claimIn(trx: Knex.Transaction, key: PendingKey): Promise<ClaimAttempt> {
  const result = (await trx.raw('SELECT held, key_id FROM write_claim(?::uuid, ?::uuid, ?, ?, ?, ?::uuid, ?::integer, ?::integer)', key.claimArguments() as Knex.RawBinding[])) as {
    rows: Array<{ held: boolean; key_id: string | null }>;
  };
  const [row] = result.rows as [{ held: boolean; key_id: string | null }];
  return { held: row.held, ...(row.key_id ? { claimed: { id: row.key_id, claimToken: key.claimToken } } : {}) };
}

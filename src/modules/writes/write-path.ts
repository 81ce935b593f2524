import type { Knex } from 'knex';
import { ConflictError } from '../../errors';
import { isUniqueViolation } from '../../db/transaction';
import { NO_KEY_ARGUMENTS, pendingKeyOf, type IdempotentResource, type PendingKey } from '../idempotency';
import { ledgerRefusal, type AccountIdentity } from '../ledger';
import { patternsMatching, type DomainEvent } from '../events';

/**
 * The one write path of a change of state: claim the Idempotency-Key, read what the decision
 * needs (locked), decide in TypeScript (the lifecycle engine and the area's pure posting plan),
 * apply the decision in one statement. Per request, with the key, that is four round trips:
 *
 *   BEGIN
 *   SELECT ... FROM write_claim(<key>) c LEFT JOIN LATERAL (<the area's locked read>) r ON true
 *   SELECT write_apply(<decision>)   -- postings (ledger_post), rows, events, the key's completion
 *   COMMIT
 *
 * - `readLocked` runs the area's read after the key's claim, in the same statement: the read
 *   (its FOR UPDATE) happens only once the key is this request's. A key the claim did not get
 *   (a replay, a reuse, a key in use, one to take over) is answered by the pipeline's rules
 *   (PendingKey.settle), which throw, or claim the key: the read then runs again.
 * - `applyDecision` sends the decision as data to write_apply (src/modules/writes/sql): its
 *   postings go through ledger_post, the one place that checks balances, frozen accounts and
 *   sums; a refusal rolls the whole decision back and is thrown as the ledger's error
 *   (ledgerRefusal), for the area to name its parties (walletRefusal).
 * - The accounts a decision's postings touch are named by the area's pure posting plan only,
 *   by id (read under the lock) or by identity (found, or created on first use); ledger_post
 *   locks them in id order, and write_apply_batch every account of a window's postings first,
 *   in the same order.
 */

/** An account a posting names: by id, or by identity (found, or created on its first use). */
export type PlannedAccount = { id: string } | AccountIdentity;

export interface PlannedEntry {
  account: PlannedAccount;
  /** Negative debits, positive credits; never zero. */
  amountMinor: bigint;
}

export interface PlannedPosting {
  kind: string;
  reference: string;
  metadata?: Record<string, unknown>;
  /** Money returning to a frozen wallet (a reversal, a refund) may reach it. */
  allowFrozen?: boolean;
  entries: PlannedEntry[];
}

/** The tables the path writes (write_apply refuses any other). */
export type WritableTable =
  | 'escrows'
  | 'tontines'
  | 'tontine_cycles'
  | 'tontine_contributions'
  | 'tontine_members'
  | 'transfers'
  | 'top_ups'
  | 'refunds'
  | 'payouts'
  | 'crypto_deposit_addresses'
  | 'crypto_deposits'
  | 'crypto_quotes'
  | 'crypto_conversions'
  | 'crypto_withdrawal_addresses'
  | 'held_payouts'
  | 'crypto_withdrawals';

/** A row the decision inserts, or updates while it still shows what the decision read (`expect`). */
export interface RowChange {
  table: WritableTable;
  /** An update by default; an insert writes `set` (with its `id`) as a new row. */
  op?: 'insert' | 'update';
  /** The row's id; a row of a table without one (a cycle, a member) is named by its `key` instead. */
  id?: string;
  /** The columns and values that name the row, in place of its id (an update). */
  key?: Record<string, string | number>;
  /** Columns and the values the decision read (compared as JSON). */
  expect?: Record<string, string | number | boolean | null>;
  /** Columns and their new values (JSON: bigints as strings, dates as ISO strings). */
  set: Record<string, unknown>;
  /** Columns that take the id of one of the decision's postings, by its index. */
  postingIds?: Record<string, number>;
}

/** An event the decision records: a domain event (its id is the database's) with what its public form needs. */
export interface DecidedEvent extends Omit<DomainEvent, 'id'> {
  organizationId?: string | null;
  /** The object as the API returns it to no one in particular, after the change. */
  object: unknown;
  /** The status the object showed before the change (null for its first event). */
  previousStatus: string | null;
  /** Payload fields that take the id of one of the decision's postings, by its index. */
  postingIds?: Record<string, number>;
}

/** What a request changes, decided in TypeScript from what its read returned. */
export interface Decision {
  postings?: PlannedPosting[];
  changes?: RowChange[];
  events?: DecidedEvent[];
  /** What the request answers: the resource its Idempotency-Key (when it has one) is completed with. */
  answer: { resource: IdempotentResource; status?: number };
  /**
   * Payouts their recipients' limits may refuse, one alternative per payee: when ledger_post
   * refuses the posting at index `posting` for the limits of `ownerId` as payee, write_apply
   * applies that payee's `instead` (its payout held), whose postings before that one are exactly
   * this decision's (already posted). An alternative may name alternatives of its own (the
   * other payee of the posting it makes in place of the refused one).
   */
  holds?: PayoutHold[];
}

/** The decision write_apply applies in place of another when ledger_post refuses its posting `posting` for the limits of `ownerId` as payee. */
export interface PayoutHold {
  posting: number;
  ownerId: string;
  instead: Decision;
}

/** The identity of each account a set of postings names, by identity or by id. */
export function accountsOf(postings: readonly PlannedPosting[]): { identities: AccountIdentity[]; accountIds: string[] } {
  const identities: AccountIdentity[] = [];
  const accountIds: string[] = [];
  for (const entry of postings.flatMap((posting) => posting.entries)) {
    if ('id' in entry.account) accountIds.push(entry.account.id);
    else identities.push(entry.account);
  }
  return { identities, accountIds };
}

/** The condition the area's read carries in its WHERE: it reads (and locks) only once the key is this request's. */
export const CLAIMED = '(c.key_id IS NOT NULL OR NOT c.keyed)';

/**
 * The area's locked read (`read`: a SELECT whose WHERE includes CLAIMED, with FOR UPDATE),
 * after the claim of the request's key in the same statement. Answers the row read, or
 * undefined when it found none.
 */
export async function readLocked<Row extends object>(trx: Knex.Transaction, read: string, bindings: readonly unknown[]): Promise<Row | undefined> {
  const key = pendingKeyOf(trx);
  const run = async (claim: readonly unknown[]) => {
    const result = (await trx.raw(
      `SELECT c.keyed AS "claim:keyed", c.held AS "claim:held", c.key_id AS "claim:key_id", r.*
         FROM write_claim(?::uuid, ?::uuid, ?, ?, ?, ?::uuid, ?::integer, ?::integer) c
         LEFT JOIN LATERAL (${read}) r ON true`,
      [...claim, ...bindings] as Knex.RawBinding[],
    )) as { rows: Array<Record<string, unknown>> };
    return result.rows[0] as Record<string, unknown>;
  };
  let row = await run(key && !key.claimed ? key.claimArguments() : NO_KEY_ARGUMENTS);
  if (key && !key.claimed) {
    const keyId = row['claim:key_id'] as string | null;
    await key.settle(trx, { held: row['claim:held'] === true, ...(keyId ? { claimed: { id: keyId, claimToken: key.claimToken } } : {}) });
    // Claimed by the pipeline's rules (a key taken over): the read has not run yet.
    if (!keyId) row = await run(NO_KEY_ARGUMENTS);
  }
  const { 'claim:keyed': _keyed, 'claim:held': _held, 'claim:key_id': _keyId, ...read_ } = row;
  return Object.values(read_).every((value) => value === null) ? undefined : (read_ as Row);
}

/** The status the request answers with: the decision's, or the operation's own. */
export function responseStatusOf(decision: Decision, key: PendingKey): number {
  return decision.answer.status ?? key.responseStatus;
}

/**
 * The decision as write_apply reads it. What a decision leaves out, write_apply defaults (a
 * posting's metadata `{}`, allow_frozen false; a change's expect and posting_ids `{}`, its op an
 * update, its key its id; an account's external_ref, an event's organisation NULL, an event's
 * posting_ids `{}`): JSON.stringify drops it.
 */
function decisionJson(decision: Decision, key: PendingKey | undefined): string {
  return JSON.stringify(decisionData(decision, (decided) => (key?.claimed ? { ...key.claimed, responseStatus: responseStatusOf(decided, key) } : null)));
}

/** The completion of a decision's key: by the claim's id (left out while the key is still to be claimed: write_apply_batch fills it in). */
export type KeyCompletion = { id?: string; claimToken: string; responseStatus: number } | null;

/** The decision as data for write_apply; `completionOf` names its key's completion (a held payout's alternative has its own answer). */
export function decisionData(decision: Decision, completionOf: (decided: Decision) => KeyCompletion): Record<string, unknown> {
  const { resource } = decision.answer;
  const holds = decision.holds ?? [];
  checkHolds(decision, holds);
  const completion = completionOf(decision);
  return {
    postings: (decision.postings ?? []).map((posting) => ({
      kind: posting.kind,
      reference: posting.reference,
      metadata: posting.metadata,
      allow_frozen: posting.allowFrozen,
      entries: posting.entries.map((entry) => ({
        ...('id' in entry.account
          ? { account_id: entry.account.id }
          : {
              account: {
                owner_type: entry.account.ownerType,
                owner_id: entry.account.ownerId,
                currency: entry.account.currency,
                kind: entry.account.kind,
                external_ref: entry.account.externalRef,
              },
            }),
        amount_minor: entry.amountMinor.toString(),
      })),
    })),
    changes: (decision.changes ?? []).map((change) => ({
      table: change.table,
      op: change.op,
      id: change.id,
      key: change.key,
      expect: change.expect,
      set: change.op === 'insert' ? { id: change.id, ...change.set } : change.set,
      posting_ids: change.postingIds,
    })),
    events: (decision.events ?? []).map((event) => ({
      subject_type: event.subjectType,
      subject_id: event.subjectId,
      type: event.type,
      actor_user_id: event.actorUserId,
      payload: event.payload,
      occurred_at: event.occurredAt.toISOString(),
      organization_id: event.organizationId,
      patterns: patternsMatching(event.type),
      object: event.object,
      previous_status: event.previousStatus,
      posting_ids: event.postingIds,
    })),
    key: completion
      ? {
          id: completion.id,
          claim_token: completion.claimToken,
          response_status: completion.responseStatus,
          resource_type: resource.type,
          resource_id: resource.id,
          resource_status: resource.status,
          resource_location: resource.location,
        }
      : null,
    holds: holds.length > 0 ? holds.map((hold) => ({ posting: hold.posting, owner_id: hold.ownerId, instead: decisionData(hold.instead, completionOf) })) : undefined,
  };
}

/**
 * The alternatives a decision names are ones write_apply can apply in its place: one per payee
 * (the owner refused names the one applied), each at one of the decision's postings, posting
 * first exactly the decision's postings before that one (already posted when it is refused).
 */
function checkHolds(decision: Decision, holds: readonly PayoutHold[]): void {
  const postings = decision.postings ?? [];
  const owners = new Set<string>();
  for (const { posting, ownerId, instead } of holds) {
    if (owners.has(ownerId)) throw new TypeError(`a decision names one alternative per payee, not two for ${ownerId}`);
    owners.add(ownerId);
    if (!Number.isInteger(posting) || posting < 0 || posting >= postings.length) throw new TypeError(`a held payout's posting ${posting} is not one of the decision's ${postings.length}`);
    const before = instead.postings?.slice(0, posting) ?? [];
    if (before.length !== posting || JSON.stringify(before, bigintJson) !== JSON.stringify(postings.slice(0, posting), bigintJson)) {
      throw new TypeError(`a held payout's decision posts first the decision's ${posting} postings before the payout`);
    }
  }
}

const bigintJson = (_key: string, value: unknown): unknown => (typeof value === 'bigint' ? value.toString() : value);

/**
 * write_apply's answer: the ids of the postings of the decision it applied, then (when it applied
 * an alternative) NULL and the owner of each refusal that chose one, in order.
 */
export function writeApplyAnswer(answer: ReadonlyArray<string | null>): { postingIds: string[]; heldFor: string[] } {
  const marker = answer.indexOf(null);
  if (marker < 0) return { postingIds: answer as string[], heldFor: [] };
  return { postingIds: answer.slice(0, marker) as string[], heldFor: answer.slice(marker + 1) as string[] };
}

/** The decision write_apply applied: `decision`, or the alternative the refusals of `heldFor`'s owners chose, in turn. */
export function appliedDecision(decision: Decision, heldFor: readonly string[]): Decision {
  let applied = decision;
  for (const ownerId of heldFor) {
    const hold = applied.holds?.find((candidate) => candidate.ownerId === ownerId);
    if (!hold) throw new Error(`write_apply held a payout for ${ownerId}, for whom the decision names no alternative`);
    applied = hold.instead;
  }
  return applied;
}

/**
 * Applies `decision` in one statement (write_apply) and answers the ids of its postings, in its
 * order. A refusal of the ledger is thrown as the ledger's error (nothing of the decision is
 * written); a posting already recorded is 409 DuplicatePosting; a key taken over meanwhile is
 * 409 ConcurrentOperation (as the pipeline answers it).
 */
export async function applyDecision(trx: Knex.Transaction, decision: Decision): Promise<string[]> {
  return (await applyPayoutDecision(trx, decision)).postingIds;
}

/** What write_apply did with a decision that may hold payouts: the ids of its postings, and the decision it applied (`held`: an alternative). */
export interface AppliedDecision {
  postingIds: string[];
  held: boolean;
  applied: Decision;
}

/**
 * applyDecision for a decision that may hold its payouts (`holds`): answers its postings' ids
 * and the decision applied, from write_apply's answer alone.
 */
export async function applyPayoutDecision(trx: Knex.Transaction, decision: Decision): Promise<AppliedDecision> {
  const key = pendingKeyOf(trx);
  let answer: Array<string | null>;
  try {
    // As JSON, which every driver parses (a uuid[] may come as its text).
    const result = (await trx.raw('SELECT to_json(write_apply(?::jsonb)) AS posting_ids', [decisionJson(decision, key)])) as { rows: [{ posting_ids: Array<string | null> }] };
    [{ posting_ids: answer }] = result.rows;
  } catch (error) {
    const refusal = refusalOf(error, decision);
    if ((error as { code?: string }).code === 'WRT01' && refusal instanceof Error) REFUSED_BY_LEDGER.add(refusal);
    throw refusal;
  }
  const { postingIds, heldFor } = writeApplyAnswer(answer);
  const applied = appliedDecision(decision, heldFor);
  if (key?.claimed) {
    const { resource } = applied.answer;
    key.completedWith = { responseStatus: responseStatusOf(applied, key), resourceType: resource.type, resourceId: resource.id, resourceStatus: resource.status };
  }
  return { postingIds, held: heldFor.length > 0, applied };
}

const REFUSED_BY_LEDGER = new WeakSet<Error>();

/**
 * Whether `error` is a refusal of the ledger (ledger_post: a frozen account, short funds, a
 * limit) of a decision applyDecision was given, whatever the refusal: a caller that must not
 * fail when the ledger refuses (a top-up's settlement reverses instead) tells them apart from
 * any other failure by this alone.
 */
export function isLedgerRefusal(error: unknown): boolean {
  return error instanceof Error && REFUSED_BY_LEDGER.has(error);
}

/** What a refusal of write_apply (its SQLSTATE and DETAIL) answers: the ledger's error, 409 ConcurrentOperation, 409 DuplicatePosting; anything else as it is. */
export function refusalOf(error: unknown, decision: Decision): unknown {
  const { code, detail } = error as { code?: string; detail?: string };
  if (code === 'WRT01') {
    const refused = JSON.parse(detail as string) as { refusal: string; account_id: string; owner_id: string | null; currency: string; available: string; required: string };
    if (refused.refusal === 'LimitExceeded') return ledgerRefusal('LimitExceeded', refused);
    if (refused.refusal === 'AccountFrozen') return ledgerRefusal('AccountFrozen', { account_id: refused.account_id, owner_id: refused.owner_id });
    return ledgerRefusal('InsufficientFunds', { account_id: refused.account_id, currency: refused.currency, available: refused.available, required: refused.required });
  }
  if (code === 'WRT03') {
    return new ConflictError('ConcurrentOperation', 'A request with this Idempotency-Key is still being processed; retry later with the same key.', undefined, { 'Retry-After': '1' });
  }
  if (isUniqueViolation(error, 'postings_kind_reference_unique')) {
    // Only a decision with postings records one.
    const [posting] = decision.postings as [PlannedPosting, ...PlannedPosting[]];
    return new ConflictError('DuplicatePosting', `The ${posting.kind} posting for ${posting.reference} was already recorded.`);
  }
  return error;
}

import type { Knex } from 'knex';
import type { LockedObject } from '../ledger';

/** An object a posting changes (the posting batcher locks it, with its accounts, before the batch runs). */
export type PostingObject = LockedObject;

/**
 * The group commit of postings (the ledger's PostingBatcher): runs a unit of work in a shared
 * transaction under a savepoint of its own, and answers once that transaction has committed.
 */
export interface PostingGroupCommit {
  run<T>(work: (trx: Knex.Transaction) => Promise<T>, locks: readonly PostingObject[]): Promise<T>;
}

/** A request that moves money: run by the group commit of postings, with the objects it changes. */
export interface PostingRequest {
  locks: readonly PostingObject[];
}

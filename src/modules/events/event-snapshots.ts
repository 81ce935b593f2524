import type { Knex } from 'knex';

type Db = Knex | Knex.Transaction;

/** Loads an object as the API returns it, inside the transaction of the change. */
export type SnapshotLoader = (db: Db, objectId: string, at: Date) => Promise<unknown>;

const loaders = new Map<string, SnapshotLoader>();

/**
 * Registers how to take the snapshot of one object type (src/services.ts does, once per
 * module whose events do not carry their object: tontines, payment links; an escrow's events
 * carry theirs). An event recorded
 * without `object` takes it from here just before its transaction commits.
 */
export function registerSnapshot(objectType: string, loader: SnapshotLoader): void {
  loaders.set(objectType, loader);
}

/** The object's snapshot, or undefined when no loader is registered (the event keeps its payload). */
export async function snapshotOf(db: Db, objectType: string, objectId: string, at: Date): Promise<unknown> {
  const loader = loaders.get(objectType);
  return loader ? loader(db, objectId, at) : undefined;
}

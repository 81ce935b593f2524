import type { Knex } from 'knex';
import type { Caller } from '../../contract';
import type { PendingKey } from '../idempotency';
import type { CompletedResource, WindowAnswer, WindowDecided, WindowDecider } from '../writes';
import { escrowAfter, type DecidedEscrowChange } from './escrow-commit';
import { HOLDING_ACCOUNT, lockedEscrowOf, EscrowRepository, type EscrowWithHistory, type LockedEscrow, type Row } from './escrow-repository';

/** The escrow actions applied a window at a time (the others, and a resolution, run alone, locked). */
export type WindowedEscrowAction = 'fund' | 'accept';

/** An escrow action asked for, with the Idempotency-Key the pipeline handed over. */
export interface EscrowSubmission {
  caller: Pick<Caller, 'userId' | 'isAdmin'>;
  escrowId: string;
  action: WindowedEscrowAction;
  key: PendingKey;
}

/** A submission's answer: the escrow after it, or the error it is answered with. */
export type EscrowOutcome = WindowAnswer<EscrowWithHistory>;

/** How the service decides an action on the escrow read (nothing written), and runs one alone (locked, its own transaction). */
export interface EscrowRules {
  decide(escrow: LockedEscrow | undefined, submission: EscrowSubmission, now: Date): Promise<DecidedEscrowChange>;
  alone(trx: Knex.Transaction, submission: EscrowSubmission): Promise<EscrowWithHistory>;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * Escrow actions that move money (fund, accept) in windows (DecisionWindow, src/modules/writes):
 * the window's escrows read in ONE plain statement (each with its history and holding account,
 * nothing locked), each action decided in memory by the lifecycle and the posting plan.
 *
 * Every decision carries what it read as the escrow row's guard (`expect: {status}`): every
 * event of an escrow changes its status, forward only, so an escrow whose row still shows the
 * status read still has the history read. One that changed meanwhile (another action got there
 * first, or the same escrow twice in one window) runs again alone, locked (`alone`: the
 * service's own path).
 */
export function escrowDecider(knex: Knex, rules: EscrowRules): WindowDecider<EscrowSubmission, EscrowWithHistory> {
  return {
    noun: 'escrow actions',
    async decide(submissions, now) {
      const read = await readEscrows(knex, submissions.map((submission) => submission.escrowId));
      return Promise.all(
        submissions.map(async (submission): Promise<WindowDecided<EscrowWithHistory>> => {
          try {
            const decided = await rules.decide(read.get(submission.escrowId.toLowerCase()), submission, now);
            return { decision: decided.decision, answer: (postingIds, applied) => escrowAfter(decided, applied, postingIds) };
          } catch (refusal) {
            return { refusal };
          }
        }),
      );
    },
    alone: (trx, submission) => rules.alone(trx, submission),
    async completed(resourceId): Promise<CompletedResource<EscrowWithHistory> | undefined> {
      const found = await new EscrowRepository(knex).findWithHistory(resourceId);
      return found && { answer: found, resource: { type: 'escrow', id: found.escrow.id, status: found.escrow.status } };
    },
  };
}

/** The window's escrows, each with its history and holding account, in one plain statement (nothing locked). */
async function readEscrows(knex: Knex, ids: readonly string[]): Promise<Map<string, LockedEscrow>> {
  const wanted = [...new Set(ids.filter((id) => UUID.test(id)).map((id) => id.toLowerCase()))];
  if (wanted.length === 0) return new Map();
  const result = (await knex.raw(`SELECT e.*, events_history('escrow', e.id) AS history, ${HOLDING_ACCOUNT} FROM "escrows" e WHERE e.id = ANY(?::uuid[])`, [wanted])) as {
    rows: Array<Row & { history: unknown; holding_account_id: string | null }>;
  };
  return new Map(result.rows.map((row) => [row.id, lockedEscrowOf(row) as LockedEscrow]));
}

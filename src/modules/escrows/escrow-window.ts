import type { Knex } from 'knex';
import type { Logger } from 'pino';
import type { Caller } from '../../contract';
import { DomainError } from '../../errors';
import { withTransaction } from '../../db/transaction';
import { GroupCommit } from '../ledger';
import { CompletedByThisRequest, withPendingKey, type PendingKey } from '../idempotency';
import { applyWindow, type WindowItem, type WindowOutcome } from '../writes';
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
export type EscrowOutcome = { after: EscrowWithHistory } | { error: unknown };

/** How the service decides an action on the escrow read (nothing written), and runs one alone (locked, its own transaction). */
export interface EscrowDecider {
  decide(escrow: LockedEscrow | undefined, submission: EscrowSubmission, now: Date): Promise<DecidedEscrowChange>;
  alone(trx: Knex.Transaction, submission: EscrowSubmission): Promise<EscrowWithHistory>;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * Escrow actions that move money (fund, accept) on the one write path, a window at a time
 * (GroupCommit, as POST /transfers): the window's escrows read in ONE plain statement (each with
 * its history and holding account, nothing locked), each action decided in memory by the
 * lifecycle and the posting plan, and the window applied in ONE statement (applyWindow:
 * write_apply_batch, each action its key's claim, its posting through ledger_post, its row, its
 * event, its key's completion, in its own subtransaction). Two round trips for the window.
 *
 * Nothing read is locked, so every decision carries what it read as the escrow row's guard
 * (`expect: {status}`): every event of an escrow changes its status, forward only, so an escrow
 * whose row still shows the status read still has the history read. One that changed meanwhile
 * (WRT02: another action got there first, or the same escrow twice in one window) rolls that
 * action back alone, and it runs again alone, locked (`alone`: the service's own path), whose
 * answer is the one a request arriving after the other would get. A refusal decided from the read
 * (a state the lifecycle refuses, an escrow the caller may not see) waits for the key's claim
 * (WRT05): a replay is answered as a replay, never as the refusal. A key the window did not claim,
 * and every action of a window that failed as a whole, run alone by the pipeline's rules.
 */
export class EscrowWindow {
  readonly batcher: GroupCommit<EscrowSubmission, EscrowOutcome>;

  constructor(
    private readonly knex: Knex,
    private readonly decider: EscrowDecider,
    private readonly now: () => Date,
    logger: Pick<Logger, 'warn'> | undefined,
    batch: { windowMs?: number; maxItems?: number } | undefined,
  ) {
    this.batcher = new GroupCommit<EscrowSubmission, EscrowOutcome>({
      ...batch,
      runBatch: (submissions) => this.runWindow(submissions),
      runOne: (submission) => this.runAlone(submission),
      onBatch: (size, failed) => {
        if (failed) logger?.warn({ size }, 'a window of escrow actions failed as a whole: its actions run again one by one');
      },
    });
  }

  /** Resolves with the action's outcome once the transaction that holds it has committed. */
  submit(submission: EscrowSubmission): Promise<EscrowOutcome> {
    return this.batcher.submit(submission);
  }

  /** One window: its escrows read, its actions decided, applied in one statement; one outcome per submission, in order. */
  async runWindow(submissions: EscrowSubmission[]): Promise<EscrowOutcome[]> {
    const read = await this.read(submissions.map((submission) => submission.escrowId));
    const now = this.now();
    const decided = await Promise.all(submissions.map((submission) => this.decide(submission, read.get(submission.escrowId.toLowerCase()), now)));
    const outcomes = await applyWindow(
      this.knex,
      decided.map((entry) => entry.item),
    );
    // One after the other: the actions that run again alone (racing on one escrow, most often)
    // would only queue on its row lock, each holding a connection of the pool.
    const answers: EscrowOutcome[] = [];
    for (const [index, outcome] of outcomes.entries()) answers.push(await this.answer(decided[index] as Decided, outcome));
    return answers;
  }

  /** An action alone, locked, in its own transaction, by the pipeline's rules (its window failed, its escrow changed, its key was not claimed). */
  async runAlone(submission: EscrowSubmission): Promise<EscrowOutcome> {
    const { key } = submission;
    try {
      const after = await withTransaction(
        this.knex,
        (trx) =>
          withPendingKey(trx, key, () => {
            key.claimed = undefined;
            key.completedWith = undefined;
            return this.decider.alone(trx, submission);
          }),
        { retryOnConnectionLoss: true },
      );
      return { after };
    } catch (error) {
      if (error instanceof CompletedByThisRequest) {
        // A first run that committed unanswered: the escrow as it is now, the key its own.
        const found = await new EscrowRepository(this.knex).findWithHistory(error.resourceId);
        if (found) {
          key.completedWith = { responseStatus: key.responseStatus, resourceType: 'escrow', resourceId: found.escrow.id, resourceStatus: found.escrow.status };
          return { after: found };
        }
      }
      return { error };
    }
  }

  /** The window's escrows, each with its history and holding account, in one plain statement (nothing locked). */
  private async read(ids: readonly string[]): Promise<Map<string, LockedEscrow>> {
    const wanted = [...new Set(ids.filter((id) => UUID.test(id)).map((id) => id.toLowerCase()))];
    if (wanted.length === 0) return new Map();
    const result = (await this.knex.raw(`SELECT e.*, events_history('escrow', e.id) AS history, ${HOLDING_ACCOUNT} FROM "escrows" e WHERE e.id = ANY(?::uuid[])`, [wanted])) as {
      rows: Array<Row & { history: unknown; holding_account_id: string | null }>;
    };
    return new Map(result.rows.map((row) => [row.id, lockedEscrowOf(row) as LockedEscrow]));
  }

  private async decide(submission: EscrowSubmission, escrow: LockedEscrow | undefined, now: Date): Promise<Decided> {
    try {
      const decided = await this.decider.decide(escrow, submission, now);
      return { submission, decided, item: { key: submission.key, decided: { decision: decided.decision } } };
    } catch (refusal) {
      // A refusal of the lifecycle waits for the key's claim; anything else, the action alone.
      if (!(refusal instanceof DomainError)) return { submission, decided: undefined, item: { key: submission.key, decided: { refusal: new RunAlone() } } };
      return { submission, decided: undefined, item: { key: submission.key, decided: { refusal } } };
    }
  }

  private async answer(entry: Decided, outcome: WindowOutcome): Promise<EscrowOutcome> {
    const { decided, submission } = entry;
    if ('postingIds' in outcome && decided) return { after: escrowAfter(decided, outcome.applied, outcome.postingIds) };
    if ('error' in outcome) {
      // A refusal decided from the read, once the key was claimed (WRT05): the answer.
      if (!decided && !(outcome.error instanceof RunAlone)) return { error: outcome.error };
      // A decision refused when applied: what was read changed meanwhile (WRT02), or the ledger
      // refused a posting decided from it (ledger_post runs before the row's guard: a holding
      // shard another accept emptied), or its key was taken over. The action again, alone and
      // locked, whose answer is the one its turn gets (the same refusal when it stands).
      return this.runAlone(submission);
    }
    // A key the window did not claim (a replay, a reuse, a key held by another request, one to take over).
    return this.runAlone(submission);
  }
}

interface Decided {
  submission: EscrowSubmission;
  decided: DecidedEscrowChange | undefined;
  item: WindowItem;
}

/** A decision that threw something other than a refusal: the action runs alone once its key is claimed and released. */
class RunAlone extends Error {
  constructor() {
    super('the escrow action runs alone');
  }
}

import type { Knex } from 'knex';
import type { Logger } from 'pino';
import { DomainError } from '../../errors';
import { withTransaction } from '../../db/transaction';
import { GroupCommit } from '../ledger';
import { CompletedByThisRequest, withPendingKey, type PendingKey } from '../idempotency';
import { applyWindow, type WindowItem, type WindowOutcome } from './write-batch';
import type { Decision } from './write-path';

/** A request of a window: whatever the area needs, and the Idempotency-Key the pipeline handed over. */
export interface WindowSubmission {
  key: PendingKey;
}

/**
 * A submission decided from the window's read (nothing written): its decision and how its
 * answer is made once applied (`applied`: the decision, or the alternative of a payout held that write_apply chose), or
 * what deciding it threw.
 */
export type WindowDecided<Answer> = { decision: Decision; answer(postingIds: readonly string[], applied: Decision): Answer } | { refusal: unknown };

/** A submission's answer: the area's, or the error it is answered with. */
export type WindowAnswer<Answer> = { after: Answer } | { error: unknown };

/** The resource an Idempotency-Key was completed with (a first run that committed unanswered). */
export interface CompletedResource<Answer> {
  answer: Answer;
  resource: { type: string; id: string; status: string };
}

/** What an area brings to a window: its decisions from one plain read, and its own path alone, locked. */
export interface WindowDecider<Submission extends WindowSubmission, Answer> {
  /** The area, as a failed window's warning names it ("escrow actions"). */
  readonly noun: string;
  /**
   * Reads what the window's submissions need in ONE plain statement (nothing locked) and decides
   * each in memory, one per submission, in order. Every decision carries what it read as its
   * rows' guards (write_apply's `expect`), so one whose read no longer holds is refused when
   * applied (WRT02) and runs again alone.
   */
  decide(submissions: readonly Submission[], now: Date): Promise<Array<WindowDecided<Answer>>>;
  /** The submission alone, locked, in `trx` (its key pending in it): the area's own path. */
  alone(trx: Knex.Transaction, submission: Submission): Promise<Answer>;
  /** The answer of a submission whose first run committed unanswered (its key completed by its own claim), read now. */
  completed(resourceId: string, submission: Submission): Promise<CompletedResource<Answer> | undefined>;
}

/**
 * Requests on the one write path a window at a time (GroupCommit, as POST /transfers): the
 * area's decider reads the window's objects in ONE plain statement and decides each request in
 * memory; the window is applied in ONE statement (applyWindow: write_apply_batch, each request
 * its key's claim, its postings through ledger_post, its rows, its events, its key's
 * completion, in its own subtransaction). Two round trips for the window.
 *
 * Nothing read is locked: a decision whose rows changed meanwhile (WRT02), or that the ledger
 * refused from what it read (ledger_post runs before the rows' guards), or whose key was taken
 * over, rolls back alone and runs again alone, locked (the decider's `alone`), whose answer is
 * the one a request arriving after the other would get. A refusal decided from the read (a
 * DomainError: a state the lifecycle refuses, an object the caller may not see) waits for the
 * key's claim (WRT05): a replay is answered as a replay, never as the refusal. Anything else
 * deciding threw, a key the window did not claim, and every request of a window that failed as
 * a whole, run alone by the pipeline's rules.
 */
export class DecisionWindow<Submission extends WindowSubmission, Answer> {
  readonly batcher: GroupCommit<Submission, WindowAnswer<Answer>>;

  constructor(
    private readonly knex: Knex,
    private readonly decider: WindowDecider<Submission, Answer>,
    private readonly now: () => Date,
    logger: Pick<Logger, 'warn'> | undefined,
    batch: { windowMs?: number; maxItems?: number } | undefined,
  ) {
    this.batcher = new GroupCommit<Submission, WindowAnswer<Answer>>({
      ...batch,
      runBatch: (submissions) => this.runWindow(submissions),
      runOne: (submission) => this.runAlone(submission),
      onBatch: (size, failed) => {
        if (failed) logger?.warn({ size }, `a window of ${decider.noun} failed as a whole: they run again one by one`);
      },
    });
  }

  /** Resolves with the submission's answer once the transaction that holds it has committed. */
  submit(submission: Submission): Promise<WindowAnswer<Answer>> {
    return this.batcher.submit(submission);
  }

  /** One window: read and decided by the area, applied in one statement; one answer per submission, in order. */
  async runWindow(submissions: Submission[]): Promise<Array<WindowAnswer<Answer>>> {
    const decided = await this.decider.decide(submissions, this.now());
    if (decided.length !== submissions.length) throw new Error(`the ${this.decider.noun} decider answered ${decided.length} decisions for ${submissions.length} submissions`);
    const items = decided.map((entry, index): WindowItem => ({ key: (submissions[index] as Submission).key, decided: itemDecided(entry) }));
    const outcomes = await applyWindow(this.knex, items);
    // One after the other: the requests that run again alone (racing on one object, most often)
    // would only queue on its row lock, each holding a connection of the pool.
    const answers: Array<WindowAnswer<Answer>> = [];
    for (const [index, outcome] of outcomes.entries()) answers.push(await this.answer(submissions[index] as Submission, decided[index] as WindowDecided<Answer>, outcome));
    return answers;
  }

  /** A submission alone, locked, in its own transaction, by the pipeline's rules (its window failed, its read changed, its key was not claimed). */
  async runAlone(submission: Submission): Promise<WindowAnswer<Answer>> {
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
        // A first run that committed unanswered: the object as it is now, the key its own.
        const found = await this.decider.completed(error.resourceId, submission);
        if (found) {
          completedAs(key, found.resource);
          return { after: found.answer };
        }
      }
      return { error };
    }
  }

  private async answer(submission: Submission, decided: WindowDecided<Answer>, outcome: WindowOutcome): Promise<WindowAnswer<Answer>> {
    if ('postingIds' in outcome && 'decision' in decided) {
      // `applied`: the decision itself, or the alternative write_apply chose for a payout held (its key completed with that one's answer).
      return { after: decided.answer(outcome.postingIds, outcome.applied) };
    }
    // A refusal decided from the read, once the key was claimed (WRT05): the answer.
    if ('error' in outcome && 'refusal' in decided && !(outcome.error instanceof RunAlone)) return { error: outcome.error };
    // A decision refused when applied: what was read changed meanwhile (WRT02), or the ledger
    // refused a posting decided from it, or its key was taken over; or a key the window did not
    // claim (a replay, a reuse, a key held by another request, one to take over). The request
    // again, alone and locked, whose answer is the one its turn gets (the same refusal when it stands).
    return this.runAlone(submission);
  }
}

/** The item as applyWindow takes it: a refusal of the lifecycle waits for the key's claim; anything else deciding threw, the request alone. */
function itemDecided<Answer>(decided: WindowDecided<Answer>): WindowItem['decided'] {
  if ('decision' in decided) return { decision: decided.decision };
  return { refusal: decided.refusal instanceof DomainError ? decided.refusal : new RunAlone() };
}

function completedAs(key: PendingKey, resource: { type: string; id: string; status: string }): void {
  key.completedWith = { responseStatus: key.responseStatus, resourceType: resource.type, resourceId: resource.id, resourceStatus: resource.status };
}

/** A decision that threw something other than a refusal: the request runs alone once its key is claimed and released. */
class RunAlone extends Error {
  constructor() {
    super('the request runs alone');
  }
}

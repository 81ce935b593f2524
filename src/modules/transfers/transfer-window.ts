import crypto from 'node:crypto';
import type { Knex } from 'knex';
import type { Logger } from 'pino';
import { GroupCommit, walletRefusal } from '../ledger';
import { CompletedByThisRequest, type PendingKey } from '../idempotency';
import { applyAlone, applyWindow, type WindowItem, type WindowOutcome } from '../writes';
import { decideTransfer, recipientLookup, type Parties, type TransferRequest } from './transfer-decision';
import { TransfersRepository, type Transfer } from './transfers-repository';

/** A transfer asked for, with the Idempotency-Key the pipeline handed over. */
export interface TransferSubmission {
  request: TransferRequest;
  key: PendingKey;
}

/** A submission's answer: the transfer made, or the error it is answered with. */
export type TransferOutcome = { transfer: Transfer } | { error: unknown };

/**
 * POST /transfers on the one write path, in windows (the group commit: GroupCommit): the
 * parties of the window's transfers read in one plain statement; each transfer decided in
 * memory (decideTransfer); the window applied in one statement (applyWindow: write_apply_batch,
 * each transfer its key's claim, its posting through ledger_post, its row, its key's
 * completion). A key the window did not claim, and every transfer of a window that failed as a
 * whole, go alone by the pipeline's rules (applyAlone).
 */
export class TransferWindow {
  readonly batcher: GroupCommit<TransferSubmission, TransferOutcome>;

  constructor(
    private readonly knex: Knex,
    logger: Logger | undefined,
    batch: { windowMs?: number; maxItems?: number } | undefined,
  ) {
    this.batcher = new GroupCommit<TransferSubmission, TransferOutcome>({
      ...batch,
      runBatch: (submissions) => this.runWindow(submissions),
      runOne: (submission) => this.runAlone(submission),
      onBatch: (size, failed) => {
        if (failed) logger?.warn({ size }, 'a batch of transfers failed as a whole: its transfers run again one by one');
      },
    });
  }

  /** Resolves with the transfer's outcome once the transaction that holds it has committed. */
  submit(submission: TransferSubmission): Promise<TransferOutcome> {
    return this.batcher.submit(submission);
  }

  /** One window: its parties read, its transfers decided, applied in one statement; one outcome per submission, in order. */
  async runWindow(submissions: TransferSubmission[]): Promise<TransferOutcome[]> {
    const parties = await new TransfersRepository(this.knex).parties(submissions.map(({ request }) => ({ userId: request.userId, ...recipientLookup(request) })));
    const decided = submissions.map((submission, index) => decide(submission, parties[index] as Parties));
    const outcomes = await applyWindow(this.knex, decided.map((entry) => entry.item));
    return Promise.all(outcomes.map((outcome, index) => this.answer(decided[index] as Decided, outcome)));
  }

  /** A transfer alone (its window failed as a whole): its parties, its decision, applied by the pipeline's rules. */
  async runAlone(submission: TransferSubmission): Promise<TransferOutcome> {
    const [parties] = await new TransfersRepository(this.knex).parties([{ userId: submission.request.userId, ...recipientLookup(submission.request) }]);
    const entry = decide(submission, parties as Parties);
    return this.alone(entry);
  }

  private async answer(entry: Decided, outcome: WindowOutcome): Promise<TransferOutcome> {
    if ('postingIds' in outcome) return { transfer: { ...(entry.transfer as Transfer), postingId: outcome.postingIds[0] as string } };
    if ('error' in outcome) return { error: refusalOf(outcome.error, entry.submission.request.userId) };
    // A key the window did not claim: settled alone, with the window's try at it.
    return this.alone(entry, outcome.unclaimed).catch((error: unknown) => ({ error }));
  }

  private async alone(entry: Decided, first?: Extract<WindowOutcome, { unclaimed: unknown }>['unclaimed']): Promise<TransferOutcome> {
    try {
      const [postingId] = await applyAlone(this.knex, entry.item, first);
      return { transfer: { ...(entry.transfer as Transfer), postingId: postingId as string } };
    } catch (error) {
      if (error instanceof CompletedByThisRequest) {
        const transfer = await new TransfersRepository(this.knex).findById(error.resourceId);
        if (transfer) {
          entry.item.key.completedWith = { responseStatus: 200, resourceType: 'transfer', resourceId: transfer.id, resourceStatus: transfer.status };
          return { transfer };
        }
      }
      return { error: refusalOf(error, entry.submission.request.userId) };
    }
  }
}

interface Decided {
  submission: TransferSubmission;
  item: WindowItem;
  transfer: Transfer | undefined;
}

function decide(submission: TransferSubmission, parties: Parties): Decided {
  const decision = decideTransfer(submission.request, parties, crypto.randomUUID(), new Date());
  if ('refusal' in decision) return { submission, item: { key: submission.key, decided: { refusal: decision.refusal } }, transfer: undefined };
  return { submission, item: { key: submission.key, decided: { decision: decision.decision } }, transfer: decision.transfer };
}

/** The ledger's refusals in the transfer's words: whose wallet is frozen (the sender's or the recipient's), what the sender's wallet must cover. */
function refusalOf(error: unknown, senderUserId: string): unknown {
  return walletRefusal(error, { parties: new Map(), owners: new Map([[senderUserId, 'sender']]), defaultParty: 'recipient', covers: 'this transfer' });
}

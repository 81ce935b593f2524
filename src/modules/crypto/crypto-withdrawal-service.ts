import crypto from 'node:crypto';
import type { Knex } from 'knex';
import type { Logger } from 'pino';
import type { Clock } from '../../clock';
import type { IdempotentResource } from '../../contract';
import { Keyset, toPage, type Page, type PageRequest } from '../../db/keyset';
import { readConnection } from '../../db/read-routing';
import { withTransaction } from '../../db/transaction';
import { parseAmount } from '../ledger';
import { applyDecision, CLAIMED, readLocked, type DecidedEvent, type PlannedPosting } from '../writes';
import { assertCryptoTier, requireCryptoTier } from './crypto-access';
import { cryptoCatalog } from './crypto-catalog';
import {
  CryptoWithdrawalNotFoundError,
  TravelRuleInformationRequiredError,
  WithdrawalAddressNotActiveError,
  WithdrawalAddressNotFoundError,
  WithdrawalAlreadyFinalError,
  WithdrawalNotCancelableError,
} from './crypto-errors';
import type { CryptoNetworkPort, OutgoingTransfer, SandboxCryptoNetwork, WithdrawalObservation } from './crypto-network';
import type { RateSource } from './crypto-rates';
import type { WithdrawalAddressRow } from './crypto-withdrawal-addresses';
import {
  FINAL_WITHDRAWAL_STATUSES,
  isCancelable,
  TRAVEL_RULE_THRESHOLD_USD,
  travelRuleApplies,
  withdrawalReservePosting,
  withdrawalSettlementPosting,
  withdrawalStep,
  type WithdrawalStatus,
} from './crypto-withdrawal-plan';
import { presentWithdrawal, toWithdrawal, withdrawalColumns, type Beneficiary, type Withdrawal, type WithdrawalView } from './crypto-withdrawal-presenter';

export interface WithdrawalRequest {
  withdrawal_address_id: string;
  amount: string;
  beneficiary?: Beneficiary;
}

const WITHDRAWALS = new Keyset({ table: 'crypto_withdrawals', alias: 'w', noun: 'a crypto withdrawal of yours' });

export function withdrawalResource(withdrawal: Pick<Withdrawal, 'id' | 'status'>): IdempotentResource {
  return { type: 'crypto_withdrawal', id: withdrawal.id, status: withdrawal.status, location: `/api/crypto/withdrawals/${withdrawal.id}` };
}

function withdrawalEvent(after: Withdrawal, previousStatus: WithdrawalStatus | null, actorUserId: string | null, now: Date): DecidedEvent {
  const type = previousStatus === null ? 'created' : after.status;
  return {
    subjectType: 'crypto_withdrawal',
    subjectId: after.id,
    type: `crypto.withdrawal.${type}`,
    actorUserId,
    payload: { status: after.status, amount_minor: after.amountMinor.toString(), fee_minor: after.feeMinor.toString(), tx_hash: after.txHash },
    occurredAt: now,
    object: presentWithdrawal(after),
    previousStatus,
  };
}

/** What the network's sender is handed of a withdrawal. */
function outgoing(withdrawal: Withdrawal): OutgoingTransfer {
  return { withdrawalId: withdrawal.id, network: withdrawal.network, address: withdrawal.address, memo: withdrawal.memo, asset: withdrawal.asset, amountMinor: withdrawal.amountMinor };
}

/** The columns a change of status writes (the row's own columns that move after it is created). */
function progressColumns(after: Withdrawal): Record<string, unknown> {
  const columns = withdrawalColumns(after);
  const moving = ['status', 'tx_hash', 'confirmations', 'failure_reason', 'broadcast_at', 'completed_at', 'failed_at', 'canceled_at', 'updated_at'];
  return Object.fromEntries(moving.map((name) => [name, columns[name]]));
}

/**
 * Withdrawals to the caller's address book, on the one write path. A withdrawal reserves its
 * amount and the network's fee at once (the wallet -> the withdrawals' transit account; the
 * ledger refuses short funds and outflow limits), then goes to the network's sender: `created
 * -> queued -> broadcast -> confirming -> completed | failed`. The sender asks before it
 * broadcasts (`broadcast`: the row locked, still created or queued), so a cancel and a broadcast
 * never both happen. Completed, the money goes out to the network; failed or canceled, the
 * amount and the fee return to the wallet.
 */
export class CryptoWithdrawalService {
  constructor(private readonly deps: { knex: Knex; clock: Clock; rates: RateSource; network: CryptoNetworkPort; sandbox?: SandboxCryptoNetwork; logger?: Pick<Logger, 'error'> }) {
    deps.network.onWithdrawal({ broadcast: (id, txHash) => this.broadcast(id, txHash), observed: (observation) => this.observed(observation) });
  }

  /** POST /crypto/withdrawals, in the pipeline's transaction; `dispatch` hands it to the network once committed. */
  async create(trx: Knex.Transaction, userId: string, input: WithdrawalRequest): Promise<{ view: WithdrawalView; resource: IdempotentResource; dispatch: () => Promise<WithdrawalView> }> {
    const read = await readLocked<WithdrawalAddressRow & { tier: string }>(
      trx,
      `SELECT a.*, u.tier FROM crypto_withdrawal_addresses a JOIN users u ON u.id = a.user_id WHERE a.id = ? AND a.user_id = ? AND ${CLAIMED}`,
      [input.withdrawal_address_id, userId],
    );
    if (!read) {
      await requireCryptoTier(trx, userId);
      throw new WithdrawalAddressNotFoundError();
    }
    assertCryptoTier(read.tier);
    const now = this.deps.clock();
    const activeAt = new Date(read.active_at);
    if (activeAt.getTime() > now.getTime()) throw new WithdrawalAddressNotActiveError(activeAt);
    const asset = read.asset.trim();
    const exponent = cryptoCatalog.asset(asset)?.exponent ?? 6;
    const network = cryptoCatalog.network(read.network);
    if (!network) throw new Error(`withdrawal address ${read.id} names an unknown network ${read.network}`);
    const amountMinor = parseAmount(input.amount, exponent, { field: 'amount' });
    const usd = await this.deps.rates.valueInEur('USD');
    if (!input.beneficiary && travelRuleApplies(amountMinor, exponent, await this.deps.rates.valueInEur(asset as 'USDC' | 'USDT'), usd)) {
      throw new TravelRuleInformationRequiredError(TRAVEL_RULE_THRESHOLD_USD.toString());
    }
    const withdrawal: Withdrawal = {
      id: crypto.randomUUID(),
      userId,
      withdrawalAddressId: read.id,
      asset,
      network: network.code,
      address: read.address,
      memo: read.memo,
      amountMinor,
      feeMinor: parseAmount(network.withdrawalFee, exponent, { positive: false }),
      beneficiary: input.beneficiary ? { name: input.beneficiary.name, country: input.beneficiary.country } : null,
      status: 'created',
      txHash: null,
      confirmations: 0,
      confirmationsRequired: network.confirmations,
      failureReason: null,
      broadcastAt: null,
      completedAt: null,
      failedAt: null,
      canceledAt: null,
      createdAt: now,
      updatedAt: now,
    };
    const resource = withdrawalResource(withdrawal);
    await applyDecision(trx, {
      postings: [withdrawalReservePosting(withdrawal)],
      changes: [{ table: 'crypto_withdrawals', op: 'insert', id: withdrawal.id, set: withdrawalColumns(withdrawal), postingIds: { reserve_posting_id: 0 } }],
      events: [withdrawalEvent(withdrawal, null, userId, now)],
      answer: { resource, status: 201 },
    });
    return { view: presentWithdrawal(withdrawal), resource, dispatch: () => this.dispatch(withdrawal) };
  }

  /** POST /crypto/withdrawals/{withdrawalId}/cancel, in the pipeline's transaction: only before broadcast; the amount and the fee return. */
  async cancel(trx: Knex.Transaction, userId: string, withdrawalId: string): Promise<{ view: WithdrawalView; resource: IdempotentResource }> {
    const read = await readLocked<Record<string, unknown> & { tier: string }>(
      trx,
      `SELECT w.*, u.tier FROM crypto_withdrawals w JOIN users u ON u.id = w.user_id WHERE w.id = ? AND w.user_id = ? AND ${CLAIMED} FOR UPDATE OF w`,
      [withdrawalId, userId],
    );
    if (!read) {
      await requireCryptoTier(trx, userId);
      throw new CryptoWithdrawalNotFoundError();
    }
    assertCryptoTier(read.tier);
    const before = toWithdrawal(read);
    if (!isCancelable(before.status)) throw new WithdrawalNotCancelableError(before.status);
    const after = await this.settle(trx, before, 'canceled', userId);
    return { view: presentWithdrawal(after), resource: withdrawalResource(after) };
  }

  async list(userId: string, request: PageRequest): Promise<Page<WithdrawalView>> {
    await requireCryptoTier(this.deps.knex, userId);
    const db = readConnection(this.deps.knex);
    const rows = await WITHDRAWALS.rows<Record<string, unknown> & { id: string }>(db, db('crypto_withdrawals as w').select('w.*').where('w.user_id', userId), { user_id: userId }, request);
    const page = toPage(rows, request.limit);
    return { ...page, data: page.data.map((row) => presentWithdrawal(toWithdrawal(row))) };
  }

  async get(userId: string, withdrawalId: string): Promise<WithdrawalView> {
    await requireCryptoTier(this.deps.knex, userId);
    const row = (await readConnection(this.deps.knex)('crypto_withdrawals').where({ id: withdrawalId, user_id: userId }).first()) as Record<string, unknown> | undefined;
    if (!row) throw new CryptoWithdrawalNotFoundError();
    return presentWithdrawal(toWithdrawal(row));
  }

  /** Test helper: the network rejects the withdrawal (not yet final): `failed`, the amount and the fee back in the wallet. */
  async failInSandbox(withdrawalId: string): Promise<WithdrawalView> {
    const sandbox = this.deps.sandbox;
    const after = await withTransaction(this.deps.knex, async (trx) => {
      const before = await this.lock(trx, withdrawalId);
      if (!before) throw new CryptoWithdrawalNotFoundError();
      if (FINAL_WITHDRAWAL_STATUSES.includes(before.status)) throw new WithdrawalAlreadyFinalError(before.status);
      return this.settle(trx, before, 'failed', null, 'The network rejected the transaction (simulated).');
    });
    sandbox?.forgetWithdrawal(after.network, after.id);
    return presentWithdrawal(after);
  }

  /**
   * Hands the network's sender again every withdrawal not yet broadcast (`created` or `queued`):
   * the sender keeps one copy of each, and asks before it broadcasts. Answers how many.
   */
  async resubmit(): Promise<number> {
    const rows = (await this.deps.knex('crypto_withdrawals').whereIn('status', ['created', 'queued']).orderBy('created_at').limit(500)) as Array<Record<string, unknown>>;
    for (const row of rows) {
      const waiting = toWithdrawal(row);
      if (waiting.status === 'created') await this.dispatch(waiting);
      else this.deps.network.submitWithdrawal(outgoing(waiting));
    }
    return rows.length;
  }

  /** After the request's commit: the withdrawal to the network's sender, `queued`. A sender that cannot take it leaves it `created`. */
  private async dispatch(created: Withdrawal): Promise<WithdrawalView> {
    try {
      this.deps.network.submitWithdrawal(outgoing(created));
      return await withTransaction(this.deps.knex, async (trx) => {
        const before = await this.lock(trx, created.id);
        if (!before || before.status !== 'created') return presentWithdrawal(before ?? created);
        const now = this.deps.clock();
        const after: Withdrawal = { ...before, status: 'queued', updatedAt: now };
        await applyDecision(trx, {
          changes: [{ table: 'crypto_withdrawals', id: after.id, expect: { status: 'created' }, set: progressColumns(after) }],
          answer: { resource: withdrawalResource(after) },
        });
        return presentWithdrawal(after);
      });
    } catch (error) {
      this.deps.logger?.error({ err: error, withdrawalId: created.id }, 'the network sender did not take the withdrawal; it stays created');
      return presentWithdrawal(created);
    }
  }

  /** The sender asks before it broadcasts: yes (and `broadcast`) only for a withdrawal still created or queued. */
  private async broadcast(withdrawalId: string, txHash: string): Promise<boolean> {
    return withTransaction(this.deps.knex, async (trx) => {
      const before = await this.lock(trx, withdrawalId);
      if (!before || !isCancelable(before.status)) return false;
      const now = this.deps.clock();
      const after: Withdrawal = { ...before, status: 'broadcast', txHash, broadcastAt: now, updatedAt: now };
      await applyDecision(trx, {
        changes: [{ table: 'crypto_withdrawals', id: after.id, expect: { status: before.status }, set: progressColumns(after) }],
        events: [withdrawalEvent(after, before.status, null, now)],
        answer: { resource: withdrawalResource(after) },
      });
      return true;
    });
  }

  /** What the network reported of a broadcast withdrawal: moved forward (withdrawalStep), settled when final. */
  private async observed(observation: WithdrawalObservation): Promise<void> {
    await withTransaction(this.deps.knex, async (trx) => {
      const before = await this.lock(trx, observation.withdrawalId);
      if (!before) return;
      const step = withdrawalStep(before, observation, before.confirmationsRequired);
      if (!step) return;
      if (step.status === 'completed' || step.status === 'failed') {
        await this.settle(trx, { ...before, confirmations: step.confirmations }, step.status, null, step.status === 'failed' ? 'The network rejected the transaction.' : null, before.confirmations);
        return;
      }
      const now = this.deps.clock();
      const after: Withdrawal = { ...before, status: step.status, confirmations: step.confirmations, updatedAt: now };
      await applyDecision(trx, {
        changes: [{ table: 'crypto_withdrawals', id: after.id, expect: { status: before.status, confirmations: before.confirmations }, set: progressColumns(after) }],
        answer: { resource: withdrawalResource(after) },
      });
    });
  }

  /** The one settlement of a withdrawal: its posting, its row, its event. */
  private async settle(trx: Knex.Transaction, before: Withdrawal, outcome: 'completed' | 'failed' | 'canceled', actorUserId: string | null, failureReason: string | null = null, confirmationsRead = before.confirmations): Promise<Withdrawal> {
    const now = this.deps.clock();
    const after: Withdrawal = {
      ...before,
      status: outcome,
      failureReason,
      completedAt: outcome === 'completed' ? now : null,
      failedAt: outcome === 'failed' ? now : null,
      canceledAt: outcome === 'canceled' ? now : null,
      updatedAt: now,
    };
    const posting: PlannedPosting = withdrawalSettlementPosting(after, outcome);
    await applyDecision(trx, {
      postings: [posting],
      changes: [
        {
          table: 'crypto_withdrawals',
          id: after.id,
          expect: { status: before.status, confirmations: confirmationsRead },
          set: progressColumns(after),
          postingIds: { settlement_posting_id: 0 },
        },
      ],
      events: [withdrawalEvent(after, before.status, actorUserId, now)],
      answer: { resource: withdrawalResource(after) },
    });
    return after;
  }

  private async lock(trx: Knex.Transaction, withdrawalId: string): Promise<Withdrawal | undefined> {
    const row = await readLocked<Record<string, unknown>>(trx, `SELECT w.* FROM crypto_withdrawals w WHERE w.id = ? AND ${CLAIMED} FOR UPDATE OF w`, [withdrawalId]);
    return row ? toWithdrawal(row) : undefined;
  }
}

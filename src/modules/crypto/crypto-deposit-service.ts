import crypto from 'node:crypto';
import type { Knex } from 'knex';
import type { Clock } from '../../clock';
import { toPage, type Page, type PageRequest } from '../../db/keyset';
import { Keyset } from '../../db/keyset';
import { readConnection } from '../../db/read-routing';
import { isUniqueViolation, withTransaction } from '../../db/transaction';
import { ValidationError } from '../../errors';
import { parseAmount } from '../ledger';
import type { Caller, IdempotentResource } from '../../contract';
import type { HeldPayout, PayoutSubject } from '../held-payouts';
import { applyDecision, applyPayoutDecision, CLAIMED, readLocked, type Decision, type DecidedEvent } from '../writes';
import { assertCryptoTier, requireCryptoTier } from './crypto-access';
import { cryptoCatalog, type AssetCode, type NetworkCode } from './crypto-catalog';
import { creditedHeldDeposit, heldDeposit, isHeldCreditOf } from './crypto-deposit-hold';
import { depositCreditPosting, depositStep } from './crypto-deposit-lifecycle';
import { depositColumns, presentDeposit, toDeposit, type Deposit, type DepositRow, type DepositView } from './crypto-deposit-presenter';
import { CryptoDepositNotFoundError, DepositAddressNotFoundError, HeldDepositNotReturnableError } from './crypto-errors';
import type { CryptoNetworkPort, SandboxCryptoNetwork, TransferObservation } from './crypto-network';

interface AddressRow {
  id: string;
  user_id: string;
  asset: string;
  network: string;
  address: string;
  memo: string | null;
  created_at: Date | string;
}

/** The contract's `CryptoDepositAddress`. */
function presentAddress(row: AddressRow) {
  const asset = row.asset.trim();
  return {
    id: row.id,
    object: 'crypto_deposit_address' as const,
    asset: asset as AssetCode,
    network: row.network as NetworkCode,
    address: row.address,
    memo: row.memo,
    confirmations_required: cryptoCatalog.network(row.network)?.confirmations ?? 1,
    created_at: new Date(row.created_at).toISOString(),
  };
}

export type DepositAddressView = ReturnType<typeof presentAddress>;

const DEPOSITS = new Keyset({ table: 'crypto_deposits', alias: 'd', noun: 'a crypto deposit of yours' });

/**
 * Deposits: one address per user, asset and network (derived by the network port), and the
 * deposits the port observes. Each observation goes through the one write path: the deposit
 * locked by (network, transaction hash, output index), its next state decided (depositStep:
 * forward only), the change, the credit posting when final and the event applied in one
 * statement. The unique (network, tx_hash, output_index) makes a deposit exist once however
 * often and in whatever order it is reported; the credit posting's (kind, reference) makes it
 * credited once. A final deposit whose credit its owner's limits refuse is held in the same
 * statement (crypto-deposit-hold.ts); as the `crypto_deposit` PayoutSubject, the held payouts'
 * job credits it once the limits allow.
 */
export class CryptoDepositService implements PayoutSubject {
  constructor(private readonly deps: { knex: Knex; network: CryptoNetworkPort; sandbox?: SandboxCryptoNetwork; clock: Clock }) {
    deps.network.onObservation((observation) => this.record(observation).then(() => undefined));
  }

  /**
   * POST /crypto/deposit-addresses: the caller's address for the asset on the network, created
   * once. The read locks the caller's row (FOR NO KEY UPDATE), so two first calls at once make
   * one address; it also reads the caller's tier (crypto needs tier_2).
   */
  async depositAddress(trx: Knex.Transaction, userId: string, asset: string, network: string): Promise<{ view: DepositAddressView; resource: IdempotentResource }> {
    if (!cryptoCatalog.carries(asset, network)) throw ValidationError.field('network', `${asset} is not carried on ${network}: see GET /crypto/assets.`);
    const read = await readLocked<{ tier: string }>(trx, `SELECT u.tier FROM users u WHERE u.id = ? AND ${CLAIMED} FOR NO KEY UPDATE OF u`, [userId]);
    assertCryptoTier(read?.tier);
    // Read after the lock, in a statement of its own: its snapshot sees an address a concurrent first call committed meanwhile.
    const existing = await trx<AddressRow>('crypto_deposit_addresses').where({ user_id: userId, asset, network }).first();
    const resourceOf = (row: AddressRow): IdempotentResource => ({ type: 'crypto_deposit_address', id: row.id, status: 'active', location: `/api/crypto/deposit-addresses/${row.id}` });
    if (existing) {
      const row = existing;
      // Already there: nothing to write but the key's completion.
      await applyDecision(trx, { answer: { resource: resourceOf(row) } });
      return { view: presentAddress(row), resource: resourceOf(row) };
    }
    const row: AddressRow = { id: crypto.randomUUID(), user_id: userId, asset, network, address: this.deps.network.depositAddress(userId, asset, network), memo: null, created_at: this.deps.clock() };
    await applyDecision(trx, {
      changes: [{ table: 'crypto_deposit_addresses', op: 'insert', id: row.id, set: { user_id: userId, asset, network, address: row.address, memo: null, created_at: new Date(row.created_at).toISOString() } }],
      answer: { resource: resourceOf(row) },
    });
    return { view: presentAddress(row), resource: resourceOf(row) };
  }

  async list(userId: string, request: PageRequest): Promise<Page<DepositView>> {
    await requireCryptoTier(this.deps.knex, userId);
    const db = readConnection(this.deps.knex);
    const scope = { user_id: userId };
    const rows = await DEPOSITS.rows<DepositRow>(db, db('crypto_deposits as d').select('d.*').where('d.user_id', userId), scope, request);
    const page = toPage(rows.map(toDeposit), request.limit);
    return { ...page, data: page.data.map(presentDeposit) };
  }

  async get(userId: string, depositId: string): Promise<DepositView> {
    await requireCryptoTier(this.deps.knex, userId);
    const row = (await readConnection(this.deps.knex)('crypto_deposits').where({ id: depositId, user_id: userId }).first()) as DepositRow | undefined;
    if (!row) throw new CryptoDepositNotFoundError();
    return presentDeposit(toDeposit(row));
  }

  /**
   * Records what the network reported of a transfer to one of the platform's addresses: the
   * deposit created, moved forward, or left as it is. Answers the deposit (undefined for an
   * address that is not the platform's, or a transfer first seen dropped).
   */
  async record(observation: TransferObservation): Promise<Deposit | undefined> {
    for (let attempt = 0; ; attempt += 1) {
      try {
        return await withTransaction(this.deps.knex, (trx) => this.recordIn(trx, observation));
      } catch (error) {
        // Two first reports at once: the second finds the deposit the first created.
        if (attempt === 0 && isUniqueViolation(error, 'crypto_deposits_transfer_unique')) continue;
        throw error;
      }
    }
  }

  private async recordIn(trx: Knex.Transaction, observation: TransferObservation): Promise<Deposit | undefined> {
    const row = await readLocked<DepositRow>(
      trx,
      `SELECT d.* FROM crypto_deposits d WHERE d.network = ? AND d.tx_hash = ? AND d.output_index = ? AND ${CLAIMED} FOR UPDATE OF d`,
      [observation.network, observation.txHash, observation.outputIndex],
    );
    const current = row ? toDeposit(row) : undefined;
    const now = this.deps.clock();
    let before: Deposit;
    let expectedAsset: string;
    if (current) {
      before = current;
      expectedAsset = (await trx<AddressRow>('crypto_deposit_addresses').where({ id: current.depositAddressId }).first('asset'))?.asset.trim() ?? current.asset;
    } else {
      const address = await trx<AddressRow>('crypto_deposit_addresses').where({ network: observation.network, address: observation.address }).first();
      if (!address) return undefined;
      expectedAsset = address.asset.trim();
      before = newDeposit(observation, address, now);
    }
    const step = depositStep(current, observation, { asset: expectedAsset, confirmationsRequired: before.confirmationsRequired });
    if (!step) return current;
    const after: Deposit = {
      ...before,
      status: step.status,
      confirmations: step.confirmations,
      failureReason: step.failureReason ?? before.failureReason,
      completedAt: step.status === 'completed' ? now : before.completedAt,
      reversedAt: step.status === 'reversed' ? now : before.reversedAt,
      failedAt: step.status === 'failed' ? now : before.failedAt,
      updatedAt: now,
    };
    const posting = step.status === 'completed' ? depositCreditPosting(after) : undefined;
    const change = (deposit: Deposit) => ({
      table: 'crypto_deposits' as const,
      id: deposit.id,
      ...(current ? { expect: { status: current.status, confirmations: current.confirmations } } : { op: 'insert' as const }),
      set: depositColumns(deposit),
    });
    const eventsOf = (deposit: Deposit) => (current?.status === deposit.status ? [] : [depositEvent(deposit, current?.status ?? null, now)]);
    const decision: Decision = {
      postings: posting ? [posting] : [],
      changes: [{ ...change(after), ...(posting ? { postingIds: { credit_posting_id: 0 } } : {}) }],
      events: eventsOf(after),
      answer: depositAnswer(after),
    };
    if (!posting) {
      await applyDecision(trx, decision);
      return after;
    }
    // Its owner's limits refuse the credit: held instead, in the same statement (the held payout's row first: the deposit names it).
    const held = heldDeposit(after, crypto.randomUUID(), now);
    const instead: Decision = { changes: [held.heldPayout, change(held.deposit)], events: eventsOf(held.deposit), answer: depositAnswer(held.deposit) };
    const applied = await applyPayoutDecision(trx, { ...decision, holds: [{ posting: 0, ownerId: after.userId, instead }] });
    return applied.held ? held.deposit : { ...after, creditPostingId: applied.postingIds[0] ?? null };
  }

  /**
   * The held payouts' job: credits a held deposit once its owner's limits allow it (the deposit
   * `completed`, `crypto.deposit.completed`, the held payout `completed`), or notes one more
   * attempt while they still refuse it. Whether it was credited.
   */
  async completeHeldPayout(db: Knex | Knex.Transaction, held: HeldPayout): Promise<boolean> {
    return withTransaction(db, async (trx) => {
      const deposit = await this.lockHeld(trx, held);
      // No longer held (credited by another run of the job meanwhile): not this attempt's to credit.
      if (!isHeldCreditOf(deposit, held)) throw new CryptoDepositNotFoundError();
      const now = this.deps.clock();
      const credit = creditedHeldDeposit(deposit, held, now);
      const answer = depositAnswer(credit.deposit);
      const applied = await applyPayoutDecision(trx, {
        postings: [credit.posting],
        changes: [
          { table: 'crypto_deposits', id: deposit.id, expect: { status: deposit.status }, set: depositColumns(credit.deposit), postingIds: { credit_posting_id: 0 } },
          credit.heldPayout,
        ],
        events: [depositEvent(credit.deposit, deposit.status, now)],
        answer,
        holds: [{ posting: 0, ownerId: deposit.userId, instead: { changes: [credit.retry], answer } }],
      });
      return !applied.held;
    });
  }

  /**
   * POST /admin/held-payouts/{heldPayoutId}/return for a held deposit: refused (409
   * HeldPayoutNotReturnable). Its sender is outside the platform, so there is no payer to
   * return it to: it stays held until its owner's limits allow the credit.
   */
  async returnHeldPayout(trx: Knex.Transaction, _caller: Pick<Caller, 'userId' | 'isAdmin'>, held: HeldPayout, _reason: string, current: () => Promise<HeldPayout>): Promise<void> {
    await this.lockHeld(trx, held);
    // A payout completed meanwhile answers as such (409 HeldPayoutNotHeld).
    await current();
    throw new HeldDepositNotReturnableError();
  }

  /** The deposit whose credit `held` holds (or held), locked; 404 when there is none. */
  private async lockHeld(trx: Knex.Transaction, held: HeldPayout): Promise<Deposit> {
    const row = await readLocked<DepositRow>(trx, `SELECT d.* FROM crypto_deposits d WHERE d.id = ? AND ${CLAIMED} FOR UPDATE OF d`, [held.subjectId]);
    const deposit = row ? toDeposit(row) : undefined;
    if (!deposit || deposit.heldPayoutId !== held.id) throw new CryptoDepositNotFoundError();
    return deposit;
  }

  /** Test helper: a transfer of `amount` to a deposit address, reported at once (detected). */
  async simulateDeposit(network: string, input: { address: string; asset: string; amount: string }): Promise<DepositView> {
    const sandbox = this.sandbox();
    const exponent = cryptoCatalog.asset(input.asset)?.exponent ?? 6;
    const amountMinor = parseAmount(input.amount, exponent);
    const known = await this.deps.knex('crypto_deposit_addresses').where({ network, address: input.address }).first('id');
    if (!known) throw new DepositAddressNotFoundError(network);
    const observation = await sandbox.send(network, { address: input.address, asset: input.asset, amountMinor });
    const row = (await this.deps.knex('crypto_deposits').where({ network, tx_hash: observation.txHash, output_index: observation.outputIndex }).first()) as DepositRow;
    return presentDeposit(toDeposit(row));
  }

  /** Test helper: mines `count` blocks after dropping `reorgDepth` (the deposits are moved on as reported). */
  async mineBlocks(network: string, count: number, reorgDepth = 0) {
    const height = await this.sandbox().mine(network, count, reorgDepth);
    return { object: 'crypto_network' as const, network: network as NetworkCode, height, confirmations_required: cryptoCatalog.network(network)?.confirmations ?? 1 };
  }

  /** The sandbox's clock: one block on every network (the `crypto.sandbox-mine` job). */
  async tick(): Promise<void> {
    await this.deps.sandbox?.tick();
  }

  private sandbox(): SandboxCryptoNetwork {
    if (!this.deps.sandbox) throw new ValidationError('The network simulator runs only with CRYPTO_NETWORK=sandbox.');
    return this.deps.sandbox;
  }
}

/** A deposit first seen: detected, to the address's owner, with the network's confirmations to finality. */
function newDeposit(observation: TransferObservation, address: AddressRow, now: Date): Deposit {
  return {
    id: crypto.randomUUID(),
    userId: address.user_id,
    depositAddressId: address.id,
    asset: observation.asset,
    network: observation.network,
    address: observation.address,
    txHash: observation.txHash,
    outputIndex: observation.outputIndex,
    amountMinor: observation.amountMinor,
    status: 'detected',
    confirmations: 0,
    confirmationsRequired: cryptoCatalog.network(observation.network)?.confirmations ?? 1,
    creditPostingId: null,
    heldPayoutId: null,
    heldAt: null,
    failureReason: null,
    detectedAt: now,
    completedAt: null,
    reversedAt: null,
    failedAt: null,
    createdAt: now,
    updatedAt: now,
  };
}

/** What a deposit's decision answers (the resource an Idempotency-Key would record). */
function depositAnswer(deposit: Deposit): Decision['answer'] {
  return { resource: { type: 'crypto_deposit', id: deposit.id, status: deposit.status, location: `/api/crypto/deposits/${deposit.id}` } };
}

/** The event of a deposit's new status (`crypto.deposit.<status>`), carrying the deposit. */
function depositEvent(after: Deposit, previousStatus: Deposit['status'] | null, now: Date): DecidedEvent {
  return {
    subjectType: 'crypto_deposit',
    subjectId: after.id,
    type: `crypto.deposit.${after.status}`,
    actorUserId: null,
    payload: { confirmations: after.confirmations, confirmations_required: after.confirmationsRequired },
    occurredAt: now,
    object: presentDeposit(after),
    previousStatus,
  };
}

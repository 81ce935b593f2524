import crypto from 'node:crypto';
import { base58 } from '@scure/base';
import { derivedAddress } from './crypto-addresses';
import { cryptoCatalog } from './crypto-catalog';

/** What the network adapter saw of one output of a transaction to one of the platform's addresses. */
export interface TransferObservation {
  network: string;
  txHash: string;
  outputIndex: number;
  address: string;
  asset: string;
  amountMinor: bigint;
  /** Blocks on top of (and including) the transaction's: 0 while it waits in the mempool. */
  confirmations: number;
  /** The transaction left the chain (a reorganisation dropped its block). */
  dropped: boolean;
}

/** Where the adapter reports what it sees: in any order, as often as it likes. */
export type ObservationListener = (observation: TransferObservation) => Promise<void>;

/** A withdrawal handed to the network's sender: to be signed and broadcast. */
export interface OutgoingTransfer {
  withdrawalId: string;
  network: string;
  address: string;
  memo: string | null;
  asset: string;
  amountMinor: bigint;
}

/** What the adapter saw of a withdrawal's transaction once broadcast. */
export interface WithdrawalObservation {
  withdrawalId: string;
  network: string;
  txHash: string;
  confirmations: number;
  /** The network refused or reverted the transaction: nothing was sent. */
  failed: boolean;
}

/**
 * Where the sender reports: `broadcast` asks, before the transaction leaves, whether the
 * withdrawal may still go (it answers false for one canceled meanwhile: nothing is sent);
 * `observed` is told what became of a broadcast transaction.
 */
export interface WithdrawalListener {
  broadcast(withdrawalId: string, txHash: string): Promise<boolean>;
  observed(observation: WithdrawalObservation): Promise<void>;
}

/** The port to the blockchains: deposit addresses, the transfers they receive (reported to the listener), and the withdrawals sent out. */
export interface CryptoNetworkPort {
  /** The user's deposit address for an asset on a network (the same on every call). */
  depositAddress(userId: string, asset: string, network: string): string;
  /** The one listener of what the adapter observes. */
  onObservation(listener: ObservationListener): void;
  /** Queues a withdrawal for broadcast (the sender asks the listener before it sends). */
  submitWithdrawal(transfer: OutgoingTransfer): void;
  /** The one listener of the withdrawals' progress. */
  onWithdrawal(listener: WithdrawalListener): void;
}

interface SimulatedTransfer {
  txHash: string;
  address: string;
  asset: string;
  amountMinor: bigint;
  /** The block that included it; null in the mempool. */
  block: number | null;
  /** Reported as final already: no later block is reported for it. */
  settled: boolean;
}

interface SimulatedChain {
  height: number;
  transfers: SimulatedTransfer[];
  /** Withdrawals submitted, waiting for the next block to be broadcast. */
  queued: OutgoingTransfer[];
  /** Withdrawals broadcast and not yet reported final. */
  outgoing: Array<{ withdrawalId: string; txHash: string; block: number | null }>;
}

/**
 * The in-process simulator of the networks (the sandbox adapter): deterministic deposit
 * addresses, transfers sent into a mempool, blocks mined on demand (test helpers) or on a clock
 * (the `crypto.sandbox-mine` job), reorganisations that drop the transactions of their blocks.
 * After each change it reports every transfer it still follows to the listener, awaiting it.
 * Its chains live in this process's memory: a sandbox runs on one instance.
 */
export class SandboxCryptoNetwork implements CryptoNetworkPort {
  private readonly chains = new Map<string, SimulatedChain>();
  private listener: ObservationListener = () => Promise.resolve();
  private withdrawals: WithdrawalListener = { broadcast: () => Promise.resolve(false), observed: () => Promise.resolve() };

  constructor(private readonly addressSecret: string) {}

  depositAddress(userId: string, asset: string, network: string): string {
    const format = cryptoCatalog.network(network)?.addressFormat;
    if (!format) throw new Error(`unknown network ${network}`);
    return derivedAddress(this.addressSecret, format, userId, asset, network);
  }

  onObservation(listener: ObservationListener): void {
    this.listener = listener;
  }

  onWithdrawal(listener: WithdrawalListener): void {
    this.withdrawals = listener;
  }

  submitWithdrawal(transfer: OutgoingTransfer): void {
    const chain = this.chainOf(transfer.network);
    if (!chain.queued.some((t) => t.withdrawalId === transfer.withdrawalId) && !chain.outgoing.some((t) => t.withdrawalId === transfer.withdrawalId)) chain.queued.push(transfer);
  }

  /** Forgets a withdrawal (queued or broadcast): the simulator's way to make one fail. */
  forgetWithdrawal(network: string, withdrawalId: string): void {
    const chain = this.chainOf(network);
    chain.queued = chain.queued.filter((t) => t.withdrawalId !== withdrawalId);
    chain.outgoing = chain.outgoing.filter((t) => t.withdrawalId !== withdrawalId);
  }

  /** Sends a transfer (into the mempool) and reports it; answers its observation. */
  async send(network: string, transfer: { address: string; asset: string; amountMinor: bigint }): Promise<TransferObservation> {
    const chain = this.chainOf(network);
    const sent: SimulatedTransfer = { txHash: transactionHash(network), ...transfer, block: null, settled: false };
    chain.transfers.push(sent);
    const observation = this.observationOf(network, chain, sent, false);
    await this.listener(observation);
    return observation;
  }

  /**
   * Drops the top `reorgDepth` blocks (their transfers leave the chain; a withdrawal's goes back
   * to the mempool, as a sender broadcasts it again), then mines `count` blocks (the first takes
   * the mempool), then reports every transfer followed, then broadcasts the withdrawals queued
   * (into the mempool: the next block takes them). Answers the height.
   */
  async mine(network: string, count: number, reorgDepth = 0): Promise<number> {
    const chain = this.chainOf(network);
    const observations: TransferObservation[] = [];
    if (reorgDepth > 0) {
      const floor = Math.max(0, chain.height - reorgDepth);
      for (const transfer of chain.transfers.filter((t) => t.block !== null && t.block > floor)) observations.push(this.observationOf(network, chain, transfer, true));
      chain.transfers = chain.transfers.filter((t) => t.block === null || t.block <= floor);
      for (const sent of chain.outgoing) if (sent.block !== null && sent.block > floor) sent.block = null;
      chain.height = floor;
    }
    for (let i = 0; i < count; i += 1) {
      chain.height += 1;
      for (const transfer of chain.transfers) if (transfer.block === null) transfer.block = chain.height;
      for (const sent of chain.outgoing) if (sent.block === null) sent.block = chain.height;
    }
    const required = cryptoCatalog.network(network)?.confirmations ?? 1;
    for (const transfer of chain.transfers.filter((t) => !t.settled)) {
      const observation = this.observationOf(network, chain, transfer, false);
      if (observation.confirmations >= required) transfer.settled = true;
      observations.push(observation);
    }
    for (const observation of observations) await this.listener(observation);
    await this.reportWithdrawals(network, chain, required);
    return chain.height;
  }

  /** Reports the broadcast withdrawals' confirmations (forgetting the final ones), then broadcasts those queued that may still go. */
  private async reportWithdrawals(network: string, chain: SimulatedChain, required: number): Promise<void> {
    for (const sent of [...chain.outgoing]) {
      const confirmations = sent.block === null ? 0 : chain.height - sent.block + 1;
      if (confirmations >= required) chain.outgoing = chain.outgoing.filter((t) => t !== sent);
      await this.withdrawals.observed({ withdrawalId: sent.withdrawalId, network, txHash: sent.txHash, confirmations, failed: false });
    }
    const queued = chain.queued;
    chain.queued = [];
    for (const transfer of queued) {
      const txHash = transactionHash(network);
      if (await this.withdrawals.broadcast(transfer.withdrawalId, txHash)) chain.outgoing.push({ withdrawalId: transfer.withdrawalId, txHash, block: null });
    }
  }

  /** One block on every network: the sandbox's clock. */
  async tick(): Promise<void> {
    for (const network of cryptoCatalog.networks()) await this.mine(network.code, 1);
  }

  heightOf(network: string): number {
    return this.chainOf(network).height;
  }

  private chainOf(network: string): SimulatedChain {
    let chain = this.chains.get(network);
    if (!chain) {
      chain = { height: 0, transfers: [], queued: [], outgoing: [] };
      this.chains.set(network, chain);
    }
    return chain;
  }

  private observationOf(network: string, chain: SimulatedChain, transfer: SimulatedTransfer, dropped: boolean): TransferObservation {
    const confirmations = transfer.block === null ? 0 : chain.height - transfer.block + 1;
    return { network, txHash: transfer.txHash, outputIndex: 0, address: transfer.address, asset: transfer.asset, amountMinor: transfer.amountMinor, confirmations, dropped };
  }
}

/** A transaction hash as the network writes it: 0x-hex (EVM), hex (TRON), a base58 signature (Solana). */
function transactionHash(network: string): string {
  const format = cryptoCatalog.network(network)?.addressFormat;
  if (format === 'solana') return base58.encode(crypto.randomBytes(64));
  const hex = crypto.randomBytes(32).toString('hex');
  return format === 'evm' ? `0x${hex}` : hex;
}

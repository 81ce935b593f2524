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

/** The port to the blockchains: deposit addresses, and the transfers they receive (reported to the listener). */
export interface CryptoNetworkPort {
  /** The user's deposit address for an asset on a network (the same on every call). */
  depositAddress(userId: string, asset: string, network: string): string;
  /** The one listener of what the adapter observes. */
  onObservation(listener: ObservationListener): void;
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

  constructor(private readonly addressSecret: string) {}

  depositAddress(userId: string, asset: string, network: string): string {
    const format = cryptoCatalog.network(network)?.addressFormat;
    if (!format) throw new Error(`unknown network ${network}`);
    return derivedAddress(this.addressSecret, format, userId, asset, network);
  }

  onObservation(listener: ObservationListener): void {
    this.listener = listener;
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
   * Drops the top `reorgDepth` blocks (their transfers leave the chain), then mines `count`
   * blocks (the first takes the mempool), then reports every transfer followed. Answers the height.
   */
  async mine(network: string, count: number, reorgDepth = 0): Promise<number> {
    const chain = this.chainOf(network);
    const observations: TransferObservation[] = [];
    if (reorgDepth > 0) {
      const floor = Math.max(0, chain.height - reorgDepth);
      for (const transfer of chain.transfers.filter((t) => t.block !== null && t.block > floor)) observations.push(this.observationOf(network, chain, transfer, true));
      chain.transfers = chain.transfers.filter((t) => t.block === null || t.block <= floor);
      chain.height = floor;
    }
    for (let i = 0; i < count; i += 1) {
      chain.height += 1;
      for (const transfer of chain.transfers) if (transfer.block === null) transfer.block = chain.height;
    }
    const required = cryptoCatalog.network(network)?.confirmations ?? 1;
    for (const transfer of chain.transfers.filter((t) => !t.settled)) {
      const observation = this.observationOf(network, chain, transfer, false);
      if (observation.confirmations >= required) transfer.settled = true;
      observations.push(observation);
    }
    for (const observation of observations) await this.listener(observation);
    return chain.height;
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
      chain = { height: 0, transfers: [] };
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

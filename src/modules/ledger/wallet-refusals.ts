import { DomainError, UnprocessableError } from '../../errors';

/** Whose wallet a refusal names (`details.party` of the contract's WalletFrozen). */
export type WalletParty = 'sender' | 'recipient' | 'buyer' | 'seller';

const FROZEN_MESSAGE: Record<WalletParty, string> = {
  sender: 'Your wallet in this currency is frozen: it cannot send money.',
  recipient: "The recipient's wallet in this currency is frozen: it cannot receive money.",
  buyer: "The buyer's wallet in this currency is frozen: no money can move through it.",
  seller: "The seller's wallet in this currency is frozen: no money can move through it.",
};

/** 422 WalletFrozen naming the party whose wallet is frozen. */
export function walletFrozen(party: WalletParty): UnprocessableError {
  return new UnprocessableError('WalletFrozen', FROZEN_MESSAGE[party], { party });
}

/**
 * 422 InsufficientFunds: the caller's wallet does not cover `covers` ("this transfer", "this
 * contribution"...); `available` and `required` are amounts in the currency's written form.
 */
export function insufficientFunds(funds: { currency: string; available: string; required: string }, covers: string): UnprocessableError {
  return new UnprocessableError('InsufficientFunds', `Insufficient funds: your ${funds.currency} wallet does not cover ${covers}.`, {
    currency: funds.currency,
    available: funds.available,
    required: funds.required,
  });
}

/** How a use case names the wallets of a posting: the party of each wallet account, and what the payer's wallet must cover. */
export interface WalletPosting {
  /** The party of each wallet account the posting touches, by account id. */
  parties: ReadonlyMap<string, WalletParty>;
  /** The party of each wallet by its owner (a posting that names its wallets by identity). */
  owners?: ReadonlyMap<string, WalletParty>;
  /** The party a frozen account the ledger does not name is taken for. */
  defaultParty: WalletParty;
  /** What the payer's wallet must cover, in a sentence ("this contribution"). */
  covers: string;
}

/**
 * The one mapping from the ledger's refusals (AccountFrozen, InsufficientFunds) to the
 * contract's words: WalletFrozen with the `party` whose wallet is frozen, InsufficientFunds with
 * the currency, available and required amounts. Anything else is returned as it is.
 */
export function walletRefusal(error: unknown, posting: WalletPosting): unknown {
  if (!(error instanceof DomainError)) return error;
  if (error.code === 'AccountFrozen') {
    const accountId = (error.details as { account_id?: string } | undefined)?.account_id;
    const ownerId = (error as { ownerId?: string | null }).ownerId;
    return walletFrozen((accountId && posting.parties.get(accountId)) || (ownerId && posting.owners?.get(ownerId)) || posting.defaultParty);
  }
  if (error.code === 'InsufficientFunds') {
    return insufficientFunds(error.details as { currency: string; available: string; required: string }, posting.covers);
  }
  return error;
}

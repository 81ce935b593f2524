import { ConflictError, DomainError, NotFoundError, UnprocessableError } from '../../errors';

/** 403: crypto is open to verified (tier_2) users only; `details` names the tier needed and the caller's. */
export class VerificationRequiredError extends DomainError {
  constructor(tier: string, requiredTier = 'tier_2') {
    super('VerificationRequired', 'forbidden', `Crypto needs a verified identity (${requiredTier}); this account is ${tier}. Complete an identity verification session for ${requiredTier} first.`, {
      required_tier: requiredTier,
      tier,
    });
  }
}

export class CryptoDepositNotFoundError extends NotFoundError {
  constructor() {
    super('No crypto deposit of yours has this id.', 'CryptoDepositNotFound');
  }
}

/** 404 (test helper): the address is not one of the platform's deposit addresses on the network. */
export class DepositAddressNotFoundError extends NotFoundError {
  constructor(network: string) {
    super(`No deposit address on ${network} has this value: create one with POST /crypto/deposit-addresses first.`, 'DepositAddressNotFound');
  }
}

export class QuoteNotFoundError extends NotFoundError {
  constructor() {
    super('No quote of yours has this id.', 'QuoteNotFound');
  }
}

/** 409: the quote's 30 seconds have passed; ask for a new one. */
export class QuoteExpiredError extends ConflictError {
  constructor(expiresAt: Date) {
    super('QuoteExpired', `The quote expired at ${expiresAt.toISOString()}: request a new quote.`, { expires_at: expiresAt.toISOString() });
  }
}

/** 409: the quote was already executed by a conversion (under another Idempotency-Key). */
export class QuoteAlreadyUsedError extends ConflictError {
  constructor(conversionId: string | null) {
    super('QuoteAlreadyUsed', 'The quote was already used by a conversion: request a new quote.', { conversion_id: conversionId });
  }
}

export class ConversionNotFoundError extends NotFoundError {
  constructor() {
    super('No conversion of yours has this id.', 'ConversionNotFound');
  }
}

/** 422: the address is not a well-formed address of the network; `details.reason` says why. */
export class InvalidAddressError extends UnprocessableError {
  constructor(network: string, reason: string) {
    super('InvalidAddress', `The address is not a valid ${network} address (${reason}): check it with its owner.`, { network, reason });
  }
}

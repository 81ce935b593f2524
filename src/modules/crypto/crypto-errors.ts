import { ConflictError, DomainError, ForbiddenError, NotFoundError, UnprocessableError } from '../../errors';

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
  constructor(message = 'No quote of yours has this id.') {
    super(message, 'QuoteNotFound');
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
  constructor(message = 'No conversion of yours has this id.') {
    super(message, 'ConversionNotFound');
  }
}

/** 403: only a verified organisation holds and converts stablecoins (as only a verified one pays out). */
export class OrganizationNotVerifiedForCryptoError extends ForbiddenError {
  constructor() {
    super('OrganizationNotVerified', 'Only a verified organisation can convert stablecoins; complete its business verification first.');
  }
}

/** 422: the address is not a well-formed address of the network; `details.reason` says why. */
export class InvalidAddressError extends UnprocessableError {
  constructor(network: string, reason: string) {
    super('InvalidAddress', `The address is not a valid ${network} address (${reason}): check it with its owner.`, { network, reason });
  }
}

export class CryptoWithdrawalNotFoundError extends NotFoundError {
  constructor() {
    super('No crypto withdrawal of yours has this id.', 'CryptoWithdrawalNotFound');
  }
}

export class WithdrawalAddressNotFoundError extends NotFoundError {
  constructor() {
    super('No withdrawal address of yours has this id: add it with POST /crypto/withdrawal-addresses first.', 'WithdrawalAddressNotFound');
  }
}

/** 409: the address was added less than its activation delay ago; `details.active_at` says when it becomes usable. */
export class WithdrawalAddressNotActiveError extends ConflictError {
  constructor(activeAt: Date) {
    super('WithdrawalAddressNotActive', `The withdrawal address becomes usable at ${activeAt.toISOString()}: try again then.`, { active_at: activeAt.toISOString() });
  }
}

/** 422: at or above the Travel Rule threshold, the request names the beneficiary (`beneficiary: {name, country}`). */
export class TravelRuleInformationRequiredError extends UnprocessableError {
  constructor(thresholdUsd: string) {
    super('TravelRuleInformationRequired', `A withdrawal worth ${thresholdUsd} USD or more names its beneficiary: send beneficiary {name, country}.`, { threshold_usd: thresholdUsd, required: ['beneficiary.name', 'beneficiary.country'] });
  }
}

/** 409: the withdrawal was already sent to the network (or is final): it can no longer be canceled. */
export class WithdrawalNotCancelableError extends ConflictError {
  constructor(status: string) {
    super('WithdrawalNotCancelable', `A ${status} withdrawal cannot be canceled; only one not yet broadcast (created or queued) can.`, { status, allowed_from: ['created', 'queued'] });
  }
}

/** 409 (test helper): the withdrawal is final already; it cannot be made to fail. */
export class WithdrawalAlreadyFinalError extends ConflictError {
  constructor(status: string) {
    super('WithdrawalAlreadyFinal', `The withdrawal is ${status} already: only one not yet final can fail.`, { status });
  }
}

/** 409: an administrator's return of a held crypto deposit: its sender is outside the platform (on-chain), so there is no payer to return it to. */
export class HeldDepositNotReturnableError extends ConflictError {
  constructor() {
    super(
      'HeldPayoutNotReturnable',
      'A held crypto deposit has no payer on the platform to return it to (its sender is outside, on-chain): it is credited to its owner once their tier or balance allows.',
    );
  }
}

/** 409: the organisation's account the quote names is not active (inactive, pending, closed): it neither pays nor receives. */
export class AccountNotActiveError extends ConflictError {
  constructor(accountId: string, status: string) {
    super('AccountNotActive', `The account ${accountId} is ${status}: it neither pays nor receives.`, { account_id: accountId, status });
  }
}

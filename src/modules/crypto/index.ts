/** Public face of the crypto module: stablecoin assets and networks, deposits, withdrawals, the network port and its simulator, quotes and conversions of users and of organisations. */
import type { Knex } from 'knex';
import type { Clock } from '../../clock';
import type { CryptoConfig } from '../../config-crypto';
import type { Notifier } from '../notifications';
import { CryptoConversionService } from './crypto-conversion-service';
import { CryptoDepositService } from './crypto-deposit-service';
import { CryptoOrganizationService } from './crypto-organization-service';
import { SandboxCryptoNetwork } from './crypto-network';
import { SandboxRateSource } from './crypto-rates';
import { CryptoWithdrawalService } from './crypto-withdrawal-service';
import { CryptoWithdrawalAddressService } from './crypto-withdrawal-addresses';

export { cryptoCatalog, type CryptoAsset, type CryptoNetwork } from './crypto-catalog';
export { checkAddress, derivedAddress, eip55, isValidAddress, type AddressProblem } from './crypto-addresses';
export { CryptoWithdrawalAddressService } from './crypto-withdrawal-addresses';
export { CryptoWithdrawalService } from './crypto-withdrawal-service';
export { travelRuleApplies, withdrawalStep, withdrawalReservePosting, withdrawalSettlementPosting } from './crypto-withdrawal-plan';
export { SandboxCryptoNetwork, type CryptoNetworkPort, type TransferObservation } from './crypto-network';
export { depositStep } from './crypto-deposit-lifecycle';
export { creditedHeldDeposit, heldDeposit, isHeldCreditOf } from './crypto-deposit-hold';
export { CryptoDepositService } from './crypto-deposit-service';
export { CryptoConversionService } from './crypto-conversion-service';
export { CryptoOrganizationService } from './crypto-organization-service';
export { conversionPosting, organizationCryptoIdentity, formatRate, quoteAmounts, rateBetween } from './crypto-quote';
export { SandboxRateSource, type RateSource } from './crypto-rates';
export { cryptoHandlers, cryptoWritePath } from './crypto-handlers';
export { cryptoJobs } from './crypto-jobs';

/**
 * The crypto services over the adapters CRYPTO_NETWORK names (the sandbox only, so far): the
 * network simulator reports to the deposits and the withdrawals, the sandbox rates quote the
 * conversions and value the withdrawals for the Travel Rule.
 */
export function cryptoServices(deps: { knex: Knex; config: CryptoConfig; clock: Clock; notifier: Notifier }) {
  const network = new SandboxCryptoNetwork(deps.config.addressSecret);
  const rates = new SandboxRateSource(deps.config.rates);
  return {
    cryptoDeposits: new CryptoDepositService({ knex: deps.knex, network, sandbox: network, clock: deps.clock }),
    cryptoWithdrawalAddresses: new CryptoWithdrawalAddressService({ knex: deps.knex, clock: deps.clock, notifier: deps.notifier, activationSeconds: deps.config.addressActivationSeconds }),
    cryptoConversions: new CryptoConversionService({ knex: deps.knex, rates, clock: deps.clock, feeBps: deps.config.conversionFeeBps }),
    cryptoOrganizations: new CryptoOrganizationService({ knex: deps.knex, rates, clock: deps.clock, feeBps: deps.config.conversionFeeBps }),
    cryptoWithdrawals: new CryptoWithdrawalService({ knex: deps.knex, clock: deps.clock, rates, network, sandbox: network }),
  };
}

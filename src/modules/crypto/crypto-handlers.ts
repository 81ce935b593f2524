import { pageRequest, type Handlers } from '../../contract';
import type { ConvertibleCurrency } from './crypto-rates';
import { cryptoCatalog } from './crypto-catalog';
import type { CryptoConversionService } from './crypto-conversion-service';
import type { CryptoDepositService } from './crypto-deposit-service';
import type { CryptoOrganizationService } from './crypto-organization-service';
import type { CryptoWithdrawalAddressService } from './crypto-withdrawal-addresses';
import type { CryptoWithdrawalService } from './crypto-withdrawal-service';

/** The crypto operations on the one write path: each claims its Idempotency-Key in its locked read (src/modules/writes). */
export const cryptoWritePath = ['createCryptoDepositAddress', 'createCryptoQuote', 'createCryptoConversion', 'createCryptoWithdrawalAddress', 'createCryptoWithdrawal', 'cancelCryptoWithdrawal', 'createOrganizationCryptoQuote', 'createOrganizationCryptoConversion'] as const satisfies readonly CryptoOperation[];

type CryptoOperation =
  | 'listCryptoAssets'
  | 'createCryptoDepositAddress'
  | 'listCryptoDeposits'
  | 'getCryptoDeposit'
  | 'simulateCryptoDeposit'
  | 'mineCryptoBlocks'
  | 'createCryptoQuote'
  | 'createCryptoConversion'
  | 'getCryptoConversion'
  | 'createCryptoWithdrawalAddress'
  | 'listCryptoWithdrawalAddresses'
  | 'createCryptoWithdrawal'
  | 'listCryptoWithdrawals'
  | 'getCryptoWithdrawal'
  | 'cancelCryptoWithdrawal'
  | 'failCryptoWithdrawal'
  | 'listOrganizationCryptoBalances'
  | 'createOrganizationCryptoQuote'
  | 'createOrganizationCryptoConversion'
  | 'listOrganizationCryptoConversions'
  | 'getOrganizationCryptoConversion';

/** The contract's `CryptoAsset` list, from the shipped catalogue. */
function assetList() {
  const data = cryptoCatalog.assets().map((asset) => ({
    code: asset.code,
    name: asset.name,
    exponent: asset.exponent,
    networks: asset.networks.flatMap((code) => {
      const network = cryptoCatalog.network(code);
      return network ? [{ code: network.code, name: network.name, address_format: network.addressFormat, confirmations: network.confirmations, memo_required: network.memoRequired, withdrawal_fee: network.withdrawalFee }] : [];
    }),
  }));
  return { object: 'list' as const, data, has_more: false, next_cursor: null };
}

/** The crypto operations of the contract, keyed by operationId (the validator checked every input). */
export function cryptoHandlers(
  deposits: CryptoDepositService,
  conversions: CryptoConversionService,
  addresses: CryptoWithdrawalAddressService,
  withdrawals: CryptoWithdrawalService,
  organizations: CryptoOrganizationService,
): Handlers<CryptoOperation> {
  return {
    listCryptoAssets: () => Promise.resolve({ data: assetList() }),
    async createCryptoDepositAddress({ trx, caller, body }) {
      const { view, resource } = await deposits.depositAddress(trx, caller.userId, body.asset, body.network);
      return { status: 201, data: view, resource };
    },
    listCryptoDeposits: async ({ caller, query }) => ({ data: await deposits.list(caller.userId, pageRequest(query)) }),
    getCryptoDeposit: async ({ caller, path }) => ({ data: await deposits.get(caller.userId, path.depositId) }),
    simulateCryptoDeposit: async ({ path, body }) => ({ status: 201, data: await deposits.simulateDeposit(path.network, body) }),
    async createCryptoQuote({ trx, caller, body }) {
      const { view, resource } = await conversions.quote(trx, caller.userId, { fromCurrency: body.from_currency, toCurrency: body.to_currency, fromAmount: body.from_amount, toAmount: body.to_amount });
      return { status: 201, data: view, resource };
    },
    async createCryptoConversion({ trx, caller, body }) {
      const { view, resource } = await conversions.convert(trx, caller.userId, body.quote_id);
      return { status: 201, data: view, resource };
    },
    getCryptoConversion: async ({ caller, path }) => ({ data: await conversions.getConversion(caller.userId, path.conversionId) }),
    async createCryptoWithdrawalAddress({ trx, caller, body }) {
      const { view, resource } = await addresses.create(trx, caller.userId, body);
      return { status: 201, data: view, resource };
    },
    listCryptoWithdrawalAddresses: async ({ caller, query }) => ({ data: await addresses.list(caller.userId, pageRequest(query)) }),
    async createCryptoWithdrawal({ trx, caller, body }) {
      const created = await withdrawals.create(trx, caller.userId, body);
      // Handed to the network's sender once the withdrawal (and its reserve) has committed.
      const afterCommit = async () => ({ status: 201 as const, data: await created.dispatch() });
      return { status: 201, data: created.view, resource: created.resource, afterCommit };
    },
    listCryptoWithdrawals: async ({ caller, query }) => ({ data: await withdrawals.list(caller.userId, pageRequest(query)) }),
    getCryptoWithdrawal: async ({ caller, path }) => ({ data: await withdrawals.get(caller.userId, path.withdrawalId) }),
    async cancelCryptoWithdrawal({ trx, caller, path }) {
      const { view, resource } = await withdrawals.cancel(trx, caller.userId, path.withdrawalId);
      return { data: view, resource };
    },
    failCryptoWithdrawal: async ({ path }) => ({ data: await withdrawals.failInSandbox(path.withdrawalId) }),
    listOrganizationCryptoBalances: async ({ organization }) => ({ data: await organizations.balances(organization.id) }),
    async createOrganizationCryptoQuote({ trx, organization, body }) {
      const { view, resource } = await organizations.quote(trx, organization.id, {
        fromCurrency: body.from_currency as ConvertibleCurrency,
        toCurrency: body.to_currency as ConvertibleCurrency,
        fromAmount: body.from_amount,
        toAmount: body.to_amount,
        accountId: body.account_id,
      });
      return { status: 201, data: view, resource };
    },
    async createOrganizationCryptoConversion({ trx, organization, caller, body }) {
      const { view, resource } = await organizations.convert(trx, organization.id, body.quote_id, caller.apiKey ? null : caller.userId);
      return { status: 201, data: view, resource };
    },
    listOrganizationCryptoConversions: async ({ organization, query }) => ({ data: await organizations.list(organization.id, pageRequest(query)) }),
    getOrganizationCryptoConversion: async ({ organization, path }) => ({ data: await organizations.getConversion(organization.id, path.conversionId) }),
    mineCryptoBlocks: async ({ path, body }) => ({ data: await deposits.mineBlocks(path.network, body.count, body.reorg_depth ?? 0) }),
  };
}

import catalog from './crypto-assets.json';

/** The assets and networks the contract names (crypto-assets.json ships the same, with their data). */
export type AssetCode = 'USDC' | 'USDT';
export type NetworkCode = 'ethereum' | 'tron' | 'solana' | 'base';

/** How a network writes its addresses: EIP-55 hex (`evm`), base58check with a 0x41 prefix (`tron`), a base58 public key (`solana`). */
export type AddressFormat = 'evm' | 'tron' | 'solana';

export interface CryptoNetwork {
  code: NetworkCode;
  name: string;
  addressFormat: AddressFormat;
  /** Confirmations after which a deposit is final (credited). */
  confirmations: number;
  memoRequired: boolean;
  /** The network fee of a withdrawal, in units of the asset withdrawn (a decimal string): what the platform pays the network to send it. */
  withdrawalFee: string;
}

export interface CryptoAsset {
  /** The asset's code, also its ledger currency (`currencies.code`). */
  code: AssetCode;
  name: string;
  /** Minor-unit exponent: 6 for USDC and USDT (1 USDC = 1,000,000 minor units). */
  exponent: number;
  networks: readonly NetworkCode[];
}

const NETWORKS: ReadonlyMap<string, CryptoNetwork> = new Map(
  catalog.networks.map((network) => [
    network.code,
    { code: network.code as NetworkCode, name: network.name, addressFormat: network.address_format as AddressFormat, confirmations: network.confirmations, memoRequired: network.memo_required, withdrawalFee: network.withdrawal_fee },
  ]),
);

const ASSETS: ReadonlyMap<string, CryptoAsset> = new Map(catalog.assets.map((asset) => [asset.code, { code: asset.code as AssetCode, name: asset.name, exponent: asset.exponent, networks: asset.networks as NetworkCode[] }]));

/** The assets and networks the platform supports, as shipped in crypto-assets.json. */
export const cryptoCatalog = {
  assets: (): CryptoAsset[] => [...ASSETS.values()],
  networks: (): CryptoNetwork[] => [...NETWORKS.values()],
  asset: (code: string): CryptoAsset | undefined => ASSETS.get(code),
  network: (code: string): CryptoNetwork | undefined => NETWORKS.get(code),
  /** Whether `asset` is carried on `network`. */
  carries: (asset: string, network: string): boolean => ASSETS.get(asset)?.networks.includes(network as NetworkCode) === true,
  isAsset: (code: string): boolean => ASSETS.has(code),
};

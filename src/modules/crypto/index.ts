/** Public face of the crypto module: stablecoin assets and networks, deposits, the network port and its simulator, quotes and conversions. */
export { cryptoCatalog, type CryptoAsset, type CryptoNetwork } from './crypto-catalog';
export { SandboxCryptoNetwork, type CryptoNetworkPort, type TransferObservation } from './crypto-network';
export { CryptoDepositService } from './crypto-deposit-service';
export { CryptoConversionService } from './crypto-conversion-service';
export { SandboxRateSource, type RateSource } from './crypto-rates';
export { cryptoHandlers, cryptoWritePath } from './crypto-handlers';
export { cryptoJobs } from './crypto-jobs';

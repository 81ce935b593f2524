/** Public face of the network-status module: the opening status shared with the network. */
export { MAX_VERSION, NetworkStatusService, isStoreTimeout } from './network-status-service';
export { networkStatusHandlers } from './network-status-handlers';

/** Public face of the transfers module: P2P, bank and mobile-money transfers. */
export { TransferService, transferStatusOf, type CreateTransferInput, type TransferPage, type TransferView } from './transfers-service';
export { transfersHandlers } from './transfers-handlers';
export { SandboxRail, SANDBOX_MAGIC, sandboxOutcome, type PayoutRail, type RailAdapter } from './rails';
export { parseIdentifier } from './recipient';
export { transferJobs } from './transfer-jobs';
export { decideTransfer, recipientLookup, transferPosting, type Parties, type TransferRequest } from './transfer-decision';
export { TransferWindow, type TransferOutcome, type TransferSubmission } from './transfer-window';

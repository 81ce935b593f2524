/** Public face of the escrows module: import from here, not from the files inside. */
export { EscrowService, escrowStatusOf, type CreateEscrowInput, type EscrowCommand, type EscrowListOptions, type EscrowPage } from './escrow-service';
export { escrowHandlers, escrowWritePath } from './escrow-handlers';
export type { EscrowView } from './escrow-presenter';
export { ESCROW_ACTIONS, ESCROW_STATUSES, HELD_STATUSES, allowedActions, authorize, isDueForRelease, type EscrowAction, type EscrowCapacity, type EscrowStatus } from './escrow-lifecycle';
export { feeFor, fundingAmount, refundSettlement, releaseSettlement, splitSettlement, type EscrowFee, type FeePayer } from './escrow-fee';
export { escrowJobs } from './escrow-jobs';

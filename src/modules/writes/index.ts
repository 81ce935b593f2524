/** Public face of the one write path: read locked (with the key's claim), decide, apply in one statement. */
export { accountsOf, applyDecision, appliedDecision, applyPayoutDecision, CLAIMED, decisionData, isLedgerRefusal, readLocked, writeApplyAnswer, type AppliedDecision, type DecidedEvent, type Decision, type PayoutHold, type PlannedAccount, type PlannedEntry, type PlannedPosting, type RowChange, type WritableTable } from './write-path';
export { applyAlone, applyWindow, type WindowItem, type WindowOutcome } from './write-batch';
export { DecisionWindow, type CompletedResource, type WindowAnswer, type WindowDecided, type WindowDecider, type WindowSubmission } from './decision-window';

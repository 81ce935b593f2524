/** Public face of the tontines module: rotating savings groups on the ledger. */
export { TontineService, contributionStatusOf, type CreateTontineInput, type TontineServiceDeps } from './tontine-service';
export { CONTRIBUTION_RESOURCE, type Contributed } from './tontine-window';
export { tontineHandlers, tontineWritePath, type TontineHandlers } from './tontine-handlers';
export { completesCycle, contributionPosting, payoutOf, payoutPosting, postingPlan, potOf, type Payout, type TontineInLedger } from './tontine-postings';
export { cycleDrawKey, drawBeneficiary, drawKey, drawOrder, seedCommitment } from './tontine-draw';
export { allowedActions, assertAllowed, cycleDueAt, statusAfter, type TontineAction, type TontineSituation, type TontineStatus } from './tontine-lifecycle';
export type { TontineView, TontinePage } from './tontine-presenter';
export { tontineSnapshot } from './tontine-snapshot';
export { tontineJobs } from './tontine-jobs';

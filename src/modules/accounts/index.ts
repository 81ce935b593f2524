/** Public face of the accounts module: import from here. */
export { AccountService, MAX_STATEMENT_PAGE, DEFAULT_STATEMENT_PAGE } from './account-service';
export type { StatementPage, StatementPageQuery, StatementRange, StatementSink, StatementSummary } from './account-service';
export { resolveInterval, MAX_STATEMENT_DAYS, DEFAULT_STATEMENT_DAYS } from './statement-interval';
export type * from './account-types';
export { accountHandlers } from './account-handlers';
export { encodeStatementCursor } from './statement-cursor';
export { csvCell, csvLine, maskAccountNumber, maskIban, neutraliseFormula, statementFilename } from './account-presenter';
export { describeCounterparty, describePosting } from './statement-lines';

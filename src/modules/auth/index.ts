/** Public face of the auth module: identities, sessions, tokens and what an access token is worth (the bearer middleware is src/http/authenticate.ts). */
export { AuthService, type OrganizationsOfUser, type UserOrganization } from './auth-service';
export { authHandlers } from './auth-handlers';
export { AccessCheck, type AccessDecision, type AccessTokenPayload } from './access-check';
export { loginIdentifierKey, maskPartyIdentifier, parseLoginIdentifier, parsePartyIdentifier, readPartyIdentifier, type IdentifierField, type LoginIdentifier, type PartyIdentifier } from './identifier';
export { ARGON2_OPTIONS, PasswordHasher } from './password-hasher';
export { SessionService, type IssuedTokens, type SessionView } from './session-service';
export type { SessionClient } from './session-repository';
export { ACCESS_TOKEN_ALGORITHM, ACCESS_TOKEN_CLOCK_TOLERANCE_SECONDS, TokenService } from './token-service';
export { UserRepository, type UserContact, type UserStatus } from './user-repository';
export { authJobs } from './auth-jobs';
export { displayNameContext, openDisplayName, sealDisplayName } from './display-name';

/** Public face of the auth module: identities, sessions, tokens and the bearer-token check. */
export { AuthService } from './auth-service';
export { authHandlers } from './auth-handlers';
export { authenticate, bearerAuthSecurityHandler } from './authenticate';
export { loginIdentifierKey, parseLoginIdentifier, type LoginIdentifier } from './identifier';
export { ARGON2_OPTIONS, PasswordHasher } from './password-hasher';
export { SessionService } from './session-service';
export { TokenService } from './token-service';
export { UserRepository, type UserStatus } from './user-repository';

/** Public face of the api-keys module: keys of an organisation's servers, their format, hash and scopes. */
export { apiKeyHandlers } from './api-key-handlers';
export { ApiKeyNotActiveError, ApiKeyNotAllowedError, ApiKeyNotFoundError, InsufficientScopeError, TooManyApiKeysError } from './api-key-errors';
export {
  API_KEY_PREFIXES,
  checksumOf,
  crc32,
  displayPrefix,
  formatApiKey,
  looksLikeApiKey,
  parseApiKey,
  randomBase62,
  redactApiKeys,
  toBase62,
  type ApiKeyEnvironment,
  type ParsedApiKey,
} from './api-key-format';
export { apiKeySecretMatches, hashApiKeySecret } from './api-key-secret';
export { acceptedScopes, API_KEY_RESOURCES, API_KEY_SCOPES, normalizeScopes, scopeGrants } from './api-key-scopes';
export { ApiKeyService, MAX_ACTIVE_API_KEYS, LAST_USED_RESOLUTION_MS, type ApiKeyDecision, type ApiKeyServiceOptions, type NewApiKey } from './api-key-service';

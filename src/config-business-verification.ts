import { ConfigError, type Env, oneOf } from './config-values';

/** BUSINESS_VERIFICATION_PROVIDER: who decides an organisation's business verification (KYB). */
export interface BusinessVerificationConfig {
  /** `sandbox`: decides by the registration number's test suffixes (`-0000` verified, `-9999` rejected); no default in production. */
  provider: 'sandbox';
}

export const BUSINESS_VERIFICATION_PROVIDERS = ['sandbox'] as const;

/**
 * Production never falls back to the sandbox provider silently: it verifies any organisation
 * whose registration number ends in `-0000`, so production uses it only when told
 * BUSINESS_VERIFICATION_PROVIDER=sandbox (a staging instance, on purpose).
 */
export function readBusinessVerificationConfig(env: Env, nodeEnv: string): BusinessVerificationConfig {
  if (nodeEnv === 'production' && !env.BUSINESS_VERIFICATION_PROVIDER) {
    throw new ConfigError(
      `BUSINESS_VERIFICATION_PROVIDER must be set in production (one of ${BUSINESS_VERIFICATION_PROVIDERS.join(', ')}); the sandbox provider verifies any organisation whose registration number ends in -0000, so production uses it only when told BUSINESS_VERIFICATION_PROVIDER=sandbox`,
    );
  }
  return { provider: oneOf(env, 'BUSINESS_VERIFICATION_PROVIDER', 'sandbox', BUSINESS_VERIFICATION_PROVIDERS) };
}

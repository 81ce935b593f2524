/**
 * An environment a production start accepts: a secret of its own for each secret, a database,
 * one instance (no Redis), the sandbox rails and every provider named. A test of one setting
 * takes this and leaves out (`without`) or overrides the setting it is about, so every other
 * setting is known to be valid and the refusal it expects can only come from its own.
 */
export const PRODUCTION_ENV = {
  NODE_ENV: 'production',
  JWT_SECRET: 'x'.repeat(40),
  PAY_SECRET: 'y'.repeat(40),
  API_KEY_PEPPER: 'z'.repeat(40),
  PII_ENCRYPTION_KEY: `prod:${'ab'.repeat(32)}`,
  MOBILE_MONEY_CALLBACK_SECRET: `whsec_${'ab'.repeat(24)}`,
  CRYPTO_NETWORK: 'sandbox',
  CRYPTO_ADDRESS_SECRET: 'a'.repeat(40),
  DATABASE_URL: 'postgres://db.example/app',
  SINGLE_INSTANCE: 'true',
  NOTIFIER: 'sandbox',
  IDENTITY_PROVIDER: 'sandbox',
  BUSINESS_VERIFICATION_PROVIDER: 'sandbox',
} as const satisfies Record<string, string>;

export type ProductionSetting = keyof typeof PRODUCTION_ENV;

/** PRODUCTION_ENV without the settings named. */
export function productionEnv(...without: ProductionSetting[]): Record<string, string> {
  return Object.fromEntries(Object.entries(PRODUCTION_ENV).filter(([name]) => !without.includes(name as ProductionSetting)));
}

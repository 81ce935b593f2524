/** Public face of the onboarding module: sign-up with a one-time code, password reset and change, the user's sessions. */
export { onboardingHandlers } from './onboarding-handlers';
export { onboardingJobs } from './onboarding-jobs';
export { PasswordService, type PasswordChanged, type ResetRequested } from './password-service';
export { SignupService, signupNameContext, type OnboardingDeps, type SignupStarted } from './signup-service';
export { checkCode, CodeHasher, CODE_TTL_MS, MAX_CODE_ATTEMPTS, newCode, type CodeCheck } from './one-time-code';
export { assertStrongPassword, MIN_PASSWORD_LENGTH } from './password-policy';
export { InvalidCurrentPasswordError, InvalidVerificationCodeError, VerificationExpiredError, WeakPasswordError, type WeakPasswordReason } from './onboarding-errors';

import type { Handlers } from '../../contract';
import { NotFoundError } from '../../errors';
import type { SessionService } from '../auth';
import type { PasswordService } from './password-service';
import type { SignupService } from './signup-service';

const NO_STORE = { 'Cache-Control': 'no-store' };

type OnboardingOperation = 'signUp' | 'verifySignUp' | 'requestPasswordReset' | 'confirmPasswordReset' | 'changeMyPassword' | 'listMySessions' | 'revokeMySession';

/** Sign-up, password reset and change, and the user's sessions. */
export function onboardingHandlers(signup: SignupService, passwords: PasswordService, sessions: SessionService): Handlers<OnboardingOperation> {
  return {
    signUp: async ({ body }) => ({ status: 202, data: await signup.start(body) }),
    verifySignUp: async ({ body, clientIp, userAgent }) => ({
      status: 201,
      data: await signup.verify(body.verification_id, body.code, { ip: clientIp, userAgent }),
      headers: NO_STORE,
    }),
    requestPasswordReset: async ({ body }) => ({ status: 202, data: await passwords.request(body.identifier) }),
    confirmPasswordReset: async ({ body }) => ({
      data: await passwords.confirm(body.identifier, body.code, body.new_password),
      message: 'Password changed; every session has ended. Log in again.',
    }),
    changeMyPassword: async ({ trx, caller, body }) => ({
      data: await passwords.change(trx, caller.userId, caller.sessionId, body.current_password, body.new_password),
      message: 'Password changed; your other sessions have ended.',
      // The user has no URL of its own but /me.
      resource: { type: 'user', id: caller.userId, status: 'password_changed', location: '/api/me' },
    }),
    async listMySessions({ caller, query }) {
      const limit = query.limit ?? 50;
      const rows = await sessions.listLive(caller.userId, caller.sessionId, limit + 1);
      return { data: { object: 'list' as const, data: rows.slice(0, limit), has_more: rows.length > limit, next_cursor: null } };
    },
    async revokeMySession({ caller, path }) {
      if (!(await sessions.revokeOwned(caller.userId, path.sessionId))) throw new NotFoundError('No live session of yours has this id.', 'SessionNotFound');
      return { data: { session_id: path.sessionId, revoked: true as const }, message: 'Session ended.' };
    },
  };
}

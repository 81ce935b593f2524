import type { Handlers } from '../../contract';
import type { AuthService } from './auth-service';
import type { SessionService } from './session-service';

const NO_STORE = { 'Cache-Control': 'no-store' };

/** POST /auth/login, /auth/refresh, /auth/logout and GET /me. */
export function authHandlers(auth: AuthService, sessions: SessionService): Handlers<'login' | 'refreshSession' | 'logout' | 'getMe'> {
  return {
    login: async ({ body, clientIp, userAgent }) => ({ data: await auth.logIn(body.identifier, body.password, clientIp, userAgent), headers: NO_STORE }),
    refreshSession: async ({ body, clientIp, userAgent }) => ({ data: await sessions.refresh(body.refresh_token, { ip: clientIp, userAgent }), headers: NO_STORE }),
    // A session has no URL of its own: a replay names it without a Location.
    logout: async ({ trx, caller }) => ({
      data: await sessions.logout(caller.sessionId, trx),
      message: 'Logged out.',
      resource: { type: 'session', id: caller.sessionId, status: 'revoked', location: '' },
    }),
    getMe: async ({ caller }) => ({ data: await auth.me(caller.userId) }),
  };
}

import type { Handlers } from '../../contract';
import type { AuthService } from './auth-service';
import type { SessionService } from './session-service';

const NO_STORE = { 'Cache-Control': 'no-store' };

/** A user's tier and where their identity verification stands (the identity module answers; src/handlers.ts wires it). */
export type IdentityStandingOf = (userId: string) => Promise<{ tier: 'tier_0' | 'tier_1' | 'tier_2'; verificationStatus: 'unverified' | 'requires_input' | 'processing' | 'needs_review' | 'verified' | 'rejected' | 'canceled' }>;

/** POST /auth/login, /auth/refresh, /auth/logout and GET /me. */
export function authHandlers(auth: AuthService, sessions: SessionService, standingOf: IdentityStandingOf): Handlers<'login' | 'refreshSession' | 'logout' | 'getMe'> {
  return {
    login: async ({ body, clientIp, userAgent }) => ({ data: await auth.logIn(body.identifier, body.password, clientIp, userAgent), headers: NO_STORE }),
    refreshSession: async ({ body, clientIp, userAgent }) => ({ data: await sessions.refresh(body.refresh_token, { ip: clientIp, userAgent }), headers: NO_STORE }),
    // A session has no URL of its own: a replay names it without a Location.
    logout: async ({ trx, caller }) => ({
      data: await sessions.logout(trx, caller.sessionId),
      message: 'Logged out.',
      resource: { type: 'session', id: caller.sessionId, status: 'revoked', location: '' },
    }),
    getMe: async ({ caller }) => {
      const [me, standing] = await Promise.all([auth.me(caller.userId), standingOf(caller.userId)]);
      // The latest session that was not canceled says where verification stands (a canceled one is never latest).
      const verificationStatus = standing.verificationStatus === 'canceled' ? 'unverified' : standing.verificationStatus;
      return { data: { ...me, tier: standing.tier, verification_status: verificationStatus } };
    },
  };
}

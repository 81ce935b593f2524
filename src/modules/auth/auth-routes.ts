import { Router } from 'express';
import type { operations } from '../../../generated/openapi';
import type { Config } from '../../config';
import { UnauthorizedError } from '../../errors';
import { sendData } from '../../http/envelope';
import { loginRateLimiter, type RateLimitBackend } from '../../http/rate-limit';
import type { AuthService } from './auth-service';
import type { SessionService } from './session-service';

type LoginBody = operations['login']['requestBody']['content']['application/json'];
type LoginData = operations['login']['responses']['200']['content']['application/json']['data'];
type RefreshBody = operations['refreshSession']['requestBody']['content']['application/json'];
type RefreshData = operations['refreshSession']['responses']['200']['content']['application/json']['data'];
type LogoutData = operations['logout']['responses']['200']['content']['application/json']['data'];
type MeData = operations['getMe']['responses']['200']['content']['application/json']['data'];

export interface AuthRouteDeps {
  auth: AuthService;
  sessions: SessionService;
  rateLimitBackend: RateLimitBackend;
  rateLimit: Config['rateLimit'];
}

/** POST /auth/login, /auth/refresh, /auth/logout and GET /me. */
export function authRoutes(deps: AuthRouteDeps): Router {
  const router = Router();

  router.post('/auth/login', loginRateLimiter(deps.rateLimitBackend, deps.rateLimit), async (req, res) => {
    const body = req.body as LoginBody;
    const data: LoginData = await deps.auth.logIn(body.identifier, body.password);
    res.setHeader('Cache-Control', 'no-store');
    sendData(res, 200, data);
  });

  router.post('/auth/refresh', async (req, res) => {
    const body = req.body as RefreshBody;
    const data: RefreshData = await deps.sessions.refresh(body.refresh_token);
    res.setHeader('Cache-Control', 'no-store');
    sendData(res, 200, data);
  });

  router.post('/auth/logout', async (req, res) => {
    if (!req.auth) throw new UnauthorizedError();
    const data: LogoutData = await deps.sessions.logout(req.auth.sessionId);
    sendData(res, 200, data, 'Logged out.');
  });

  router.get('/me', async (req, res) => {
    if (!req.auth) throw new UnauthorizedError();
    const data: MeData = await deps.auth.me(req.auth.userId);
    sendData(res, 200, data);
  });

  return router;
}

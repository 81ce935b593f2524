import type { RequestHandler } from 'express';
import type { Handler } from '../contract';
import { envelopeText } from './envelope';
import { clientIp } from './rate-limit';

/** What `res.json` writes as the Content-Type of a JSON body. */
const JSON_CONTENT_TYPE = 'application/json; charset=utf-8';

/**
 * GET /api/health, the route load balancers and monitors poll hardest: the same
 * envelope, status and headers as every operation's route (`operationRoute`), written in one
 * `res.end` without Express's `res.json`/`res.send` (content negotiation of the type, freshness
 * check, status helpers) and with no per-request input beyond what health reads.
 */
export function healthRoute(getHealth: Handler<'getHealth'>): RequestHandler {
  return async (req, res) => {
    const result = await getHealth({
      path: {},
      query: {},
      headers: {},
      body: undefined,
      requestId: (req as { id?: string }).id ?? '',
      clientIp: clientIp(req),
      accepts: (types: string[]) => req.accepts(types),
    } as never);
    const status = result.status ?? 200;
    for (const [name, value] of Object.entries(result.headers ?? {})) res.setHeader(name, String(value));
    const body = envelopeText(status, result.data, result.message);
    res.statusCode = status;
    res.setHeader('Content-Type', JSON_CONTENT_TYPE);
    res.setHeader('Content-Length', Buffer.byteLength(body));
    res.end(body);
  };
}

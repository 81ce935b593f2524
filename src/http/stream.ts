import type { Response } from 'express';

/**
 * Writes and, when the socket buffer is full, waits for it to drain or close (back pressure).
 * A client that reads nothing for `stallTimeoutMs` is cut: the response is destroyed, so the
 * producer sees `aborted` and stops (and its database transaction ends).
 */
export function write(res: Response, chunk: string, stallTimeoutMs: number): Promise<void> {
  if (res.destroyed || res.write(chunk)) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    const timer = setTimeout(() => {
      res.req?.log?.warn({ stallTimeoutMs }, 'response stream cut: the client stopped reading');
      res.destroy();
      done();
    }, stallTimeoutMs);
    res.on('drain', done);
    res.on('close', done);
  });
}

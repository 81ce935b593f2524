import type { RequestHandler } from 'express';

/**
 * A header middleware whose headers never depend on the request (helmet with its defaults) run
 * once at start against a recording response; each request then gets the recorded headers in
 * one loop, instead of helmet's chain of thirteen closures, one per header, on every request.
 * When the middleware does anything else (reads the request, calls `next` with an error or
 * later, touches the response otherwise), it is returned as it is.
 */
export function fixedHeaders(middleware: RequestHandler): RequestHandler {
  const headers: [string, string][] = [];
  const removed: string[] = [];
  let other = false;
  let done = false;
  const recorder = new Proxy(
    {
      setHeader(name: string, value: unknown) {
        if (typeof value === 'string') headers.push([name, value]);
        else other = true;
      },
      removeHeader(name: string) {
        removed.push(name);
      },
    },
    {
      get(target, property) {
        if (property === 'setHeader' || property === 'removeHeader') return target[property];
        other = true;
        return undefined;
      },
    },
  );
  const request = new Proxy(
    {},
    {
      get() {
        other = true;
        return undefined;
      },
    },
  );
  try {
    void middleware(request as never, recorder as never, (error?: unknown) => {
      if (error !== undefined) other = true;
      done = true;
    });
  } catch {
    other = true;
  }
  if (other || !done) return middleware;
  return (_req, res, next) => {
    for (const name of removed) res.removeHeader(name);
    for (const [name, value] of headers) res.setHeader(name, value);
    next();
  };
}

/**
 * JSON between systems is UTF-8 (RFC 8259, section 8.1). The body parser would decode other
 * `utf-*` charsets (UTF-16, UTF-32) and then hand the number check bytes it cannot read, which
 * surfaced as 403 "Unknown encoding". This check runs first in the parser's `verify` hook and
 * refuses any charset but UTF-8 the way the parser refuses `latin1`: a 415 with
 * `type: charset.unsupported`, which the error handler answers as `UnsupportedMediaType`.
 */

export class UnsupportedCharsetError extends Error {
  readonly status = 415;
  readonly type = 'charset.unsupported';

  constructor(readonly charset: string) {
    super(`unsupported charset "${charset.toUpperCase()}"`);
  }
}

/** Throws UnsupportedCharsetError unless the body's charset is UTF-8 (the default when none is given). */
export function requireUtf8(encoding: string | null | undefined): void {
  const charset = (encoding ?? 'utf-8').toLowerCase();
  if (charset !== 'utf-8') throw new UnsupportedCharsetError(charset);
}

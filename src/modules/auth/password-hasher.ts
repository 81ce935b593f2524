import crypto from 'node:crypto';
import { hash, verify } from '@node-rs/argon2';
import { DomainError } from '../../errors';

/**
 * argon2id at the OWASP Password Storage Cheat Sheet's first configuration
 * (m = 19 MiB, t = 2, p = 1). `@node-rs/argon2` defaults to argon2id (asserted in tests) and
 * runs on the libuv thread pool, so hashing never blocks the event loop. Verification reads
 * the parameters from the stored hash, so older, cheaper hashes still verify.
 */
export const ARGON2_OPTIONS = { memoryCost: 19_456, timeCost: 2, parallelism: 1, outputLen: 32 } as const;

export class PasswordHasher {
  /**
   * The hash an unknown identifier is checked against, made at construction (about 100 ms on
   * the thread pool) so that the first unknown-identifier login costs one verification like
   * every other, not a hash plus a verification. `ready()` resolves once it exists.
   */
  private readonly dummy: Promise<string>;

  constructor() {
    this.dummy = this.hash(`dummy-${crypto.randomBytes(16).toString('hex')}`);
    // Awaited by ready() and verifyDummy(); never an unhandled rejection in between.
    this.dummy.catch(() => undefined);
  }

  /** Resolves once the dummy hash is made (awaited at start, before the server listens). */
  async ready(): Promise<void> {
    await this.dummy;
  }

  hash(password: string): Promise<string> {
    return hash(password, ARGON2_OPTIONS);
  }

  /** Never throws on a malformed stored hash: it simply does not match. */
  async verify(passwordHash: string, password: string): Promise<boolean> {
    try {
      return await verify(passwordHash, password);
    } catch {
      return false;
    }
  }

  /**
   * Burns the same time as a real verification, for an unknown identifier, so the response
   * time does not reveal whether an account exists.
   */
  async verifyDummy(password: string): Promise<void> {
    await this.verify(await this.dummy, password);
  }
}

/**
 * At most `max` password verifications (argon2, ~64 ms and 19 MiB each) run at once in this
 * process; one more is refused at once with 503 `ServiceUnavailable` and `Retry-After`, never
 * queued, so a flood of anonymous logins cannot build a queue that delays every real one.
 */
export class VerificationBudget {
  private running = 0;

  constructor(private readonly max: number, private readonly retryAfterSeconds = 1) {}

  get inUse(): number {
    return this.running;
  }

  /** A slot, or ServiceUnavailable; call the returned function once the work is done. */
  admit(): () => void {
    if (this.running >= this.max) {
      throw new DomainError(
        'ServiceUnavailable',
        'unavailable',
        'Too many logins are being checked right now: retry after the time in Retry-After.',
        undefined,
        { 'Retry-After': String(this.retryAfterSeconds) },
      );
    }
    this.running += 1;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.running -= 1;
    };
  }
}

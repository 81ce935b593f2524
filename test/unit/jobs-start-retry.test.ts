import { describe, expect, it } from 'vitest';
import { isTransientStartError, withStartRetries } from '../../src/jobs';

const pgError = (code: string, message = 'error') => Object.assign(new Error(message), { code });

describe('isTransientStartError', () => {
  it.each([
    ['a deadlock', pgError('40P01', 'deadlock detected')],
    ['a serialization failure', pgError('40001')],
    ['a terminated backend', pgError('57P01', 'terminating connection due to administrator command')],
    ['a type created twice', pgError('42710', 'type "job_state" already exists')],
    ['a table created twice', pgError('42P07')],
    ['a unique violation', pgError('23505')],
    ['a reset socket', pgError('ECONNRESET')],
  ])('%s is transient', (_what, error) => {
    expect(isTransientStartError(error)).toBe(true);
  });

  it.each([
    ['a permission error', pgError('42501', 'permission denied for schema pgboss')],
    ['a programming error', new TypeError('x is not a function')],
    ['no error object', 'boom'],
  ])('%s is not', (_what, error) => {
    expect(isTransientStartError(error)).toBe(false);
  });
});

describe('withStartRetries', () => {
  it('tries again after a transient failure, undoing each failed try, and answers the success', async () => {
    const calls: string[] = [];
    let tries = 0;
    const result = await withStartRetries(
      async () => {
        tries += 1;
        calls.push(`try ${tries}`);
        if (tries < 3) throw pgError('40P01', 'deadlock detected');
        return 'started';
      },
      async () => void calls.push('undo'),
      { attempts: 5, delayMs: 1, onRetry: (_error, attempt) => calls.push(`retry as try ${attempt}`) },
    );
    expect(result).toBe('started');
    expect(calls).toEqual(['try 1', 'undo', 'retry as try 2', 'try 2', 'undo', 'retry as try 3', 'try 3']);
  });

  it('throws a permanent failure at once', async () => {
    let tries = 0;
    const permanent = pgError('42501', 'permission denied');
    await expect(
      withStartRetries(
        async () => {
          tries += 1;
          throw permanent;
        },
        async () => undefined,
        { attempts: 5, delayMs: 1 },
      ),
    ).rejects.toBe(permanent);
    expect(tries).toBe(1);
  });

  it('gives up after its attempts, throwing the last failure', async () => {
    let tries = 0;
    await expect(
      withStartRetries(
        async () => {
          tries += 1;
          throw pgError('40P01', `deadlock ${tries}`);
        },
        async () => undefined,
        { attempts: 3, delayMs: 1 },
      ),
    ).rejects.toThrow('deadlock 3');
    expect(tries).toBe(3);
  });
});

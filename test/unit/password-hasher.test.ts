import { afterEach, describe, expect, it, vi } from 'vitest';
import { PasswordHasher } from '../../src/modules/auth';

afterEach(() => {
  vi.restoreAllMocks();
});

describe('PasswordHasher', () => {
  it('makes the dummy hash once, at construction, never on an unknown-identifier login', async () => {
    const hashAtConstruction = vi.spyOn(PasswordHasher.prototype, 'hash');
    const hasher = new PasswordHasher();
    expect(hashAtConstruction).toHaveBeenCalledTimes(1);
    await hasher.ready();
    hashAtConstruction.mockClear();

    const verify = vi.spyOn(hasher, 'verify');
    await hasher.verifyDummy('a guess');
    await hasher.verifyDummy('another guess');
    expect(hashAtConstruction).not.toHaveBeenCalled();
    expect(verify).toHaveBeenCalledTimes(2);
    // Both checks ran against the same argon2id hash, and neither matched.
    const [first, second] = verify.mock.calls.map((call) => call[0]);
    expect(first).toMatch(/^\$argon2id\$/);
    expect(second).toBe(first);
    await expect(verify.mock.results[0]?.value).resolves.toBe(false);
  });
});

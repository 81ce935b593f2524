import { describe, expect, it } from 'vitest';
import { drawKey, drawOrder, newDrawSeed, seedCommitment } from '../../src/modules/tontines/tontine-draw';

// The expected digests below were computed outside the code, with coreutils:
//   printf '%s' "$SEED" | sha256sum          printf '%s' "$SEED:$USER_ID" | sha256sum
const SEED = '0123456789abcdef'.repeat(4);
const U1 = '11111111-1111-4111-8111-111111111111';
const U2 = '22222222-2222-4222-8222-222222222222';
const U3 = '33333333-3333-4333-8333-333333333333';
const U4 = '44444444-4444-4444-8444-444444444444';
const UA = 'aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa';

describe('tontine payout draw (commit-reveal, as the contract documents draw_seed)', () => {
  it('draws a fresh seed of 32 random bytes as 64 lower-case hex characters', () => {
    const seeds = new Set(Array.from({ length: 20 }, newDrawSeed));
    expect(seeds.size).toBe(20);
    for (const seed of seeds) expect(seed).toMatch(/^[0-9a-f]{64}$/);
  });

  it('commits to the seed with hex(SHA-256(seed))', () => {
    expect(seedCommitment(SEED)).toBe('a8ae6e6ee929abea3afcfc5258c8ccd6f85273e0d4626d26c7279f3250f77c8e');
  });

  it("keys a member by hex(SHA-256(seed + ':' + user_id)), the user id in lower case", () => {
    expect(drawKey(SEED, U1)).toBe('ac6ff9ac7e698feca89a451f50185f5b15dedcdb210cd0467d8d8abd4ddfb9cf');
    expect(drawKey(SEED, U4)).toBe('157ee29bf89caa3e613958b8ddb5234d85832d6518dcb653654c939f21cb21ad');
    expect(drawKey(SEED, UA)).toBe('31a6db54087fa351d5a7076ea051e3b00a564b4a3492745867b925f5b4b2d411');
    expect(drawKey(SEED, UA.toUpperCase())).toBe('31a6db54087fa351d5a7076ea051e3b00a564b4a3492745867b925f5b4b2d411');
  });

  it('orders members by their keys ascending, whatever order they joined in, keeping their ids as given', () => {
    // Keys: U4 157e..., UA 31a6..., U2 3579..., U3 a3b0..., U1 ac6f...
    const expected = [U4, UA.toUpperCase(), U2, U3, U1];
    expect(drawOrder(SEED, [U1, U2, U3, U4, UA.toUpperCase()])).toEqual(expected);
    expect(drawOrder(SEED, [UA.toUpperCase(), U4, U3, U2, U1])).toEqual(expected);
    expect(drawOrder(SEED, [U3, U1, UA.toUpperCase(), U2, U4])).toEqual(expected);
    expect(drawOrder(SEED, [U1, U4])).toEqual([U4, U1]);
    expect(drawOrder(SEED, [U4, U1])).toEqual([U4, U1]);
    expect(drawOrder(SEED, [])).toEqual([]);
  });
});

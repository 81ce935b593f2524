import { describe, expect, it } from 'vitest';
import { cycleDrawKey, drawBeneficiary, drawKey, drawOrder, newDrawSeed, seedCommitment } from '../../src/modules/tontines/tontine-draw';

// The expected digests below were computed outside the code, with coreutils:
//   printf '%s' "$SEED" | sha256sum          printf '%s' "$SEED:$USER_ID" | sha256sum
//   printf '%s' "$SEED:$CYCLE:$USER_ID" | sha256sum   (the per-cycle draw)
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

  it("keys a member for cycle k by hex(SHA-256(seed + ':' + k + ':' + user_id))", () => {
    expect(cycleDrawKey(SEED, 1, U1)).toBe('bc6d43f40524e0b8e661d7ae4498d9f4a985d267ca61e617419cf62ea57e9fb8');
    expect(cycleDrawKey(SEED, 1, U3)).toBe('66138e4e8172ded81018b2f4a171c1d16fa1db856cae5480127a185cc5d69df8');
    expect(cycleDrawKey(SEED, 2, UA)).toBe('4b99c33b8e0c99a796807c9df68ccd692b21428659c6523d28bd7c460127e623');
    expect(cycleDrawKey(SEED, 2, UA.toUpperCase())).toBe('4b99c33b8e0c99a796807c9df68ccd692b21428659c6523d28bd7c460127e623');
  });

  it('draws each cycle among the members still waiting: the smallest key wins', () => {
    // Cycle 1 keys: U1 bc6d..., U2 aaea..., U3 6613..., UA c235...: U3.
    expect(drawBeneficiary(SEED, 1, [U1, U2, U3, UA])).toBe(U3);
    expect(drawBeneficiary(SEED, 1, [UA, U2, U1])).toBe(U2);
    // Cycle 2 keys: U1 89aa..., U2 aa14..., UA 4b99...: UA.
    expect(drawBeneficiary(SEED, 2, [U1, U2, UA])).toBe(UA);
    expect(drawBeneficiary(SEED, 2, [U2, U1])).toBe(U1);
    expect(drawBeneficiary(SEED, 3, [U2])).toBe(U2);
    expect(() => drawBeneficiary(SEED, 4, [])).toThrow(new RangeError('no member left to draw for cycle 4'));
  });
});

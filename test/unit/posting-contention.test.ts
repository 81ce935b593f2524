import { describe, expect, it } from 'vitest';
import { contentionGroups, type LockedObject } from '../../src/modules/ledger';

/** How the posting batcher splits a window into transactions: only items that contend share one. */
const item = (...locks: LockedObject[]) => ({ locks });

describe('contentionGroups', () => {
  it('keeps items that share nothing apart, in arrival order', () => {
    expect(contentionGroups([item({ kind: 'escrow', id: 'e1' }), item({ kind: 'escrow', id: 'e2' }), item()])).toEqual([[0], [1], [2]]);
  });

  it('groups items that change the same object, debit the same wallet or name the same hot account', () => {
    const groups = contentionGroups([
      item({ kind: 'tontine', id: 't1', userId: 'u1' }),
      item({ kind: 'escrow', id: 'e1', userId: 'u2' }),
      item({ kind: 'tontine', id: 't1', userId: 'u3' }), // same tontine as 0
      item({ kind: 'escrow', id: 'e2', userId: 'u2' }), // same debited wallet as 1
      item({ kind: 'payment', id: 'p1', contendsOn: 'external_clearing' }),
      item({ kind: 'payment', id: 'p2', contendsOn: 'external_clearing' }), // same hot account as 4
      item({ kind: 'escrow', id: 'e3' }),
    ]);
    expect(groups).toEqual([[0, 2], [1, 3], [4, 5], [6]]);
  });

  it('joins groups through a chain of shared keys, and does not mix kinds that share an id', () => {
    const groups = contentionGroups([
      item({ kind: 'escrow', id: 'x' }),
      item({ kind: 'tontine', id: 'x' }),
      item({ kind: 'escrow', id: 'a', userId: 'u1' }),
      item({ kind: 'escrow', id: 'b', userId: 'u2' }),
      item({ kind: 'escrow', id: 'a' }, { kind: 'escrow', id: 'b' }), // links 2 and 3
    ]);
    expect(groups).toEqual([[0], [1], [2, 3, 4]]);
  });
});

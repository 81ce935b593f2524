import { afterEach, describe, expect, it, vi } from 'vitest';
import { GroupCommit } from '../../src/modules/ledger';

/** A runBatch whose calls the test finishes by hand. */
function controlledBatches() {
  const calls: Array<{ items: number[]; finish(outcomes?: string[]): void; fail(error: Error): void }> = [];
  const runBatch = (items: number[]) =>
    new Promise<string[]>((resolve, reject) => {
      calls.push({ items, finish: (outcomes) => resolve(outcomes ?? items.map((item) => `batch:${item}`)), fail: reject });
    });
  return { calls, runBatch };
}

const tick = () => new Promise((resolve) => setImmediate(resolve));

afterEach(() => {
  vi.useRealTimers();
});

describe('GroupCommit (the window of every group commit: transfers and decision windows)', () => {
  it('sends a lone item at once: with nothing in flight no request waits for the window', async () => {
    const { calls, runBatch } = controlledBatches();
    const group = new GroupCommit<number, string>({ windowMs: 2, runBatch, runOne: async (item) => `one:${item}` });
    const answer = group.submit(1);
    expect(calls.map((call) => call.items)).toEqual([[1]]);
    calls[0]?.finish();
    expect(await answer).toBe('batch:1');
  });

  it('gathers what arrives while a batch is in flight, and sends it when the window ends, in arrival order', async () => {
    vi.useFakeTimers();
    const { calls, runBatch } = controlledBatches();
    const group = new GroupCommit<number, string>({ windowMs: 2, runBatch, runOne: async (item) => `one:${item}` });
    const answers = [1, 2, 3, 4].map((item) => group.submit(item));
    expect(calls.map((call) => call.items)).toEqual([[1]]);
    vi.advanceTimersByTime(1);
    expect(calls).toHaveLength(1);
    vi.advanceTimersByTime(1);
    expect(calls.map((call) => call.items)).toEqual([[1], [2, 3, 4]]);
    calls[1]?.finish(['b', 'c', 'd']);
    calls[0]?.finish(['a']);
    expect(await Promise.all(answers)).toEqual(['a', 'b', 'c', 'd']);
  });

  it('sends the gathered items as soon as the batch in flight ends, before the window does', async () => {
    vi.useFakeTimers();
    const { calls, runBatch } = controlledBatches();
    const group = new GroupCommit<number, string>({ windowMs: 2, runBatch, runOne: async (item) => `one:${item}` });
    void group.submit(1);
    const later = [group.submit(2), group.submit(3)];
    calls[0]?.finish();
    await vi.advanceTimersByTimeAsync(0);
    expect(calls.map((call) => call.items)).toEqual([[1], [2, 3]]);
    calls[1]?.finish();
    expect(await Promise.all(later)).toEqual(['batch:2', 'batch:3']);
  });

  it('never waits longer than 2 ms nor gathers more than 64 items, whatever it is asked', async () => {
    vi.useFakeTimers();
    const { calls, runBatch } = controlledBatches();
    const group = new GroupCommit<number, string>({ windowMs: 50, maxItems: 500, runBatch, runOne: async (item) => `one:${item}` });
    void group.submit(0);
    for (let item = 1; item <= 130; item += 1) void group.submit(item);
    expect(calls.map((call) => call.items.length)).toEqual([1, 64, 64]);
    vi.advanceTimersByTime(2);
    expect(calls.map((call) => call.items.length)).toEqual([1, 64, 64, 2]);
    expect(group.sizes[64]).toBe(2);
  });

  it('a batch that fails as a whole is never answered from it: each item runs alone and gets its own result or error', async () => {
    const { calls, runBatch } = controlledBatches();
    const runOne = vi.fn(async (item: number) => {
      if (item === 3) throw new Error('item 3 failed alone');
      return `one:${item}`;
    });
    const group = new GroupCommit<number, string>({ windowMs: 2, runBatch, runOne });
    void group.submit(0);
    const answers = [1, 2, 3].map((item) => group.submit(item).catch((error: Error) => error.message));
    calls[0]?.finish();
    await tick();
    // The second batch leaves once its window (2 ms) has passed.
    await vi.waitFor(() => expect(calls).toHaveLength(2));
    expect(calls.map((call) => call.items)).toEqual([[0], [1, 2, 3]]);
    calls[1]?.fail(new Error('Connection terminated unexpectedly'));
    expect(await Promise.all(answers)).toEqual(['one:1', 'one:2', 'item 3 failed alone']);
    expect(runOne.mock.calls.map(([item]) => item)).toEqual([1, 2, 3]);
    expect(group.batchesFailed).toBe(1);
  });

  it('a batch that answers the wrong number of outcomes counts as failed', async () => {
    const group = new GroupCommit<number, string>({ runBatch: async () => ['only one'], runOne: async (item) => `one:${item}` });
    expect(await Promise.all([group.submit(6), group.submit(7), group.submit(8)])).toEqual(['only one', 'one:7', 'one:8']);
    expect(group.batchesFailed).toBe(1);
  });

  it('a batch ending while another is still in flight leaves the gathered items to their window', async () => {
    vi.useFakeTimers();
    const { calls, runBatch } = controlledBatches();
    const group = new GroupCommit<number, string>({ windowMs: 2, maxItems: 2, runBatch, runOne: async (item) => `one:${item}` });
    void group.submit(1); // alone: leaves at once
    void group.submit(2);
    void group.submit(3); // two waiting: a full batch leaves at once
    void group.submit(4); // waits for its window
    expect(calls.map((call) => call.items)).toEqual([[1], [2, 3]]);
    calls[0]?.finish();
    for (let i = 0; i < 5; i += 1) await Promise.resolve();
    expect(calls).toHaveLength(2);
    vi.advanceTimersByTime(2);
    expect(calls.map((call) => call.items)).toEqual([[1], [2, 3], [4]]);
  });

  it('a full batch clears the window its first item started, so the next item gets a window of its own', async () => {
    vi.useFakeTimers();
    const { calls, runBatch } = controlledBatches();
    const group = new GroupCommit<number, string>({ windowMs: 2, maxItems: 2, runBatch, runOne: async (item) => `one:${item}` });
    void group.submit(1);
    void group.submit(2); // starts a window
    void group.submit(3); // fills the batch: it leaves, and the window is over
    vi.advanceTimersByTime(5);
    void group.submit(4); // a new window
    vi.advanceTimersByTime(2);
    expect(calls.map((call) => call.items)).toEqual([[1], [2, 3], [4]]);
  });

  it('tells onBatch the size of each batch and whether it failed as a whole', async () => {
    const told: Array<[number, boolean]> = [];
    let fail = false;
    const group = new GroupCommit<number, string>({
      runBatch: async (items) => {
        if (fail) throw new Error('lost connection');
        return items.map(String);
      },
      runOne: async (item) => `one:${item}`,
      onBatch: (size, failed) => told.push([size, failed]),
    });
    expect(await group.submit(1)).toBe('1');
    fail = true;
    expect(await group.submit(2)).toBe('one:2');
    expect(told).toEqual([
      [1, false],
      [1, true],
    ]);
  });

  it('answers every item, each run once, even when onBatch throws', async () => {
    const runs: string[] = [];
    let fail = false;
    const group = new GroupCommit<number, string>({
      runBatch: async (items) => {
        runs.push(`batch:${items.join(',')}`);
        if (fail) throw new Error('lost connection');
        return items.map(String);
      },
      runOne: async (item) => {
        runs.push(`one:${item}`);
        return `one:${item}`;
      },
      onBatch: () => {
        throw new Error('metrics are down');
      },
    });
    expect(await group.submit(1)).toBe('1');
    fail = true;
    expect(await group.submit(2)).toBe('one:2');
    expect(runs).toEqual(['batch:1', 'batch:2', 'one:2']);
  });
});

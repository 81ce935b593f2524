import { describe, expect, it, vi } from 'vitest';
import { startBackgroundJob } from '../../src/background-job';

function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

describe('startBackgroundJob', () => {
  it('never overlaps runs: a second call joins the run in progress', async () => {
    const gate = deferred();
    const work = vi.fn(() => gate.promise);
    const job = startBackgroundJob('test', 60_000, { error: vi.fn() }, work);
    const first = job.runNow();
    const second = job.runNow();
    expect(work).toHaveBeenCalledTimes(1);
    gate.resolve();
    await Promise.all([first, second]);
    await job.runNow();
    expect(work).toHaveBeenCalledTimes(2);
    await job.stop();
  });

  it('logs a failed run and runs again on the next call', async () => {
    const error = vi.fn();
    const work = vi.fn().mockRejectedValueOnce(new Error('database away')).mockResolvedValueOnce(undefined);
    const job = startBackgroundJob('sweep', 60_000, { error }, work);
    await expect(job.runNow()).resolves.toBeUndefined();
    expect(error).toHaveBeenCalledTimes(1);
    expect(error.mock.calls[0]?.[0]).toMatchObject({ job: 'sweep', err: expect.objectContaining({ message: 'database away' }) });
    await job.runNow();
    expect(work).toHaveBeenCalledTimes(2);
    await job.stop();
  });

  it('stop() waits for the run in progress and starts no new run', async () => {
    const gate = deferred();
    let finished = false;
    const work = vi.fn(async () => {
      await gate.promise;
      finished = true;
    });
    const job = startBackgroundJob('test', 60_000, { error: vi.fn() }, work);
    void job.runNow();
    let stopped = false;
    const stopping = job.stop().then(() => (stopped = true));
    await Promise.resolve();
    expect(stopped).toBe(false);
    gate.resolve();
    await stopping;
    expect(finished).toBe(true);
    await job.runNow();
    expect(work).toHaveBeenCalledTimes(1);
  });

  it('runs on its interval', async () => {
    vi.useFakeTimers();
    try {
      const work = vi.fn(() => Promise.resolve());
      const job = startBackgroundJob('tick', 1_000, { error: vi.fn() }, work);
      await vi.advanceTimersByTimeAsync(3_500);
      expect(work).toHaveBeenCalledTimes(3);
      await job.stop();
      await vi.advanceTimersByTimeAsync(5_000);
      expect(work).toHaveBeenCalledTimes(3);
    } finally {
      vi.useRealTimers();
    }
  });
});

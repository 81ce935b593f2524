import { EventEmitter } from 'node:events';
import type { Response } from 'express';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { write } from '../../src/http/stream';

/** A response whose socket buffer is full: write() answers false until someone reads. */
function stalledResponse() {
  const res = Object.assign(new EventEmitter(), {
    destroyed: false,
    write: vi.fn(() => false),
    destroy: vi.fn(() => {
      res.destroyed = true;
    }),
  });
  return res;
}

afterEach(() => {
  vi.useRealTimers();
});

describe('CSV statement writer', () => {
  it('cuts a client that reads nothing for the stall timeout', async () => {
    vi.useFakeTimers();
    const res = stalledResponse();
    let settled = false;
    const pending = write(res as unknown as Response, 'row\r\n', 30_000).then(() => {
      settled = true;
    });
    await vi.advanceTimersByTimeAsync(29_999);
    expect(settled).toBe(false);
    expect(res.destroy).not.toHaveBeenCalled();
    await vi.advanceTimersByTimeAsync(1);
    await pending;
    expect(res.destroy).toHaveBeenCalledTimes(1);
    expect(res.listenerCount('drain') + res.listenerCount('close')).toBe(0);
  });

  it('a client that drains in time is not cut, and the timer is cleared', async () => {
    vi.useFakeTimers();
    const res = stalledResponse();
    const pending = write(res as unknown as Response, 'row\r\n', 30_000);
    await vi.advanceTimersByTimeAsync(10_000);
    res.emit('drain');
    await pending;
    await vi.advanceTimersByTimeAsync(60_000);
    expect(res.destroy).not.toHaveBeenCalled();
    expect(vi.getTimerCount()).toBe(0);
  });
});

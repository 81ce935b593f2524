import express, { type RequestHandler } from 'express';
import rateLimit from 'express-rate-limit';
import helmet from 'helmet';
import request from 'supertest';
import { describe, expect, it, vi } from 'vitest';
import { fixedHeaders } from '../../src/http/fixed-headers';
import { FixedWindowCounter, partitionKey } from '../../src/http/fixed-window-counter';

/** The headers a middleware sets on a real response, in the order Node keeps them. */
async function headersOf(middleware: RequestHandler): Promise<Record<string, string>> {
  const app = express();
  app.disable('x-powered-by');
  app.get('/', middleware, (_req, res) => {
    res.json({ ok: true });
  });
  const res = await request(app).get('/');
  return res.headers as Record<string, string>;
}

describe('fixedHeaders', () => {
  it('sets exactly the headers helmet sets, with the same values', async () => {
    const expected = await headersOf(helmet());
    const fixed = await headersOf(fixedHeaders(helmet()));
    const withoutDate = (headers: Record<string, string>) => Object.fromEntries(Object.entries(headers).filter(([name]) => name !== 'date'));
    expect(withoutDate(fixed)).toEqual(withoutDate(expected));
    expect(fixed['content-security-policy']).toContain("default-src 'self'");
  });

  it('keeps a middleware whose headers depend on the request as it is', () => {
    const perRequest: RequestHandler = (req, res, next) => {
      res.setHeader('X-Path', req.path);
      next();
    };
    expect(fixedHeaders(perRequest)).toBe(perRequest);
  });

  it('keeps a middleware that fails, or answers later, as it is', () => {
    const failing: RequestHandler = (_req, _res, next) => next(new Error('no'));
    const later: RequestHandler = (_req, _res, next) => void setTimeout(next, 1);
    const throwing: RequestHandler = () => {
      throw new Error('no');
    };
    expect(fixedHeaders(failing)).toBe(failing);
    expect(fixedHeaders(later)).toBe(later);
    expect(fixedHeaders(throwing)).toBe(throwing);
  });
});

describe('FixedWindowCounter (the health limiter)', () => {
  it('counts hits per key within a window that starts at the first hit, then starts again', () => {
    let now = 1_000_000;
    const counter = new FixedWindowCounter(60_000, (key) => `policy of ${key}`, () => now);
    try {
      expect(counter.hit('a').hits).toBe(1);
      now += 59_999;
      expect(counter.hit('a').hits).toBe(2);
      expect(counter.hit('b')).toMatchObject({ hits: 1, resetAt: now + 60_000, policy: 'policy of b' });
      now += 1;
      const restarted = counter.hit('a');
      expect(restarted).toMatchObject({ hits: 1, resetAt: now + 60_000, policy: 'policy of a' });
    } finally {
      counter.stop();
    }
  });

  it('tells the whole seconds left, rounded up, and 0 once the window has ended', () => {
    let now = 0;
    const counter = new FixedWindowCounter(60_000, () => '', () => now);
    try {
      const count = counter.hit('a');
      expect(counter.secondsLeft(count)).toBe(60);
      now = 58_001;
      expect(counter.secondsLeft(count)).toBe(2);
      now = 59_999;
      expect(counter.secondsLeft(count)).toBe(1);
      now = 61_000;
      expect(counter.secondsLeft(count)).toBe(0);
    } finally {
      counter.stop();
    }
  });

  it('drops the keys whose window has ended, and only those', () => {
    let now = 0;
    const counter = new FixedWindowCounter(1_000, () => '', () => now);
    try {
      counter.hit('old');
      now = 600;
      counter.hit('recent');
      now = 1_000;
      counter.sweep();
      expect(counter.size).toBe(1);
      expect(counter.hit('recent').hits).toBe(2);
      expect(counter.hit('old').hits).toBe(1);
    } finally {
      counter.stop();
    }
  });

  it('sweeps on its own every window until stopped (fake timers: no waiting)', () => {
    vi.useFakeTimers();
    try {
      let now = 0;
      const counter = new FixedWindowCounter(1_000, () => '', () => now);
      counter.hit('a');
      now = 1_000;
      vi.advanceTimersByTime(1_000);
      expect(counter.size).toBe(0);
      counter.hit('b');
      counter.stop();
      now = 5_000;
      vi.advanceTimersByTime(5_000);
      expect(counter.size).toBe(1);
    } finally {
      vi.useRealTimers();
    }
  });

  it('names the partition as express-rate-limit does (its RateLimit-Policy header, byte for byte)', async () => {
    const theirs = rateLimit({ windowMs: 60_000, limit: 5, identifier: 'health', standardHeaders: 'draft-8', legacyHeaders: false, keyGenerator: () => 'ip:127.0.0.1' });
    const expected = (await headersOf(theirs))['ratelimit-policy'];
    expect(expected).toBe(`"health"; q=5; w=60; pk=:${partitionKey('ip:127.0.0.1')}:`);
    expect(partitionKey('ip:127.0.0.2')).not.toBe(partitionKey('ip:127.0.0.1'));
  });
});

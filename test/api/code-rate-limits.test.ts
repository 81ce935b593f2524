import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { buildTestApp, type App } from '../support/app';
import { uniqueEmail, uniquePhone } from '../support/factories';

const STRONG = 'mango-lagoon-harmattan-42';

function signUp(app: App, identifier: string, from: string) {
  return request(app).post('/api/auth/signup').set('X-Forwarded-For', from).send({ identifier, password: STRONG, full_name: 'Awa Kouassi', country: 'CI', accept_terms: true });
}

function askReset(app: App, identifier: string, from: string) {
  return request(app).post('/api/auth/password-reset').set('X-Forwarded-For', from).send({ identifier });
}

describe('operations that send a code are rate limited', () => {
  it('sign-up: one address is stopped after RATE_LIMIT_CODES_PER_IP identifiers (429); another address is not', async () => {
    const app = await buildTestApp({ env: { RATE_LIMIT_CODES_PER_IP: '3', RATE_LIMIT_CODES_PER_IDENTIFIER: '100', TRUST_PROXY_HOPS: '1' } });
    const answers: number[] = [];
    for (let i = 0; i < 4; i += 1) answers.push((await signUp(app, uniqueEmail(`ip${i}`), '198.51.100.7')).status);
    expect(answers).toEqual([202, 202, 202, 429]);
    const limited = await signUp(app, uniqueEmail('ip-more'), '198.51.100.7');
    expect(limited.status).toBe(429);
    expect(limited.body).toMatchObject({ success: false, error: 'RateLimitExceeded' });
    expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0);
    expect((await signUp(app, uniqueEmail('elsewhere'), '198.51.100.8')).status).toBe(202);
  });

  it('sign-up: one identifier is stopped after RATE_LIMIT_CODES_PER_IDENTIFIER codes, whatever the address and spelling', async () => {
    const app = await buildTestApp({ env: { RATE_LIMIT_CODES_PER_IP: '100', RATE_LIMIT_CODES_PER_IDENTIFIER: '2', TRUST_PROXY_HOPS: '1' } });
    const phone = uniquePhone();
    const spaced = `${phone.slice(0, 4)} ${phone.slice(4, 8)} ${phone.slice(8)}`;
    const answers = [(await signUp(app, phone, '198.51.100.20')).status, (await signUp(app, spaced, '198.51.100.21')).status, (await signUp(app, `00${phone.slice(1)}`, '198.51.100.22')).status];
    expect(answers).toEqual([202, 202, 429]);
    expect((await signUp(app, uniquePhone(), '198.51.100.20')).status).toBe(202);
  });

  it('password reset: limited per identifier and per address, counted apart from sign-up', async () => {
    const app = await buildTestApp({ env: { RATE_LIMIT_CODES_PER_IP: '4', RATE_LIMIT_CODES_PER_IDENTIFIER: '2', TRUST_PROXY_HOPS: '1' } });
    const email = uniqueEmail('reset-limit');
    const perIdentifier = [(await askReset(app, email, '203.0.113.1')).status, (await askReset(app, email.toUpperCase(), '203.0.113.2')).status, (await askReset(app, email, '203.0.113.3')).status];
    expect(perIdentifier).toEqual([202, 202, 429]);
    const limited = await askReset(app, email, '203.0.113.4');
    expect(limited.body).toMatchObject({ success: false, error: 'RateLimitExceeded' });

    const perIp: number[] = [];
    for (let i = 0; i < 5; i += 1) perIp.push((await askReset(app, uniqueEmail(`reset-ip${i}`), '203.0.113.50')).status);
    expect(perIp).toEqual([202, 202, 202, 202, 429]);
    // The same address still has its sign-up budget: the two counts are kept apart.
    expect((await signUp(app, uniqueEmail('after-resets'), '203.0.113.50')).status).toBe(202);
  });
});

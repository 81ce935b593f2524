import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { DEFAULT_JWT_SECRET } from '../../src/config';
import crypto from 'node:crypto';
import knexFactory from 'knex';
import { databaseKind } from '../support/database';
import { DEMO_PASSWORD, DEMO_USERS } from '../../src/seed/identity-seed';

const ROOT = path.resolve(__dirname, '../..');
const TSX = path.join(ROOT, 'node_modules/.bin/tsx');
const tempDirs: string[] = [];

afterAll(() => {
  for (const dir of tempDirs) fs.rmSync(dir, { recursive: true, force: true });
});

interface Started {
  child: ChildProcess;
  port: number;
  output: () => string;
}

/** `make run` as a child process on its own embedded database (unless `env` names one), ports chosen by the OS. */
function start(env: Record<string, string>, dataDir: string): Promise<Started> {
  const childEnv: Record<string, string | undefined> = { ...process.env };
  delete childEnv.DATABASE_URL; // the embedded database, whatever the test run uses
  delete childEnv.REDIS_URL;
  delete childEnv.VITEST;
  Object.assign(childEnv, env, { PORT: '0', PAY_PORT: '0', METRICS_PORT: '0', EMBEDDED_DATA_DIR: dataDir, LOG_LEVEL: 'info' });
  const child = spawn(TSX, ['src/main.ts'], { cwd: ROOT, env: childEnv, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no "listening" within 90 s:\n${output}`)), 90_000);
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      const line = output.split('\n').find((l) => l.includes('"apiPort"'));
      if (line) {
        clearTimeout(timer);
        resolve({ child, port: (JSON.parse(line) as { apiPort: number }).apiPort, output: () => output });
      }
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`exited with ${code} before listening:\n${output}`));
    });
  });
}

function stop(child: ChildProcess): Promise<number | null> {
  return new Promise((resolve) => {
    child.removeAllListeners('exit');
    child.on('exit', (code) => resolve(code));
    child.kill('SIGTERM');
  });
}

function run(args: string[], env: Record<string, string>, unset: string[] = []): Promise<{ code: number | null; output: string }> {
  const childEnv: Record<string, string | undefined> = { ...process.env };
  delete childEnv.DATABASE_URL;
  Object.assign(childEnv, env);
  for (const key of unset) delete childEnv[key];
  return new Promise((resolve) => {
    const child = spawn(TSX, args, { cwd: ROOT, env: childEnv, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (c: Buffer) => (output += c.toString()));
    child.stderr.on('data', (c: Buffer) => (output += c.toString()));
    child.on('exit', (code) => resolve({ code, output }));
  });
}

async function login(port: number, identifier: string, password: string): Promise<{ status: number; body: { data?: { access_token: string }; error?: string } }> {
  const res = await fetch(`http://127.0.0.1:${port}/api/auth/login`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ identifier, password }),
  });
  return { status: res.status, body: (await res.json()) as { data?: { access_token: string }; error?: string } };
}

function tempDir(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'demo-start-'));
  tempDirs.push(dir);
  return path.join(dir, 'pg');
}

// One instance (no Redis here): production otherwise requires REDIS_URL.
const PRODUCTION_SECRETS = { JWT_SECRET: 'p'.repeat(48), PAY_SECRET: 'q'.repeat(48), API_KEY_PEPPER: 'r'.repeat(48), PII_ENCRYPTION_KEY: 'prod:' + 'cd'.repeat(32), MOBILE_MONEY_CALLBACK_SECRET: `whsec_${'cd'.repeat(24)}`, CRYPTO_NETWORK: 'sandbox', CRYPTO_ADDRESS_SECRET: 'c'.repeat(40), SINGLE_INSTANCE: 'true', NOTIFIER: 'sandbox', IDENTITY_PROVIDER: 'sandbox', BUSINESS_VERIFICATION_PROVIDER: 'sandbox' };

describe('starting the service', () => {
  it('a development start seeds the demo data once: every demo user logs in and GET /me lists Demo Trading SARL', async () => {
    const dataDir = tempDir();
    const first = await start({ NODE_ENV: 'development' }, dataDir);
    try {
      expect(first.output()).toContain('starting in development mode');
      expect(first.output()).toContain('demo data seeded');
      // The demo key is printed once (not as a log line) and reads the demo organisation's payments.
      const printed = /Demo API key of "Demo Trading SARL" \(local only, shown once\): (sk_test_\S+)/.exec(first.output());
      expect(printed).not.toBeNull();
      expect(first.output().split('\n').filter((line) => line.startsWith('{') && line.includes(printed?.[1] as string))).toEqual([]);
      for (const user of DEMO_USERS) {
        const res = await login(first.port, user.email, DEMO_PASSWORD);
        expect(res.status, user.email).toBe(200);
        if (user.role === 'owner') {
          const me = await fetch(`http://127.0.0.1:${first.port}/api/me`, { headers: { Authorization: `Bearer ${res.body.data?.access_token}` } });
          const body = (await me.json()) as { data: { organizations: Array<{ name: string; role: string }> } };
          expect(body.data.organizations).toContainEqual(expect.objectContaining({ name: 'Demo Trading SARL', role: 'owner' }));
          const demo = (body.data.organizations as Array<{ id?: string; name: string }>).find((o) => o.name === 'Demo Trading SARL');
          const payments = await fetch(`http://127.0.0.1:${first.port}/api/business/organizations/${demo?.id}/payments`, { headers: { Authorization: `Bearer ${printed?.[1]}` } });
          expect(payments.status).toBe(200);
        }
      }
      expect((await login(first.port, '+225 07 00 00 00 01', DEMO_PASSWORD)).status).toBe(200);
    } finally {
      expect(await stop(first.child)).toBe(0);
    }
    const second = await start({ NODE_ENV: 'development' }, dataDir);
    try {
      expect(second.output()).not.toContain('demo data seeded');
      expect(second.output()).not.toContain('Demo API key');
      expect((await login(second.port, 'owner@demo.example', DEMO_PASSWORD)).status).toBe(200);
    } finally {
      await stop(second.child);
    }
  }, 180_000);

  // Production refuses the embedded database (next tests), so this start needs the real
  // server: a scratch database of its own on it.
  it.runIf(databaseKind() === 'postgres')('a production start never seeds, even with SEED_DEMO=true (on a scratch PostgreSQL database)', async () => {
    const serverUrl = process.env.DATABASE_URL as string;
    const name = `prod_start_${Date.now()}_${crypto.randomBytes(3).toString('hex')}`;
    const admin = knexFactory({ client: 'pg', connection: serverUrl, pool: { min: 0, max: 1 } });
    await admin.raw(`CREATE DATABASE ${name}`);
    const url = new URL(serverUrl);
    url.pathname = `/${name}`;
    try {
      const started = await start({ NODE_ENV: 'production', SEED_DEMO: 'true', DATABASE_URL: url.toString(), ...PRODUCTION_SECRETS }, tempDir());
      try {
        expect(started.output()).toContain('starting in production mode');
        expect(started.output()).not.toContain('demo data seeded');
        const res = await login(started.port, 'owner@demo.example', DEMO_PASSWORD);
        expect(res.status).toBe(401);
        expect(res.body.error).toBe('InvalidCredentials');
      } finally {
        await stop(started.child);
      }
    } finally {
      await admin.raw(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await admin.destroy();
    }
  }, 120_000);

  // An unset NODE_ENV must never run as development, with the public default secrets and the
  // demo administrator.
  it('a start without NODE_ENV is a production start: it refuses the default secrets (exit 78) and says why', async () => {
    const { code, output } = await run(['src/main.ts'], { SINGLE_INSTANCE: 'true' }, ['NODE_ENV', 'JWT_SECRET', 'PAY_SECRET']);
    expect(code).toBe(78);
    expect(output).toContain('JWT_SECRET must be set in production');
    expect(output).toContain('NODE_ENV unset means production');
  }, 60_000);

  it('a production start refuses the embedded database (exit 78, one clear line)', async () => {
    const { code, output } = await run(['src/main.ts'], { NODE_ENV: 'production', ...PRODUCTION_SECRETS });
    expect(code).toBe(78);
    expect(output).toContain('DATABASE_URL must be set in production');
  }, 60_000);

  it('a production start refuses the default JWT secret (exit 78, one clear line)', async () => {
    for (const jwtSecret of [undefined, DEFAULT_JWT_SECRET]) {
      const env: Record<string, string> = { NODE_ENV: 'production', PAY_SECRET: PRODUCTION_SECRETS.PAY_SECRET };
      if (jwtSecret) env.JWT_SECRET = jwtSecret;
      const { code, output } = await run(['src/main.ts'], env);
      expect(code).toBe(78);
      expect(output).toContain('JWT_SECRET must be set in production');
    }
  }, 60_000);

  it('`make seed` refuses to run outside development (here production)', async () => {
    // A PostgreSQL URL nothing listens on: the refusal comes before any connection.
    const { code, output } = await run(['scripts/seed.ts'], { NODE_ENV: 'production', DATABASE_URL: 'postgres://postgres@127.0.0.1:1/none', ...PRODUCTION_SECRETS });
    expect(code).toBe(1);
    expect(output).toContain('demo data is seeded only in development (NODE_ENV=development), not in production');
  }, 60_000);
});

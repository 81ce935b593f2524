// The drills' client side (scripts/drill/drill.ts, scripts/drill-failover/drill.ts): HTTP calls
// with retries that keep their Idempotency-Key, a journal of what each logical operation was
// told (acknowledged, refused, unknown) for the checks of checks.ts, and the demo users'
// transfers and escrow lifecycles. One drill per process: the state is the module's.
import crypto from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import type { JournalEntry } from './checks';

const sleep = (ms: number): Promise<void> => new Promise((done) => setTimeout(done, ms));

export interface WorkloadOptions {
  /** Base URLs of the API (`http://127.0.0.1:18790/api`), used in turn. */
  apis: string[];
  /** Told of every money request sent: when it began and ended, and its status (0: no answer). */
  onAttempt?: (attempt: { began: number; ended: number; status: number; error?: string; method: string }) => void;
  /** The instances' MOBILE_MONEY_CALLBACK_SECRET: the drill plays the mobile-money rail and signs its callbacks. */
  mobileMoneyCallbackSecret?: string;
}

const options: WorkloadOptions = { apis: [] };
let nextApi = 0;

/** Where the requests go (and who hears of each attempt): called once before the workload. */
export function configureWorkload(settings: WorkloadOptions): void {
  Object.assign(options, settings);
}

/** How far the workload got (operations done), and whether the drill's faults have all struck. */
export const state = { progress: 0, faultsDone: false };

export interface Answer {
  status: number;
  body: Record<string, unknown> & { data?: Record<string, unknown>; error?: string; details?: Record<string, unknown> };
  headers: Headers;
}
export const stats = { requests: 0, networkErrors: 0, status5xx: new Map<number, number>(), retries: 0, samples5xx: [] as string[] };

export async function call(method: string, path: string, token: string | undefined, body?: unknown, key?: string, extraHeaders: Record<string, string> = {}): Promise<Answer> {
  stats.requests += 1;
  const headers: Record<string, string> = { accept: 'application/json', ...extraHeaders };
  if (token) headers.authorization = `Bearer ${token}`;
  if (key) headers['idempotency-key'] = key;
  if (body !== undefined) headers['content-type'] = 'application/json';
  const api = options.apis[(nextApi++) % options.apis.length] as string;
  const began = Date.now();
  const tell = (status: number, error?: string): void => {
    if (method !== 'GET') options.onAttempt?.({ began, ended: Date.now(), status, error, method });
  };
  let res: Response;
  let text: string;
  try {
    res = await fetch(`${api}${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), signal: AbortSignal.timeout(20_000) });
    text = await res.text();
  } catch (error) {
    tell(0, error instanceof Error ? error.message : String(error));
    throw error;
  }
  let parsed: Answer['body'] = {};
  try {
    parsed = text ? (JSON.parse(text) as Answer['body']) : {};
  } catch {
    parsed = { error: `non-JSON: ${text.replace(/\s+/g, " ").slice(0, 60)}` };
  }
  if (res.status >= 500) {
    stats.status5xx.set(res.status, (stats.status5xx.get(res.status) ?? 0) + 1);
    if (stats.samples5xx.length < 8) stats.samples5xx.push(`${res.status} ${method} ${path.replace(/[0-9a-f-]{36}/g, '{id}')} ${parsed.error ?? ''} ${String(parsed.message ?? '').slice(0, 80)}`);
  }
  tell(res.status, parsed.error);
  return { status: res.status, body: parsed, headers: res.headers };
}

export const RETRYABLE_ERRORS = new Set(['ConcurrentOperation', 'ServiceUnavailable']);

/**
 * One logical operation: the same request (and Idempotency-Key) again after a lost answer, a
 * 5xx from nginx or an instance, or a 409 ConcurrentOperation; at most 10 tries.
 * `alreadyDone` recognises the answer of a retry whose first try had committed.
 */
export async function operation(
  entry: Omit<JournalEntry, 'outcome' | 'attempts'>,
  send: () => Promise<Answer>,
  alreadyDone: (answer: Answer) => string | undefined = (a) => (a.body.error === 'IdempotencyKeyAlreadyProcessed' ? String(a.body.details?.resource_id ?? '') : undefined),
): Promise<JournalEntry & { answer?: Answer }> {
  let last: Answer | undefined;
  for (let attempt = 1; attempt <= 10; attempt += 1) {
    if (attempt > 1) {
      stats.retries += 1;
      await sleep(Math.min(2000, 150 * 2 ** (attempt - 2)));
    }
    try {
      last = await send();
    } catch {
      stats.networkErrors += 1;
      continue;
    }
    if (last.status >= 500 || (last.status === 409 && RETRYABLE_ERRORS.has(String(last.body.error))) || last.status === 429) continue;
    if (last.status >= 200 && last.status < 300) {
      return journal({ ...entry, outcome: 'acknowledged', resourceId: String(last.body.data?.id ?? ''), status: last.status, attempts: attempt, answer: last });
    }
    const done = attempt > 1 ? alreadyDone(last) : undefined;
    if (done !== undefined) return journal({ ...entry, outcome: 'acknowledged', resourceId: done || undefined, status: last.status, attempts: attempt, answer: last });
    return journal({ ...entry, outcome: 'refused', status: last.status, error: String(last.body.error), attempts: attempt, answer: last });
  }
  return journal({ ...entry, outcome: 'unknown', status: last?.status, error: last ? String(last.body.error) : 'no answer', attempts: 10, answer: last });
}

export const JOURNAL: JournalEntry[] = [];
export function journal<T extends JournalEntry>(entry: T): T {
  const { answer: _answer, ...kept } = entry as T & { answer?: unknown };
  JOURNAL.push(kept as JournalEntry);
  return entry;
}

// ---------------------------------------------------------------- workload
export const USERS = ['owner', 'admin', 'finance', 'representative', 'director', 'cashier'].map((name) => `${name}@demo.example`);
export const tokens = new Map<string, string>();
export const userIds = new Map<string, string>();

export async function login(identifier: string): Promise<void> {
  const entry = await operation({ kind: 'transfer', marker: `login:${identifier}` }, () => call('POST', '/auth/login', undefined, { identifier, password: 'demo-password' }));
  JOURNAL.pop(); // a login is no money operation
  if (entry.outcome !== 'acknowledged' || !entry.answer) throw new Error(`login ${identifier}: ${entry.status} ${entry.error}`);
  tokens.set(identifier, String(entry.answer.body.data?.access_token));
  const me = await call('GET', '/me', tokens.get(identifier));
  userIds.set(identifier, String(me.body.data?.id));
}

export const token = (identifier: string): string => tokens.get(identifier) as string;
export const pick = <T>(items: readonly T[]): T => items[crypto.randomInt(items.length)] as T;


/**
 * `count` transfers, and more until every fault has struck and writes went on after it, so each
 * fault lands on live work however fast the service is (the drill's own time bound ends a run
 * whose faults never finish).
 */
export async function transfers(count: number): Promise<void> {
  for (let i = 0; i < count || !state.faultsDone; i += 1) {
    const from = pick(USERS);
    const to = pick(USERS.filter((u) => u !== from));
    const marker = `drill-transfer-${crypto.randomUUID()}`;
    // One in ten asks for more than any wallet holds: refused, and it must leave nothing.
    const amount = i % 10 === 9 ? 900_000_000 : 100 + crypto.randomInt(900);
    const key = crypto.randomUUID();
    await operation({ kind: 'transfer', marker }, () => call('POST', '/transfers', token(from), { amount, currency: 'XOF', recipientIdentifier: to, note: marker }, key));
    state.progress += 1;
  }
}

export async function escrows(count: number): Promise<void> {
  for (let i = 0; i < count; i += 1) {
    const buyer = pick(USERS);
    const seller = pick(USERS.filter((u) => u !== buyer));
    const marker = `drill-escrow-${crypto.randomUUID().slice(0, 20)}`;
    const createKey = crypto.randomUUID();
    const created = await operation({ kind: 'escrow_create', marker }, () =>
      call('POST', '/escrows', token(buyer), { role: 'buyer', counterparty_identifier: seller, amount: 1000 + crypto.randomInt(4000), currency: 'XOF', description: 'drill escrow', reference: marker }, createKey),
    );
    state.progress += 1;
    if (created.outcome !== 'acknowledged' || !created.resourceId) continue;
    const id = created.resourceId;
    const fundKey = crypto.randomUUID();
    const funded = await operation({ kind: 'escrow_fund', marker }, () => call('POST', `/escrows/${id}/fund`, token(buyer), undefined, fundKey));
    if (funded.outcome !== 'acknowledged') continue;
    const statusOf = (a: Answer): string | undefined => (a.body.error === 'InvalidEscrowState' ? String(a.body.details?.status) : undefined);
    const delivered = await operation({ kind: 'escrow_deliver', marker }, () => call('POST', `/escrows/${id}/deliver`, token(seller), { tracking_reference: marker }), (a) =>
      statusOf(a) === 'delivered' ? id : undefined,
    );
    if (delivered.outcome !== 'acknowledged') continue;
    const acceptKey = crypto.randomUUID();
    await operation({ kind: 'escrow_accept', marker }, () => call('POST', `/escrows/${id}/accept`, token(buyer), undefined, acceptKey));
    state.progress += 1;
  }
}

/**
 * `count` top-ups by mobile money: each asks for one (202, pending), then the drill, playing the
 * rail, reports it paid by a signed callback. A callback retried after a lost answer carries a
 * new `webhook-id` (the first may have been recorded): the top-up settles by its
 * provider_reference once, whichever callback arrives. The payer's number is the operation's
 * marker (one number per top-up).
 */
export async function topUps(count: number): Promise<void> {
  const secret = options.mobileMoneyCallbackSecret;
  if (!secret) throw new Error('topUps: configureWorkload({ mobileMoneyCallbackSecret }) first');
  const signer = new Webhook(secret);
  for (let i = 0; i < count; i += 1) {
    const payer = pick(USERS);
    const wallets = await setup(`wallets of ${payer}`, () => call('GET', '/wallets', token(payer)), 200);
    const wallet = ((wallets.body.data?.data ?? []) as Array<{ id: string; currency: string }>).find((w) => w.currency === 'XOF');
    if (!wallet) throw new Error(`${payer} has no XOF wallet`);
    const marker = `+22507${String(crypto.randomInt(10_000_000)).padStart(7, '0')}`;
    const key = crypto.randomUUID();
    const created = await operation({ kind: 'top_up', marker }, () =>
      call('POST', `/wallets/${wallet.id}/top-ups`, token(payer), { amount: 100 + crypto.randomInt(900), method: 'mobile_money', provider: 'orange_money', msisdn: marker }, key),
    );
    state.progress += 1;
    const reference = created.answer?.body.data?.provider_reference;
    if (created.outcome !== 'acknowledged' || typeof reference !== 'string') continue;
    const body = JSON.stringify({ provider_reference: reference, status: 'succeeded' });
    const settled = await operation({ kind: 'top_up_settlement', marker }, () => {
      const id = `msg_${crypto.randomUUID()}`;
      const at = new Date();
      const headers = { 'webhook-id': id, 'webhook-timestamp': String(Math.floor(at.getTime() / 1000)), 'webhook-signature': signer.sign(id, at, body) };
      return call('POST', '/rails/mobile-money/callbacks', undefined, JSON.parse(body), undefined, headers);
    });
    // Settled, but reversed (the wallet's limits refused the credit): nothing may be credited.
    if (settled.outcome === 'acknowledged' && settled.answer?.body.data?.status !== 'succeeded') {
      const entry = JOURNAL.find((e) => e.kind === 'top_up_settlement' && e.marker === marker);
      if (entry) entry.outcome = 'refused';
    }
    state.progress += 1;
  }
}

/** A setup step that is no money operation: tried again after a 5xx or a lost answer, not journaled. */
export async function setup(what: string, send: () => Promise<Answer>, expected: number): Promise<Answer> {
  for (let attempt = 1; attempt <= 10; attempt += 1) {
    const answer = await send().catch(() => undefined);
    if (answer && answer.status < 500) {
      // A 409 after a lost answer: the first try had done it (already invited, joined, started).
      if (answer.status === expected || (attempt > 1 && answer.status === 409)) return answer;
      throw new Error(`${what}: ${answer.status} ${answer.body.error}`);
    }
    await sleep(300 * attempt);
  }
  throw new Error(`${what}: no answer after 10 tries`);
}

/**
 * The workload logs in and pays from one client address: a real deployment's per-IP limits would
 * refuse it, which is not what a drill is about. Every drill's instances take these.
 */
export const DRILL_RATE_LIMITS = {
  RATE_LIMIT_AUTHENTICATED: '100000',
  RATE_LIMIT_ANONYMOUS: '100000',
  RATE_LIMIT_LOGIN: '1000',
  RATE_LIMIT_LOGIN_PER_IP: '1000',
} as const;

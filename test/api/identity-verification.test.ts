import { Writable } from 'node:stream';
import pino from 'pino';
import request from 'supertest';
import { beforeAll, describe, expect, it } from 'vitest';
import { memoryRateLimitBackend } from '../../src/http/rate-limit';
import { identityJobs } from '../../src/modules/identity';
import { testConfig, composeTestApp, type App } from '../support/app';
import { testKnex } from '../support/database';
import { createCaller, type TestCaller } from '../support/factories';
import { startTestJobs, until } from '../support/jobs';

/** Personal data submitted in these tests: none of it may appear in a log line, an event, an error body or a database column. */
const FIRST_NAME = 'Aminata-Pii-Marker';
const LAST_NAME = 'Kouyate-Pii-Marker';
const BIRTH = '1987-03-21';

let app: App;
const lines: string[] = [];
let clockOffsetMs = 0;

beforeAll(async () => {
  // The app's logger at trace level into memory: every line it writes is searched for personal data.
  const capture = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(...chunk.toString().split('\n').filter(Boolean));
      done();
    },
  });
  const config = testConfig({ LOG_LEVEL: 'trace' });
  app = composeTestApp({ config, knex: testKnex(), logger: pino({ level: 'trace' }, capture), rateLimitBackend: memoryRateLimitBackend(), now: () => new Date(Date.now() + clockOffsetMs) });
  await app.services.ready();
});

const JPEG = Buffer.concat([Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10]), Buffer.from('JFIF scan of an identity card')]);
const PNG = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), Buffer.from('selfie pixels')]);

function details(idNumber: string) {
  return { id_type: 'national_id', id_number: idNumber, first_name: FIRST_NAME, last_name: LAST_NAME, date_of_birth: BIRTH, nationality: 'CI' };
}

async function startSession(caller: TestCaller, tier: 'tier_1' | 'tier_2' = 'tier_1'): Promise<string> {
  const res = await request(app).post('/api/identity/verification-sessions').set(caller.auth).send({ tier });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  expect(res.body.data).toMatchObject({ object: 'verification_session', tier, status: 'requires_input', last_error: null });
  expect(new Date(res.body.data.expires_at).getTime() - new Date(res.body.data.created_at).getTime()).toBe(24 * 3600 * 1000);
  return res.body.data.id as string;
}

async function submit(caller: TestCaller, id: string, idNumber: string) {
  return request(app).post(`/api/identity/verification-sessions/${id}/submit`).set(caller.auth).send(details(idNumber));
}

/** What the processing job does, run once (the job-queue test below runs it through pg-boss). */
async function runProvider(): Promise<void> {
  await app.services.identity.processDue();
}

async function session(caller: TestCaller, id: string) {
  const res = await request(app).get(`/api/identity/verification-sessions/${id}`).set(caller.auth);
  expect(res.status).toBe(200);
  return res.body.data as { status: string; last_error: { code: string; reason: string } | null; allowed_actions: string[]; requirements: string[] };
}

function assertNoPii(text: string, idNumber: string): void {
  for (const value of [FIRST_NAME, LAST_NAME, BIRTH, idNumber]) expect(text).not.toContain(value);
}

describe('identity verification sessions (sandbox provider)', () => {
  it('an ID number ending 0000 is verified on the job, not in the request: tier_1, events with status and tier only', async () => {
    const caller = await createCaller(app);
    const id = await startSession(caller);
    const submitted = await submit(caller, id, 'CI0012340000');
    expect(submitted.status).toBe(200);
    expect(submitted.body.data.status).toBe('processing');
    expect((await session(caller, id)).status).toBe('processing');
    await runProvider();
    expect((await session(caller, id)).status).toBe('verified');
    const me = await request(app).get('/api/me').set(caller.auth);
    expect(me.body.data).toMatchObject({ tier: 'tier_1', verification_status: 'verified' });

    const events = await request(app).get('/api/events').set(caller.auth);
    expect(events.status).toBe(200);
    const types = (events.body.data.data as Array<{ type: string }>).map((e) => e.type);
    expect(types).toEqual(['user.tier_updated', 'identity.verification_session.verified', 'identity.verification_session.processing']);
    const tier = events.body.data.data[0];
    expect(tier.data).toEqual({ object: { id: caller.user.id, object: 'user', tier: 'tier_1', previous_tier: 'tier_0' }, previous_status: null });
    expect(events.body.data.data[1].data).toEqual({ object: { id, object: 'verification_session', tier: 'tier_1', status: 'verified' }, previous_status: 'processing' });
    assertNoPii(JSON.stringify(events.body), 'CI0012340000');
  });

  it('an ID number ending 1111 comes back requires_input with document_unreadable, and can be submitted again', async () => {
    const caller = await createCaller(app);
    const id = await startSession(caller);
    expect((await submit(caller, id, 'CI0099991111')).status).toBe(200);
    await runProvider();
    const back = await session(caller, id);
    expect(back.status).toBe('requires_input');
    expect(back.last_error?.code).toBe('document_unreadable');
    expect(back.allowed_actions).toEqual(['submit', 'cancel']);
    expect((await submit(caller, id, 'CI0099990000')).body.data).toMatchObject({ status: 'processing', last_error: null });
    await runProvider();
    expect((await session(caller, id)).status).toBe('verified');
  });

  it('an ID number ending 2222 goes to needs_review; an administrator approves it and is named as reviewer', async () => {
    const caller = await createCaller(app);
    const admin = await createCaller(app, {}, { isAdmin: true });
    const id = await startSession(caller);
    await submit(caller, id, 'CI0055552222');
    await runProvider();
    expect((await session(caller, id)).status).toBe('needs_review');
    const queue = await request(app).get('/api/admin/verification-sessions?status=needs_review&limit=100').set(admin.auth);
    expect(queue.status).toBe(200);
    const listed = (queue.body.data.data as Array<{ id: string; allowed_actions: string[]; user_id: string }>).find((s) => s.id === id);
    expect(listed).toMatchObject({ user_id: caller.user.id, allowed_actions: ['approve', 'reject'] });
    assertNoPii(JSON.stringify(queue.body), 'CI0055552222');

    const notAdmin = await request(app).post(`/api/admin/verification-sessions/${id}/approve`).set(caller.auth).send({});
    expect(notAdmin.status).toBe(403);
    expect(notAdmin.body.error).toBe('InsufficientRole');
    const approved = await request(app).post(`/api/admin/verification-sessions/${id}/approve`).set(admin.auth).send({ note: 'Checked.' });
    expect(approved.status).toBe(200);
    expect(approved.body.data).toMatchObject({ status: 'verified', review: { decision: 'approved', reviewer_user_id: admin.user.id, note: 'Checked.' } });
    expect((await request(app).get('/api/me').set(caller.auth)).body.data.tier).toBe('tier_1');
  });

  it('a rejection with retry allowed asks for input again; a final one refuses new sessions', async () => {
    const caller = await createCaller(app);
    const admin = await createCaller(app, {}, { isAdmin: true });
    const id = await startSession(caller);
    await submit(caller, id, 'CI0055552222');
    await runProvider();
    const retry = await request(app).post(`/api/admin/verification-sessions/${id}/reject`).set(admin.auth).send({ reason_code: 'watchlist_match', rejection: 'retry_allowed' });
    expect(retry.status).toBe(200);
    // The person is never told of a watch-list match.
    expect((await session(caller, id)).last_error).toEqual({ code: 'verification_failed', reason: expect.any(String) });
    await submit(caller, id, 'CI0055552222');
    await runProvider();
    const final = await request(app).post(`/api/admin/verification-sessions/${id}/reject`).set(admin.auth).send({ reason_code: 'suspected_fraud', rejection: 'final', note: 'Forged.' });
    expect(final.body.data).toMatchObject({ status: 'rejected', review: { reviewer_user_id: admin.user.id, rejection: 'final', reason_code: 'suspected_fraud' } });
    const again = await request(app).post('/api/identity/verification-sessions').set(caller.auth).send({ tier: 'tier_1' });
    expect(again.status).toBe(422);
    expect(again.body.error).toBe('VerificationRefused');
  });

  it('an administrator cannot review their own session (403 ConflictOfInterest)', async () => {
    const admin = await createCaller(app, {}, { isAdmin: true });
    const id = await startSession(admin);
    await submit(admin, id, 'CI0077772222');
    await runProvider();
    const own = await request(app).post(`/api/admin/verification-sessions/${id}/approve`).set(admin.auth).send({});
    expect(own.status).toBe(403);
    expect(own.body.error).toBe('ConflictOfInterest');
    const rejectOwn = await request(app).post(`/api/admin/verification-sessions/${id}/reject`).set(admin.auth).send({ reason_code: 'other', rejection: 'final' });
    expect(rejectOwn.body.error).toBe('ConflictOfInterest');
    expect((await session(admin, id)).status).toBe('needs_review');
  });

  it('one session at a time; a cancel ends it; a submitted session cannot be canceled; other people see 404', async () => {
    const caller = await createCaller(app);
    const stranger = await createCaller(app);
    const id = await startSession(caller);
    const second = await request(app).post('/api/identity/verification-sessions').set(caller.auth).send({ tier: 'tier_2' });
    expect(second.status).toBe(409);
    expect(second.body).toMatchObject({ error: 'VerificationSessionOpen', details: { session_id: id } });
    expect((await request(app).get(`/api/identity/verification-sessions/${id}`).set(stranger.auth)).status).toBe(404);
    const canceled = await request(app).post(`/api/identity/verification-sessions/${id}/cancel`).set(caller.auth).send({});
    expect(canceled.body.data.status).toBe('canceled');
    const id2 = await startSession(caller);
    await submit(caller, id2, 'CI0000000000');
    const late = await request(app).post(`/api/identity/verification-sessions/${id2}/cancel`).set(caller.auth).send({});
    expect(late.status).toBe(409);
    expect(late.body).toMatchObject({ error: 'InvalidVerificationSessionState', details: { status: 'processing', action: 'cancel', allowed_actions: [] } });
  });

  it('a session left unsubmitted for 24 hours is canceled by the expiry job', async () => {
    const caller = await createCaller(app);
    const id = await startSession(caller);
    clockOffsetMs = 24 * 3600 * 1000 + 1000;
    try {
      const expired = await submit(caller, id, 'CI0012340000');
      expect(expired.status).toBe(409);
      expect(expired.body.error).toBe('VerificationSessionExpired');
      await app.services.identity.expireDue();
    } finally {
      clockOffsetMs = 0;
    }
    expect(await session(caller, id)).toMatchObject({ status: 'canceled', last_error: { code: 'session_expired' } });
  });
});

describe('tier_2 documents', () => {
  async function upload(caller: TestCaller, id: string, kind: string, bytes: Buffer, filename = 'scan.jpg') {
    return request(app).post(`/api/identity/verification-sessions/${id}/documents`).set(caller.auth).field('kind', kind).attach('file', bytes, { filename, contentType: 'image/jpeg' });
  }

  it('takes a JPEG and a PNG by their bytes, needs both before submit, and verifies to tier_2', async () => {
    const caller = await createCaller(app);
    const id = await startSession(caller, 'tier_2');
    const missing = await submit(caller, id, 'CI0012340000');
    expect(missing.status).toBe(422);
    expect(missing.body).toMatchObject({ error: 'DocumentsMissing', details: { missing: ['id_front', 'selfie'] } });
    const front = await upload(caller, id, 'id_front', JPEG);
    expect(front.status, JSON.stringify(front.body)).toBe(200);
    expect(front.body.data.documents).toEqual([{ kind: 'id_front', content_type: 'image/jpeg', size_bytes: JPEG.length, uploaded_at: expect.any(String) }]);
    expect(front.body.data.requirements).toEqual(['selfie', 'identity_details']);
    // Named .jpg and declared image/jpeg, but its bytes are a PNG: it is stored as what it is.
    const selfie = await upload(caller, id, 'selfie', PNG, 'selfie.jpg');
    expect(selfie.body.data.documents.find((d: { kind: string }) => d.kind === 'selfie').content_type).toBe('image/png');
    expect((await submit(caller, id, 'CI0012340000')).status).toBe(200);
    await runProvider();
    expect((await session(caller, id)).status).toBe('verified');
    expect((await request(app).get('/api/me').set(caller.auth)).body.data.tier).toBe('tier_2');
  });

  it('refuses bytes that are not an image or a PDF (422), whatever the name, and a file over 5 MB: 5,000,000 bytes pass, 5,000,001 are 413', async () => {
    const caller = await createCaller(app);
    const id = await startSession(caller, 'tier_2');
    const script = await upload(caller, id, 'id_front', Buffer.from('#!/bin/sh\necho not a passport\n'), 'passport.jpg');
    expect(script.status).toBe(422);
    expect(script.body.error).toBe('UnsupportedDocumentType');
    const big = Buffer.alloc(5_000_001);
    JPEG.copy(big);
    const tooLarge = await upload(caller, id, 'id_front', big);
    expect(tooLarge.status).toBe(413);
    expect(tooLarge.body.error).toBe('PayloadTooLarge');
    expect((await session(caller, id)).requirements).toEqual(['id_front', 'selfie', 'identity_details']);
    const atLimit = await upload(caller, id, 'selfie', big.subarray(0, 5_000_000));
    expect(atLimit.status, JSON.stringify(atLimit.body)).toBe(200);
    expect(atLimit.body.data.documents).toEqual([{ kind: 'selfie', content_type: 'image/jpeg', size_bytes: 5_000_000, uploaded_at: expect.any(String) }]);
    const json = await request(app).post(`/api/identity/verification-sessions/${id}/documents`).set(caller.auth).send({ kind: 'id_front', file: 'aGVsbG8=' });
    expect(json.status).toBe(415);
  });

  it('a tier_1 session takes no documents', async () => {
    const caller = await createCaller(app);
    const id = await startSession(caller, 'tier_1');
    const res = await upload(caller, id, 'id_front', JPEG);
    expect(res.status).toBe(422);
    expect(res.body.error).toBe('DocumentsNotRequired');
  });
});

describe('personal data', () => {
  it('is ciphertext in the database columns, and absent from every log line and error body', async () => {
    const caller = await createCaller(app);
    const idNumber = 'CI0031415926';
    const before = lines.length;
    const id = await startSession(caller, 'tier_2');
    await request(app).post(`/api/identity/verification-sessions/${id}/documents`).set(caller.auth).field('kind', 'id_front').attach('file', Buffer.concat([JPEG, Buffer.from(LAST_NAME)]), { filename: `${LAST_NAME}.jpg` });
    await request(app).post(`/api/identity/verification-sessions/${id}/documents`).set(caller.auth).field('kind', 'selfie').attach('file', PNG, { filename: 'selfie.png' });
    // Refused requests carrying personal data: a bad date, an unknown field, a wrong state.
    const bad = await request(app).post(`/api/identity/verification-sessions/${id}/submit`).set(caller.auth).send({ ...details(idNumber), date_of_birth: '1987-02-30' });
    expect(bad.status).toBe(400);
    const extra = await request(app).post(`/api/identity/verification-sessions/${id}/submit`).set(caller.auth).send({ ...details(idNumber), note: FIRST_NAME });
    expect(extra.status).toBe(400);
    expect((await submit(caller, id, idNumber)).status).toBe(200);
    const again = await submit(caller, id, idNumber);
    expect(again.status).toBe(409);
    await runProvider();
    for (const body of [bad.body, extra.body, again.body]) assertNoPii(JSON.stringify(body), idNumber);

    const row = (await testKnex()('verification_sessions').where({ id }).first()) as Record<string, unknown>;
    for (const column of ['id_number_sealed', 'first_name_sealed', 'last_name_sealed', 'date_of_birth_sealed', 'nationality_sealed']) {
      expect(row[column], column).toMatch(/^[A-Za-z0-9_-]+:[A-Za-z0-9_-]+$/);
    }
    assertNoPii(JSON.stringify(row), idNumber);
    const documents = (await testKnex()('uploaded_documents').where({ owner_type: 'user', owner_id: caller.user.id }).select('ciphertext')) as Array<{ ciphertext: Buffer }>;
    expect(documents).toHaveLength(2);
    for (const document of documents) expect(document.ciphertext.includes(Buffer.from(LAST_NAME))).toBe(false);

    const written = lines.slice(before);
    expect(written.some((line) => line.includes(`/identity/verification-sessions/${id}/submit`))).toBe(true);
    assertNoPii(written.join('\n'), idNumber);
    const events = await request(app).get('/api/events?type=identity.%2A').set(caller.auth);
    expect(events.status).toBe(200);
    expect(events.body.data.data.length).toBeGreaterThanOrEqual(2);
    assertNoPii(JSON.stringify(events.body), idNumber);
  });
});

describe('POST /me/close', () => {
  it('refuses an account with money in a wallet (409 AccountNotEmpty)', async () => {
    const caller = await createCaller(app, { XOF: 5_000n });
    const res = await request(app).post('/api/me/close').set(caller.auth).send({});
    expect(res.status).toBe(409);
    expect(res.body).toMatchObject({ error: 'AccountNotEmpty', details: { wallets_with_balance: ['XOF'], open_escrows: 0, open_tontines: 0 } });
  });

  it('closes an empty account: sessions ended, identifiers and identity data erased, decisions kept', async () => {
    const caller = await createCaller(app);
    const id = await startSession(caller, 'tier_2');
    await request(app).post(`/api/identity/verification-sessions/${id}/documents`).set(caller.auth).field('kind', 'id_front').attach('file', JPEG, { filename: 'a.jpg' });
    await request(app).post(`/api/identity/verification-sessions/${id}/documents`).set(caller.auth).field('kind', 'selfie').attach('file', PNG, { filename: 'b.png' });
    await submit(caller, id, 'CI0012340000');
    await runProvider();
    const phone = await request(app).post('/api/auth/login').set('User-Agent', 'ClosingPhone/1.0').send({ identifier: caller.user.email, password: caller.user.password });
    expect(phone.status).toBe(200);
    expect(await testKnex()('sessions').where({ id: phone.body.data.session_id }).first('user_agent')).toEqual({ user_agent: 'ClosingPhone/1.0' });
    const closed = await request(app).post('/api/me/close').set(caller.auth).send({});
    expect(closed.status).toBe(200);
    expect(closed.body.data).toMatchObject({ id: caller.user.id, object: 'user', status: 'closed' });
    expect((await request(app).get('/api/me').set(caller.auth)).status).toBe(401);
    const login = await request(app).post('/api/auth/login').send({ identifier: caller.user.email, password: caller.user.password });
    expect(login.status).toBe(401);
    const user = (await testKnex()('users').where({ id: caller.user.id }).first()) as Record<string, unknown>;
    expect(user).toMatchObject({ status: 'closed', email: null, phone: null, display_name: null, country: null, tier: 'tier_2' });
    const sessions = (await testKnex()('sessions').where({ user_id: caller.user.id }).select('ip', 'user_agent', 'revoked_at')) as Array<Record<string, unknown>>;
    expect(sessions.length).toBeGreaterThan(0);
    for (const row of sessions) expect(row).toMatchObject({ ip: null, user_agent: null, revoked_at: expect.any(Date) });
    const row = (await testKnex()('verification_sessions').where({ id }).first()) as Record<string, unknown>;
    expect(row).toMatchObject({ status: 'verified', id_number_sealed: null, first_name_sealed: null, date_of_birth_sealed: null });
    expect(row.personal_data_erased_at).not.toBeNull();
    const documents = (await testKnex()('uploaded_documents').where({ owner_id: caller.user.id }).select('ciphertext', 'erased_at')) as Array<{ ciphertext: Buffer | null; erased_at: Date | null }>;
    expect(documents.length).toBe(2);
    expect(documents.every((d) => d.ciphertext === null && d.erased_at !== null)).toBe(true);
  });
});

describe('processing on the job queue', () => {
  it('a submitted session is settled by the identity.process-submitted job', async () => {
    const caller = await createCaller(app);
    const id = await startSession(caller);
    await submit(caller, id, 'CI0024680000');
    const jobs = await startTestJobs();
    const tasks = identityJobs(app.services.identity, { processEverySeconds: 1, expireEverySeconds: 3600 }, pino({ level: 'silent' }));
    for (const task of tasks) await jobs.every(task);
    await until(async () => (await session(caller, id)).status === 'verified');
  });
});

import fs from 'node:fs';
import path from 'node:path';
import request from 'supertest';
import { beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type App } from '../support/app';
import { createCaller, type TestCaller } from '../support/factories';
import { activeTontine, contribute, createTontine, enrol } from '../support/tontines';

/**
 * `current_contributions` of a tontine's detail, per status, as the contract's description of
 * the field says it (the description is read from the bundled contract, so the two cannot drift).
 */
let app: App;
const description = (() => {
  const bundled = JSON.parse(fs.readFileSync(path.join(__dirname, '../../generated/openapi.bundled.json'), 'utf8')) as {
    components: { schemas: { Tontine: { properties: { current_contributions: { description: string } } } } };
  };
  return bundled.components.schemas.Tontine.properties.current_contributions.description;
})();

beforeAll(async () => {
  app = await buildTestApp();
});

const statuses = (res: request.Response) => (res.body.data.current_contributions as { status: string }[]).map((c) => c.status);
const action = (id: string, name: string, who: TestCaller) => request(app).post(`/api/tontines/${id}/${name}`).set(who.auth);
const detail = (id: string, who: TestCaller) => request(app).get(`/api/tontines/${id}`).set(who.auth).expect(200);

describe('current_contributions follows its contract description for every status', () => {
  it('the description says what each status shows', () => {
    expect(description).toContain('`forming`: empty');
    expect(description).toContain('`completed`: empty');
    expect(description).toMatch(/`canceled`[^.]*dissolved by an administrator/);
    expect(description).toContain('as `refunded`');
  });

  it('forming: empty; active: the open cycle; completed: empty (no cycle runs)', async () => {
    const organizer = await createCaller(app, { XOF: 10_000n });
    const member = await createCaller(app, { XOF: 10_000n });
    const tontine = await createTontine(app, organizer, { contribution_amount: 1000, max_members: 2 });
    await enrol(app, tontine.id, organizer, [member]);
    expect(statuses(await detail(tontine.id, organizer))).toEqual([]);
    await action(tontine.id, 'start', organizer).expect(200);
    await contribute(app, tontine.id, member).expect(200);
    const active = await detail(tontine.id, organizer);
    expect(active.body.data.status).toBe('active');
    expect(statuses(active)).toEqual(['pending', 'paid']);
    // The last contribution of the last cycle pays out and completes the tontine.
    await contribute(app, tontine.id, organizer).expect(200);
    await contribute(app, tontine.id, member).expect(200);
    await contribute(app, tontine.id, organizer).expect(200);
    const completed = await detail(tontine.id, member);
    expect(completed.body.data).toMatchObject({ status: 'completed', current_contributions: [] });
    expect(completed.body.data.cycles.map((c: { status: string }) => c.status)).toEqual(['paid_out', 'paid_out']);
  });

  it('canceled while active: the cycle open at the end, payments refunded, unpaid members pending', async () => {
    const organizer = await createCaller(app, { XOF: 10_000n });
    const member = await createCaller(app, { XOF: 10_000n });
    const tontine = await activeTontine(app, organizer, [member], { contribution_amount: 1000, max_members: 3 });
    await contribute(app, tontine.id, member).expect(200);
    const canceled = await action(tontine.id, 'cancel', organizer).expect(200);
    expect(canceled.body.data.status).toBe('canceled');
    expect(statuses(canceled)).toEqual(['pending', 'refunded']);
    expect(statuses(await detail(tontine.id, member))).toEqual(['pending', 'refunded']);
  });

  it('canceled while forming: empty', async () => {
    const organizer = await createCaller(app, { XOF: 10_000n });
    const tontine = await createTontine(app, organizer);
    const canceled = await action(tontine.id, 'cancel', organizer).expect(200);
    expect(canceled.body.data).toMatchObject({ status: 'canceled', current_contributions: [] });
  });
});

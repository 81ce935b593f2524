import crypto from 'node:crypto';
import request from 'supertest';
import { beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type App } from '../support/app';
import { createApiKey } from '../support/api-keys';
import { testKnex } from '../support/database';
import { accessTokenFor, bearer, businessPath, createMember, createOrgAccount, createOrganization, type TestOrgAccount } from '../support/factories';
import { balanceOf, expectLedgerInvariants } from '../support/ledger-invariants';
import { moveMoney } from '../support/org-account-postings';

let app: App;

beforeAll(async () => {
  app = await buildTestApp();
});

interface PayoutOrg {
  id: string;
  owner: string;
  admin: string;
  finance: string;
  account: TestOrgAccount;
}

/** An organisation (verified unless told) with an owner, an admin, a finance manager and an account holding `funds`. */
async function payoutOrg(funds: bigint, options: { verified?: boolean; currency?: string } = {}): Promise<PayoutOrg> {
  const org = await createOrganization();
  if (options.verified ?? true) await testKnex()('organizations').where({ id: org.id }).update({ verification_status: 'verified', verification_decided_at: new Date() });
  const account = await createOrgAccount(org, { currency: options.currency ?? 'XOF' });
  if (funds > 0n) await moveMoney(account, funds);
  const [owner, admin, finance] = await Promise.all(['owner', 'admin', 'finance_manager'].map(async (role) => accessTokenFor(app, await createMember(org, role as 'owner'))));
  return { id: org.id, owner: owner as string, admin: admin as string, finance: finance as string, account };
}

const mobileMoney = { type: 'mobile_money', provider: 'orange_money', msisdn: '+2250700009999' };

function payout(org: PayoutOrg, amount: number, auth: Record<string, string> = bearer(org.finance), key = crypto.randomUUID()) {
  return request(app).post(`${businessPath(org.id)}/payouts`).set(auth).set('Idempotency-Key', key).send({ account_id: org.account.id, amount, destination: mobileMoney, reference: 'SUPPLIER-1' });
}

function act(org: PayoutOrg, payoutId: string, action: 'approve' | 'cancel', token: string) {
  return request(app).post(`${businessPath(org.id)}/payouts/${payoutId}/${action}`).set(bearer(token)).send();
}

const balance = (org: PayoutOrg) => balanceOf(testKnex(), org.account.ledgerAccountId);

describe('POST /business/organizations/{orgId}/payouts', () => {
  it('below the threshold pays out at once: the money leaves the account, payout.created and payout.paid are recorded', async () => {
    const org = await payoutOrg(500_000n);
    const paid = await payout(org, 200_000);
    expect(paid.status, JSON.stringify(paid.body)).toBe(201);
    expect(paid.body.data).toMatchObject({ object: 'payout', status: 'paid', amount_minor: '200000', currency: 'XOF', requires_approval: false, destination: mobileMoney, reference: 'SUPPLIER-1', approved_by: null });
    expect(await balance(org)).toBe(300_000n);
    const types = await testKnex()('events').where({ subject_id: paid.body.data.id }).orderBy('sequence').pluck('type');
    expect(types).toEqual(['payout.created', 'payout.paid']);
    const shown = await request(app).get(`${businessPath(org.id)}/payouts/${paid.body.data.id}`).set(bearer(org.owner));
    expect(shown.body.data.status).toBe('paid');
    await expectLedgerInvariants(testKnex());
  });

  it('a payout the rail declines fails and its money returns to the account', async () => {
    const org = await payoutOrg(500_000n);
    const failed = await payout(org, 100_013);
    expect(failed.status).toBe(201);
    expect(failed.body.data).toMatchObject({ status: 'failed', failure_code: 'payout_declined' });
    expect(await balance(org)).toBe(500_000n);
    await expectLedgerInvariants(testKnex());
  });

  it('an organisation that is not verified is refused 403 OrganizationNotVerified and nothing moves', async () => {
    const org = await payoutOrg(500_000n, { verified: false });
    const refused = await payout(org, 1000);
    expect(refused.status).toBe(403);
    expect(refused.body.error).toBe('OrganizationNotVerified');
    expect(await balance(org)).toBe(500_000n);
  });

  it('two payouts racing for the same money: one is paid, the other refused 409 InsufficientFunds', async () => {
    const org = await payoutOrg(100_000n);
    const answers = await Promise.all([payout(org, 60_000), payout(org, 60_000)]);
    expect(answers.map((a) => a.status).sort()).toEqual([201, 409]);
    expect(answers.find((a) => a.status === 409)?.body.error).toBe('InsufficientFunds');
    expect(await balance(org)).toBe(40_000n);
    await expectLedgerInvariants(testKnex());
  });

  it('a replayed Idempotency-Key answers 409 IdempotencyKeyAlreadyProcessed naming the payout; the money moves once', async () => {
    const org = await payoutOrg(100_000n);
    const key = crypto.randomUUID();
    const first = await payout(org, 10_000, bearer(org.finance), key);
    const again = await payout(org, 10_000, bearer(org.finance), key);
    expect(again.status).toBe(409);
    expect(again.body.details).toMatchObject({ resource_type: 'payout', resource_id: first.body.data.id, status: 'paid' });
    expect(await balance(org)).toBe(90_000n);
  });

  it('an invalid IBAN is refused 400 and nothing moves', async () => {
    const org = await payoutOrg(100_000n);
    const refused = await request(app)
      .post(`${businessPath(org.id)}/payouts`)
      .set(bearer(org.owner))
      .set('Idempotency-Key', crypto.randomUUID())
      .send({ account_id: org.account.id, amount: 1000, destination: { type: 'bank_account', iban: 'CI93CI0080111301134291200588', holder_name: 'Fournitures SARL' } });
    expect(refused.status).toBe(400);
    expect(await balance(org)).toBe(100_000n);
  });
});

describe('approval of payouts at or above the threshold', () => {
  it('one franc under the threshold is paid at once; at the threshold it waits in pending_approval with its money reserved', async () => {
    const org = await payoutOrg(3_000_000n);
    const under = await payout(org, 999_999);
    expect(under.body.data).toMatchObject({ status: 'paid', requires_approval: false });
    const at = await payout(org, 1_000_000);
    expect(at.status).toBe(201);
    expect(at.body.data).toMatchObject({ status: 'pending_approval', requires_approval: true });
    expect(await balance(org)).toBe(3_000_000n - 999_999n - 1_000_000n);
  });

  it('the requester cannot approve it (403 SameApprover); a finance manager may not approve; another admin does and it is paid', async () => {
    const org = await payoutOrg(2_000_000n);
    const asked = await payout(org, 1_500_000, bearer(org.admin));
    const id = asked.body.data.id as string;
    const self = await act(org, id, 'approve', org.admin);
    expect(self.status).toBe(403);
    expect(self.body.error).toBe('SameApprover');
    expect((await act(org, id, 'approve', org.finance)).status).toBe(403);
    const approved = await act(org, id, 'approve', org.owner);
    expect(approved.status, JSON.stringify(approved.body)).toBe(200);
    expect(approved.body.data).toMatchObject({ status: 'paid', approved_by: expect.any(String) });
    const again = await act(org, id, 'approve', org.owner);
    expect(again.status).toBe(409);
    expect(again.body).toMatchObject({ error: 'InvalidPayoutState', details: { status: 'paid', action: 'approve', allowed_from: ['pending_approval'] } });
    expect(await balance(org)).toBe(500_000n);
    const types = await testKnex()('events').where({ subject_id: id }).orderBy('sequence').pluck('type');
    expect(types).toEqual(['payout.created', 'payout.approved', 'payout.paid']);
    await expectLedgerInvariants(testKnex());
  });

  it('a canceled payout returns its money; it cannot be approved afterwards', async () => {
    const org = await payoutOrg(2_000_000n);
    const asked = await payout(org, 1_200_000);
    expect(await balance(org)).toBe(800_000n);
    const canceled = await act(org, asked.body.data.id, 'cancel', org.finance);
    expect(canceled.status).toBe(200);
    expect(canceled.body.data).toMatchObject({ status: 'canceled', settled_at: expect.any(String) });
    expect(await balance(org)).toBe(2_000_000n);
    expect((await act(org, asked.body.data.id, 'approve', org.owner)).body.error).toBe('InvalidPayoutState');
    await expectLedgerInvariants(testKnex());
  });

  it('the owner lowers the threshold; an admin may not change it; EUR uses the equivalent at the fixed parity', async () => {
    const org = await payoutOrg(1_000_000n);
    const settings = `${businessPath(org.id)}/payout-settings`;
    expect((await request(app).get(settings).set(bearer(org.finance))).body.data).toEqual({
      object: 'payout_settings',
      approval_threshold_xof: 1_000_000,
      approval_thresholds: { XOF: '1000000', EUR: '152449', USD: '166667' },
    });
    expect((await request(app).patch(settings).set(bearer(org.admin)).send({ approval_threshold_xof: 1 })).status).toBe(403);
    const lowered = await request(app).patch(settings).set(bearer(org.owner)).send({ approval_threshold_xof: 500_000 });
    expect(lowered.body.data.approval_threshold_xof).toBe(500_000);
    expect((await payout(org, 499_999)).body.data.status).toBe('paid');
    expect((await payout(org, 500_000)).body.data.status).toBe('pending_approval');

    const eur = await payoutOrg(500_000n, { currency: 'EUR' });
    expect((await payout(eur, 1524.48)).body.data.status).toBe('paid');
    expect((await payout(eur, 1524.49)).body.data.status).toBe('pending_approval');
  });
});

describe('payouts by API key and the list', () => {
  it('a key with payouts:write pays out; payments:write is not enough; a key never approves', async () => {
    const org = await payoutOrg(3_000_000n);
    const writer = await createApiKey(app, { id: org.id }, ['payouts:write']);
    const other = await createApiKey(app, { id: org.id }, ['payments:write']);
    expect((await payout(org, 5000, writer.auth)).status).toBe(201);
    const refused = await payout(org, 5000, other.auth);
    expect(refused.status).toBe(403);
    expect(refused.body.error).toBe('InsufficientScope');
    const big = await payout(org, 1_000_000, writer.auth);
    expect(big.body.data).toMatchObject({ status: 'pending_approval', requested_by: null });
    const byKey = await request(app).post(`${businessPath(org.id)}/payouts/${big.body.data.id}/approve`).set(writer.auth).send();
    expect(byKey.status).toBe(403);
    expect(byKey.body.error).toBe('ApiKeyNotAllowed');
  });

  it('lists the payouts newest first, a page at a time, and by status', async () => {
    const org = await payoutOrg(3_000_000n);
    const ids: string[] = [];
    for (const amount of [1000, 2000, 1_000_000]) ids.push((await payout(org, amount)).body.data.id);
    const first = await request(app).get(`${businessPath(org.id)}/payouts?limit=2`).set(bearer(org.owner));
    expect(first.body.data.data.map((p: { id: string }) => p.id)).toEqual([ids[2], ids[1]]);
    expect(first.body.data.has_more).toBe(true);
    const rest = await request(app).get(`${businessPath(org.id)}/payouts?limit=2&starting_after=${first.body.data.next_cursor}`).set(bearer(org.owner));
    expect(rest.body.data.data.map((p: { id: string }) => p.id)).toEqual([ids[0]]);
    const waiting = await request(app).get(`${businessPath(org.id)}/payouts?status=pending_approval`).set(bearer(org.owner));
    expect(waiting.body.data.data.map((p: { id: string }) => p.id)).toEqual([ids[2]]);
  });
});

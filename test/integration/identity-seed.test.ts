import fs from 'node:fs';
import path from 'node:path';
import type { Knex } from 'knex';
import { describe, expect, it } from 'vitest';
import {
  DEMO_INACTIVE_ORGANIZATION_NAME,
  DEMO_LOCKED_ORGANIZATION_NAME,
  DEMO_ORGANIZATION_NAME,
  DEMO_OTHER_ORGANIZATION_NAME,
  DEMO_PASSWORD,
  DEMO_USERS,
  findDemoOrganizationId,
  findDemoUserId,
  seedIdentity,
} from '../../src/seed/identity-seed';
import { accessRuleFor, OrganizationAccessService, OrganizationProfileRepository, presentOrganization } from '../../src/modules/organizations';
import { inRolledBackSeed } from '../support/seed';

describe('identity demo seed step', () => {
  it('creates one argon2id user per role in "Demo Trading SARL", all modules open', async () => {
    await inRolledBackSeed([seedIdentity], async (trx, services) => {
      const orgId = await findDemoOrganizationId(trx);
      const org = await trx('organizations').where({ id: orgId }).first('name', 'status');
      expect(org).toEqual({ name: DEMO_ORGANIZATION_NAME, status: 'active' });
      const modules = await trx('organization_modules').where({ organization_id: orgId }).orderBy('module').select('module', 'access');
      expect(modules.map((m: { access: string }) => m.access)).toEqual(['open', 'open', 'open', 'open']);
      const members = await trx('memberships as m')
        .join('users as u', 'u.id', 'm.user_id')
        .where({ 'm.organization_id': orgId })
        .select('u.email', 'm.role', 'm.status', 'u.password_hash', 'u.status as user_status');
      expect(members.map((m: { email: string; role: string }) => [m.email, m.role]).sort()).toEqual(DEMO_USERS.map((u) => [u.email, u.role]).sort());
      expect(DEMO_USERS.map((u) => u.role).sort()).toEqual(['admin', 'cashier', 'director', 'finance_manager', 'owner', 'representative']);
      for (const member of members as Array<{ email: string; status: string; password_hash: string; user_status: string }>) {
        expect(member.status).toBe('active');
        expect(member.user_status).toBe('active');
        expect(member.password_hash).toMatch(/^\$argon2id\$v=19\$m=19456,t=2,p=1\$/);
        expect(await services.passwords.verify(member.password_hash, DEMO_PASSWORD), member.email).toBe(true);
      }
      // Each user has a salt of its own: no two demo users share a hash.
      const hashes = (members as Array<{ password_hash: string }>).map((m) => m.password_hash);
      expect(new Set(hashes).size).toBe(hashes.length);
      expect(await findDemoUserId(trx, 'OWNER@demo.example')).toMatch(/^[0-9a-f-]{36}$/);
    });
  });

  it('puts the demo owner at tier_2 and every other demo user at tier_1; ops@ stays the platform administrator', async () => {
    await inRolledBackSeed([seedIdentity], async (trx) => {
      const rows = (await trx('users').select('email', 'tier', 'is_admin')) as Array<{ email: string; tier: string; is_admin: boolean }>;
      const byEmail = new Map(rows.map((row) => [row.email, row]));
      expect(byEmail.get('owner@demo.example')?.tier).toBe('tier_2');
      for (const email of ['admin@demo.example', 'finance@demo.example', 'cashier@demo.example', 'outsider@demo.example', 'ops@demo.example']) {
        expect(byEmail.get(email)?.tier, email).toBe('tier_1');
      }
      expect(rows.filter((row) => row.is_admin && row.email?.endsWith('@demo.example')).map((row) => row.email)).toEqual(['ops@demo.example']);
    });
  });

  it('makes the 404, 423 and 422 paths reachable for the demo owner', async () => {
    await inRolledBackSeed([seedIdentity], async (trx) => {
      const access = new OrganizationAccessService(trx as unknown as Knex);
      const owner = await findDemoUserId(trx, 'owner@demo.example');
      const demo = await findDemoOrganizationId(trx);
      const other = await findDemoOrganizationId(trx, DEMO_OTHER_ORGANIZATION_NAME);
      const locked = await findDemoOrganizationId(trx, DEMO_LOCKED_ORGANIZATION_NAME);
      const inactive = await findDemoOrganizationId(trx, DEMO_INACTIVE_ORGANIZATION_NAME);
      await expect(access.authorize(demo, owner, accessRuleFor('getOrCreateCheckout')!)).resolves.toMatchObject({ role: 'owner' });
      await expect(access.authorize(other, owner, accessRuleFor('listPaymentLinks')!)).rejects.toMatchObject({ code: 'NotFound' });
      await expect(access.authorize(locked, owner, accessRuleFor('getOrCreateCheckout')!)).rejects.toMatchObject({ code: 'ModuleLocked' });
      await expect(access.authorize(inactive, owner, accessRuleFor('updateNetworkStatus')!)).rejects.toMatchObject({ code: 'OrganizationInactive' });
      const demoUsers = await trx('users').whereIn('email', DEMO_USERS.map((u) => u.email)).pluck('id');
      const strangers = await trx('memberships').where({ organization_id: other }).whereIn('user_id', demoUsers).count<{ count: string }[]>('* as count');
      expect(Number(strangers[0]?.count)).toBe(0);
    });
  });

  it('the demo organisations are verified companies; Dormant Trading SARL stays inactive', async () => {
    await inRolledBackSeed([seedIdentity], async (trx) => {
      const profiles = new OrganizationProfileRepository(trx);
      const seen: Record<string, [string, string, string[]]> = {};
      for (const name of [DEMO_ORGANIZATION_NAME, DEMO_OTHER_ORGANIZATION_NAME, DEMO_LOCKED_ORGANIZATION_NAME, DEMO_INACTIVE_ORGANIZATION_NAME]) {
        const record = await profiles.find(await findDemoOrganizationId(trx, name));
        const view = presentOrganization(record!);
        seen[name] = [view.status, view.verification.status, view.verification.requirements.due];
        expect(view.verification.decided_at, name).not.toBeNull();
        expect(view.legal_form, name).toBe('company');
      }
      expect(seen).toEqual({
        [DEMO_ORGANIZATION_NAME]: ['active', 'verified', []],
        [DEMO_OTHER_ORGANIZATION_NAME]: ['active', 'verified', []],
        [DEMO_LOCKED_ORGANIZATION_NAME]: ['active', 'verified', []],
        [DEMO_INACTIVE_ORGANIZATION_NAME]: ['inactive', 'verified', []],
      });
    });
  });

  it('the README lists every demo login, its role and the password, as local-only', () => {
    const readme = fs.readFileSync(path.resolve(__dirname, '../../README.md'), 'utf8');
    const section = readme.slice(readme.indexOf('## Demo logins'));
    expect(section).toMatch(/local only/i);
    expect(section).toContain(DEMO_PASSWORD);
    expect(section).toContain(DEMO_ORGANIZATION_NAME);
    for (const user of DEMO_USERS) expect(section).toMatch(new RegExp(`${user.email.replace('.', '\\.')}\\s*\\|\\s*${user.role}`));
  });
});

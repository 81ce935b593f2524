import crypto from 'node:crypto';
import type { Knex } from 'knex';
import { MODULES, type ModuleAccess, type ModuleName, type Role } from '../contract';
import { sealDisplayName } from '../modules/auth';
import type { Services } from '../services';

/** Local demo data only (the README lists these logins). */
export const DEMO_PASSWORD = 'demo-password';
export const DEMO_ORGANIZATION_NAME = 'Demo Trading SARL';
export const DEMO_OTHER_ORGANIZATION_NAME = 'Other Company SA';
export const DEMO_LOCKED_ORGANIZATION_NAME = 'Locked Links SARL';
export const DEMO_INACTIVE_ORGANIZATION_NAME = 'Dormant Trading SARL';

export interface DemoUser {
  email: string;
  phone: string | null;
  role: Role;
}

/** One user per role in the demo organisation; the owner also logs in by telephone. */
export const DEMO_USERS: readonly DemoUser[] = [
  { email: 'owner@demo.example', phone: '+2250700000001', role: 'owner' },
  { email: 'admin@demo.example', phone: null, role: 'admin' },
  { email: 'finance@demo.example', phone: null, role: 'finance_manager' },
  { email: 'representative@demo.example', phone: null, role: 'representative' },
  { email: 'director@demo.example', phone: null, role: 'director' },
  { email: 'cashier@demo.example', phone: null, role: 'cashier' },
];

/** The owner of the other organisation (none of the demo users is a member there). */
export const DEMO_OUTSIDER_EMAIL = 'outsider@demo.example';

/** A platform administrator (users.is_admin): resolves escrow disputes; member of no organisation. */
export const DEMO_ADMINISTRATOR_EMAIL = 'ops@demo.example';

/** The identity tier of the demo owner: verified with documents, so no tier limit stands in the way of the demo. */
export const DEMO_OWNER_TIER = 'tier_2';
/** The tier of every other demo user (ops@ included): verified by identity number, without documents. */
export const DEMO_USER_TIER = 'tier_1';

function demoTier(email: string): string {
  return email === DEMO_USERS[0]?.email ? DEMO_OWNER_TIER : DEMO_USER_TIER;
}

const ALL_OPEN: Record<ModuleName, ModuleAccess> = Object.fromEntries(MODULES.map((m) => [m, 'open'])) as Record<ModuleName, ModuleAccess>;

async function insertOrganization(
  trx: Knex.Transaction,
  name: string,
  status: 'active' | 'inactive',
  modules: Partial<Record<ModuleName, ModuleAccess>>,
): Promise<string> {
  // The demo organisations are verified companies with a legal profile (their name is their legal name).
  const [org] = (await trx('organizations')
    .insert({
      name,
      status,
      legal_name: name,
      country: 'CI',
      registration_number: `CI-ABJ-2026-DEMO-${name.slice(0, 4).toUpperCase()}`,
      legal_form: 'company',
      default_currency: 'XOF',
      verification_status: 'verified',
      verification_decided_at: trx.fn.now(),
    })
    .returning('id')) as Array<{ id: string }>;
  const id = (org as { id: string }).id;
  const rows = Object.entries(modules).map(([module, access]) => ({ organization_id: id, module, access }));
  if (rows.length) await trx('organization_modules').insert(rows);
  return id;
}

/**
 * First seed step: the demo users (argon2id, password `demo-password`; the owner at tier_2,
 * every other one at tier_1) and the platform administrator ops@demo.example, "Demo Trading SARL"
 * (active, every module open) with one member per role, an organisation none of them
 * belongs to (404), one with payment links locked (423) and an inactive one (422), both
 * owned by owner@demo.example.
 */
export async function seedIdentity(trx: Knex.Transaction, services: Services): Promise<void> {
  const users = [...DEMO_USERS, { email: DEMO_OUTSIDER_EMAIL, phone: null }, { email: DEMO_ADMINISTRATOR_EMAIL, phone: null, isAdmin: true }];
  // One hash (and so one salt) per user, as for real accounts: equal hashes would show who
  // shares a password. argon2 runs on the thread pool, so the hashes are made in parallel.
  const passwordHashes = await Promise.all(users.map(() => services.passwords.hash(DEMO_PASSWORD)));
  const userIds = new Map<string, string>();
  for (const [index, user] of users.entries()) {
    const id = crypto.randomUUID();
    const [row] = (await trx('users')
      .insert({
        id,
        email: user.email,
        phone: user.phone,
        password_hash: passwordHashes[index],
        // Names are sealed at rest, as sign-up writes them.
        display_name: sealDisplayName(services.piiCipher, id, user.email.split('@')[0] as string),
        is_admin: 'isAdmin' in user && user.isAdmin,
        tier: demoTier(user.email),
      })
      .returning('id')) as Array<{ id: string }>;
    userIds.set(user.email, (row as { id: string }).id);
  }
  const member = (orgId: string, email: string, role: Role) => ({ organization_id: orgId, user_id: userIds.get(email), role, status: 'active' });

  const demo = await insertOrganization(trx, DEMO_ORGANIZATION_NAME, 'active', ALL_OPEN);
  await trx('memberships').insert(DEMO_USERS.map((u) => member(demo, u.email, u.role)));

  const other = await insertOrganization(trx, DEMO_OTHER_ORGANIZATION_NAME, 'active', ALL_OPEN);
  await trx('memberships').insert(member(other, DEMO_OUTSIDER_EMAIL, 'owner'));

  const owner = DEMO_USERS[0]!.email;
  const locked = await insertOrganization(trx, DEMO_LOCKED_ORGANIZATION_NAME, 'active', { ...ALL_OPEN, payment_links: 'locked' });
  await trx('memberships').insert(member(locked, owner, 'owner'));

  const inactive = await insertOrganization(trx, DEMO_INACTIVE_ORGANIZATION_NAME, 'inactive', ALL_OPEN);
  await trx('memberships').insert(member(inactive, owner, 'owner'));
}

/** For later seed steps: the id of a demo organisation by name (throws when absent). */
export async function findDemoOrganizationId(trx: Knex | Knex.Transaction, name: string = DEMO_ORGANIZATION_NAME): Promise<string> {
  const row = await trx('organizations').where({ name }).orderBy('created_at').first<{ id: string } | undefined>('id');
  if (!row) throw new Error(`demo organisation "${name}" is not seeded (seedIdentity must run first)`);
  return row.id;
}

/** For later seed steps: the id of a demo user by e-mail (throws when absent). */
export async function findDemoUserId(trx: Knex | Knex.Transaction, email: string): Promise<string> {
  const row = await trx('users').where({ email: email.toLowerCase() }).first<{ id: string } | undefined>('id');
  if (!row) throw new Error(`demo user ${email} is not seeded (seedIdentity must run first)`);
  return row.id;
}

import crypto from 'node:crypto';
import { hash } from '@node-rs/argon2';
import { withTransaction } from '../../src/db/transaction';
import { AccountService } from '../../src/modules/accounts';
import { fundWallet } from '../../src/modules/ledger';
import { testConfig, type App } from './app';
import { testKnex } from './database';
import { MODULES, type ModuleAccess, type ModuleName, type Role } from '../../src/contract';

export const TEST_PASSWORD = 'correct horse battery staple';

let cheapHash: Promise<string> | undefined;

/** Factories hash once with cheap parameters; verification reads the parameters from the hash. */
function testPasswordHash(): Promise<string> {
  cheapHash ??= hash(TEST_PASSWORD, { memoryCost: 1024, timeCost: 1, parallelism: 1 });
  return cheapHash;
}

export function uniqueEmail(prefix = 'user'): string {
  return `${prefix}-${crypto.randomUUID()}@test.example`;
}

/** A random, valid-looking E.164 number in a test range. */
export function uniquePhone(): string {
  return `+22507${crypto.randomInt(10_000_000, 99_999_999)}`;
}

export interface TestUser {
  id: string;
  email: string | null;
  phone: string | null;
  is_admin: boolean;
  password: string;
}

export async function createUser(
  overrides: { email?: string | null; phone?: string | null; isAdmin?: boolean; status?: 'active' | 'locked' | 'disabled'; passwordHash?: string } = {},
): Promise<TestUser> {
  const email = overrides.email === undefined ? uniqueEmail() : overrides.email;
  const [row] = await testKnex()('users')
    .insert({
      email: email?.toLowerCase() ?? null,
      phone: overrides.phone ?? null,
      password_hash: overrides.passwordHash ?? (await testPasswordHash()),
      is_admin: overrides.isAdmin ?? false,
      status: overrides.status ?? 'active',
    })
    .returning(['id', 'email', 'phone', 'is_admin']);
  return { ...(row as Omit<TestUser, 'password'>), password: TEST_PASSWORD };
}

export type { ModuleAccess, ModuleName, Role };
export const ALL_MODULES: readonly ModuleName[] = MODULES;

export interface TestOrganization {
  id: string;
  name: string;
  status: string;
}

/** An organisation with every module open unless told otherwise. */
export async function createOrganization(
  overrides: { name?: string; status?: 'active' | 'inactive' | 'suspended'; modules?: Partial<Record<ModuleName, ModuleAccess | null>> } = {},
): Promise<TestOrganization> {
  const knex = testKnex();
  const [org] = await knex('organizations')
    .insert({ name: overrides.name ?? `Org ${crypto.randomUUID().slice(0, 8)}`, status: overrides.status ?? 'active' })
    .returning(['id', 'name', 'status']);
  const modules = ALL_MODULES.map((module) => ({ module, access: overrides.modules?.[module] === undefined ? 'open' : overrides.modules[module] }))
    .filter((m): m is { module: ModuleName; access: ModuleAccess } => m.access !== null)
    .map((m) => ({ organization_id: (org as TestOrganization).id, ...m }));
  if (modules.length) await knex('organization_modules').insert(modules);
  return org as TestOrganization;
}

export async function addMember(org: { id: string }, user: { id: string }, role: Role, status: 'active' | 'invited' | 'suspended' = 'active'): Promise<void> {
  await testKnex()('memberships').insert({ organization_id: org.id, user_id: user.id, role, status });
}

/** A user who is an active member of `org` with `role`. */
export async function createMember(org: { id: string }, role: Role): Promise<TestUser> {
  const user = await createUser();
  await addMember(org, user, role);
  return user;
}

/** A real session and a real signed access token, without going through login. */
export async function accessTokenFor(app: App, user: { id: string; is_admin: boolean }): Promise<string> {
  const tokens = await app.services.sessions.open(testKnex(), user);
  return tokens.access_token;
}

/** An access token of a new active member of `org` with `role`. */
export async function memberToken(app: App, org: { id: string }, role: Role): Promise<string> {
  return accessTokenFor(app, await createMember(org, role));
}

/** The API path of an organisation's Business routes. */
export function businessPath(orgId: string): string {
  return `/api/business/organizations/${orgId}`;
}

export function bearer(token: string): { Authorization: string } {
  return { Authorization: `Bearer ${token}` };
}

/** A signed-in user of the API: its row and its Authorization header. */
export interface TestCaller {
  user: TestUser;
  auth: { Authorization: string };
}

/** A new user with a live session, its wallets funded through the ledger (`{ XOF: 1_000n }`, minor units). */
export async function createCaller(app: App, balances: Record<string, bigint> = {}, user: Parameters<typeof createUser>[0] = {}): Promise<TestCaller> {
  const created = await createUser(user);
  if (Object.keys(balances).length) {
    await withTransaction(testKnex(), async (trx) => {
      for (const [currency, amount] of Object.entries(balances)) await fundWallet(trx, created.id, currency, amount);
    });
  }
  return { user: created, auth: bearer(await accessTokenFor(app, created)) };
}

/** A new user (no session) whose wallets are funded through the ledger (`{ XOF: 1_000n }`, minor units): a party for a service called directly. */
export async function fundedUser(balances: Record<string, bigint> = {}, user: Parameters<typeof createUser>[0] = {}): Promise<TestUser> {
  const created = await createUser(user);
  const funded = Object.entries(balances).filter(([, amount]) => amount > 0n);
  if (funded.length) {
    await withTransaction(testKnex(), async (trx) => {
      for (const [currency, amount] of funded) await fundWallet(trx, created.id, currency, amount);
    });
  }
  return created;
}

/** How a service called directly (no HTTP, no session) is told who acts. */
export function serviceCaller(user: { id: string; is_admin?: boolean }): { userId: string; sessionId: string; isAdmin: boolean } {
  return { userId: user.id, sessionId: '', isAdmin: user.is_admin ?? false };
}

/** Balance (minor units) of a user's wallet in one currency; 0 when it does not exist yet. */
export async function walletBalance(userId: string, currency: string): Promise<bigint> {
  const row = await testKnex()('ledger_accounts').where({ owner_type: 'user', owner_id: userId, currency, kind: 'wallet' }).first('balance_minor');
  return row ? BigInt(row.balance_minor as string) : 0n;
}

export interface TestOrgAccount {
  id: string;
  organizationId: string;
  currency: string;
  status: 'active' | 'inactive' | 'pending' | 'closed';
  /** The account's own ledger account (kind org_account). */
  ledgerAccountId: string;
}

/** An organisation (foreign-currency) account with its own ledger account, through the accounts service. */
export async function createOrgAccount(
  org: { id: string },
  overrides: {
    currency?: string;
    status?: 'active' | 'inactive' | 'pending' | 'closed';
    holderType?: 'business' | 'individual';
    label?: string;
    bankName?: string | null;
    accountNumber?: string | null;
    iban?: string | null;
  } = {},
): Promise<TestOrgAccount> {
  const knex = testKnex();
  const account = await knex.transaction((trx) =>
    new AccountService(knex, { cursorSecret: testConfig().paySecret }).createAccount(trx, {
      organizationId: org.id,
      currency: overrides.currency ?? 'XOF',
      status: overrides.status ?? 'active',
      holderType: overrides.holderType ?? 'business',
      label: overrides.label ?? `Account ${crypto.randomUUID().slice(0, 8)}`,
      bankName: overrides.bankName === undefined ? 'Test Bank' : overrides.bankName,
      accountNumber: overrides.accountNumber === undefined ? String(crypto.randomInt(10_000_000, 99_999_999)) : overrides.accountNumber,
      iban: overrides.iban ?? null,
    }),
  );
  return { id: account.id, organizationId: account.organizationId, currency: account.currency, status: account.status, ledgerAccountId: account.ledgerAccountId };
}

/**
 * The data the code samples run on (scripts/docs/run-samples.ts): the demo data of `make run`,
 * and what is made through the API on the way, so that every path parameter names a real
 * object the sample's caller may act on:
 *   - a transfer, an API key, a webhook endpoint with a delivery, a payment on the payment page;
 *   - an escrow as large as the contract's example, disputed (the resolution's example splits it);
 *   - a wallet's pending top-ups (one to approve, one to decline);
 *   - two payouts waiting for approval, requested by the finance manager (the owner approves
 *     one and cancels the other: an approver is never the requester);
 *   - a crypto deposit credited and a conversion; a conversion of the organisation (XOF to
 *     USDC from its XOF account); three withdrawals to the owner's active
 *     address (read, cancel, fail);
 *   - an escrow release held for verification: its seller signed up a moment ago (tier_0) and
 *     the release is over their limits (the administrator returns it);
 *   - identity verification sessions: one under way (its owner's samples read, upload, submit,
 *     cancel), two in review (an administrator approves one, rejects the other; the cashier's,
 *     since the guides verify the director to tier_2 first);
 *   - invitations of the demo owner to two organisations of a colleague (accepted, declined),
 *     and one of the demo organisation to revoke;
 *   - a second session of the demo owner to revoke.
 * A value that cannot be made is left out: its sample gets a random id (see run-samples.ts).
 */
import crypto from 'node:crypto';

export type Json = Record<string, unknown>;

export interface Fixtures {
  owner: string;
  admin: string;
  values: Record<string, string>;
  /** Per operationId, path parameter values that differ from the shared ones ('' when it could not be made: the sample fails). */
  overrides: Record<string, Record<string, string>>;
  /** Per operationId, the session of another caller (the escrow's seller, the verification session's owner). */
  tokens: Record<string, string>;
}

const API = (process.env.API_URL ?? process.env.API ?? '').replace(/\/$/, '');

export async function call(
  method: string,
  route: string,
  token: string | undefined,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; json: Json }> {
  const form = body instanceof FormData;
  const response = await fetch(`${API}${route}`, {
    method,
    headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), ...(body !== undefined && !form ? { 'content-type': 'application/json' } : {}), ...headers },
    body: body === undefined ? undefined : form ? body : JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, json: text ? (JSON.parse(text) as Json) : {} };
}

const idempotent = (): Record<string, string> => ({ 'idempotency-key': crypto.randomUUID() });
const dataOf = (answer: { json: Json }): Json => (answer.json.data ?? {}) as Json;
const idOf = (answer: { json: Json }): string | undefined => dataOf(answer).id as string | undefined;
const list = (answer: { json: Json }): Json[] => ((dataOf(answer).data ?? []) as Json[]);
const firstId = (answer: { json: Json }, where: (item: Json) => boolean = () => true): string | undefined => list(answer).find(where)?.id as string | undefined;

export async function login(identifier: string): Promise<string> {
  const answer = await call('POST', '/auth/login', undefined, { identifier, password: 'demo-password' });
  if (answer.status !== 200) throw new Error(`login of ${identifier} answered ${answer.status}: ${JSON.stringify(answer.json)}`);
  return dataOf(answer).access_token as string;
}

/** Reads `route` until `done` holds of its data (a background job's outcome), at most `tries` times, a second apart. */
async function until(route: string, token: string, done: (data: Json) => boolean, tries = 60): Promise<boolean> {
  for (let attempt = 0; attempt < tries; attempt += 1) {
    if (done(dataOf(await call('GET', route, token)))) return true;
    await new Promise((resolve) => setTimeout(resolve, 1000));
  }
  return false;
}

/** A customer pays a signed order URL of the organisation's XOF Checkout on the payment page (sandbox mobile money). */
async function payOnThePage(token: string, org: string): Promise<void> {
  const accounts = await call('GET', `${org}/accounts`, token);
  const account = list(accounts).find((item) => item.currency_code === 'XOF' && item.status === 'active')?.id;
  if (!account) return;
  const link = idOf(await call('POST', `${org}/checkout`, token, { destination_account_id: account }));
  if (!link) return;
  const signed = await call('POST', `${org}/payment-links/${link}/signed-links`, token, { amount: 1000, reference: `SAMPLES-${crypto.randomUUID().slice(0, 8)}` });
  const url = dataOf(signed).url as string | undefined;
  if (!url) return;
  const page = await fetch(url);
  const cookie = (page.headers.get('set-cookie') ?? '').split(';')[0] ?? '';
  const formToken = /name="token" value="([^"]*)"/.exec(await page.text())?.[1];
  if (!formToken) return;
  await fetch(url.split('?')[0] as string, {
    method: 'POST',
    redirect: 'manual',
    headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ token: formToken, method: 'mobile_money', phone: '+2250700000099' }).toString(),
  });
}

/** An escrow of the owner with a colleague, as large as the contract's example, funded, delivered and disputed. */
async function disputedEscrow(owner: string): Promise<string | undefined> {
  const escrow = idOf(
    await call('POST', '/escrows', owner, { role: 'buyer', counterparty_identifier: 'admin@demo.example', amount: 500000, currency: 'XOF', description: 'Code samples: a dispute' }, idempotent()),
  );
  if (!escrow) return undefined;
  await call('POST', `/escrows/${escrow}/fund`, owner, {}, idempotent());
  await call('POST', `/escrows/${escrow}/deliver`, await login('admin@demo.example'), {});
  await call('POST', `/escrows/${escrow}/dispute`, owner, { reason: 'Code samples: not as described.' });
  return escrow;
}

/** Two pending top-ups of the owner's XOF wallet. */
async function topUps(owner: string): Promise<{ wallet?: string; approve?: string; decline?: string }> {
  const wallet = firstId(await call('GET', '/wallets', owner), (item) => item.currency === 'XOF');
  if (!wallet) return {};
  const topUp = async () =>
    idOf(await call('POST', `/wallets/${wallet}/top-ups`, owner, { amount: 25000, method: 'mobile_money', provider: 'orange_money', msisdn: '+2250700009999' }, idempotent()));
  return { wallet, approve: await topUp(), decline: await topUp() };
}

/** A conversion of the organisation: USDC bought with XOF from its XOF account (the samples of its conversion's GET read it). */
async function organizationConversion(owner: string, org: string, accounts: Awaited<ReturnType<typeof call>>): Promise<string | undefined> {
  const account = firstId(accounts, (item) => item.currency_code === 'XOF' && item.status === 'active');
  const quote = account ? idOf(await call('POST', `${org}/crypto/quotes`, owner, { from_currency: 'XOF', to_currency: 'USDC', from_amount: '6560', account_id: account })) : undefined;
  return quote ? idOf(await call('POST', `${org}/crypto/conversions`, owner, { quote_id: quote }, idempotent())) : undefined;
}

/** Two payouts over a lowered approval threshold, requested by the finance manager. */
async function payouts(owner: string, org: string): Promise<{ approve?: string; cancel?: string }> {
  const finance = await login('finance@demo.example');
  const account = firstId(await call('GET', `${org}/accounts`, owner), (item) => item.currency_code === 'XOF' && item.status === 'active');
  if (!account) return {};
  await call('PATCH', `${org}/payout-settings`, owner, { approval_threshold_xof: 1000 });
  const payout = async (reference: string) =>
    idOf(await call('POST', `${org}/payouts`, finance, { account_id: account, amount: 5000, destination: { type: 'mobile_money', provider: 'orange_money', msisdn: '+2250700009999' }, reference }, idempotent()));
  return { approve: await payout('SAMPLES-APPROVE'), cancel: await payout('SAMPLES-CANCEL') };
}

/** A USDT deposit on tron, credited (its blocks mined), a conversion of part of it to XOF, and three small withdrawals. */
async function cryptoObjects(owner: string): Promise<{ deposit?: string; conversion?: string; withdrawals: Array<string | undefined> }> {
  const address = dataOf(await call('POST', '/crypto/deposit-addresses', owner, { asset: 'USDT', network: 'tron' })).address as string | undefined;
  if (!address) return { withdrawals: [] };
  const deposit = idOf(await call('POST', '/test-helpers/crypto/networks/tron/deposits', undefined, { address, asset: 'USDT', amount: '250' }, idempotent()));
  await call('POST', '/test-helpers/crypto/networks/tron/blocks', undefined, { count: 20 }, idempotent());
  const quote = idOf(await call('POST', '/crypto/quotes', owner, { from_currency: 'USDT', to_currency: 'XOF', from_amount: '100' }));
  const conversion = quote ? idOf(await call('POST', '/crypto/conversions', owner, { quote_id: quote }, idempotent())) : undefined;
  const book = firstId(await call('GET', '/crypto/withdrawal-addresses', owner), (item) => item.asset === 'USDT' && item.network === 'tron' && item.status === 'active');
  const withdrawals: Array<string | undefined> = [];
  for (let i = 0; i < 3 && book; i += 1) withdrawals.push(idOf(await call('POST', '/crypto/withdrawals', owner, { withdrawal_address_id: book, amount: '10' }, idempotent())));
  return { deposit, conversion, withdrawals };
}

/** A user who signs up now (tier_0), with the code from the sandbox outbox: their session. */
async function newCustomer(): Promise<{ email: string; token?: string }> {
  const email = `held-seller-${crypto.randomUUID().slice(0, 8)}@example.com`;
  const signup = dataOf(await call('POST', '/auth/signup', undefined, { identifier: email, password: `Kq7-${crypto.randomUUID()}`, full_name: 'Awa Kone', country: 'CI', accept_terms: true }));
  const outbox = await call('GET', `/test-helpers/outbox?to=${encodeURIComponent(email)}`, undefined);
  const code = /\b\d{6}\b/.exec(String(list(outbox)[0]?.body ?? ''))?.[0];
  if (!signup.verification_id || !code) return { email };
  return { email, token: dataOf(await call('POST', '/auth/signup/verify', undefined, { verification_id: signup.verification_id, code })).access_token as string | undefined };
}

/** An escrow of the owner whose release to a new (tier_0) seller is over the seller's limits: held for verification. */
async function heldPayout(owner: string): Promise<string | undefined> {
  const seller = await newCustomer();
  if (!seller.token) return undefined;
  const escrow = idOf(await call('POST', '/escrows', owner, { role: 'buyer', counterparty_identifier: seller.email, amount: 250000, currency: 'XOF', description: 'Code samples: a held payout' }, idempotent()));
  if (!escrow) return undefined;
  await call('POST', `/escrows/${escrow}/fund`, owner, {}, idempotent());
  await call('POST', `/escrows/${escrow}/deliver`, seller.token, {});
  const accepted = dataOf(await call('POST', `/escrows/${escrow}/accept`, owner, {}, idempotent()));
  return ((accepted.payout ?? {}) as Json).id as string | undefined;
}

/**
 * A tier_2 verification session of `identifier` with both documents; submitted with a test id
 * number ending 2222 it waits for an administrator (`needs_review`).
 */
async function verificationSession(identifier: string, submit: boolean): Promise<{ token: string; session?: string }> {
  const token = await login(identifier);
  const session = idOf(await call('POST', '/identity/verification-sessions', token, { tier: 'tier_2' }));
  if (!session || !submit) return { token, session };
  const route = `/identity/verification-sessions/${session}`;
  for (const kind of ['id_front', 'selfie']) {
    const form = new FormData();
    form.set('kind', kind);
    form.set('file', new Blob(['%PDF-1.4\n%%EOF\n'], { type: 'application/pdf' }), `${kind}.pdf`);
    await call('POST', `${route}/documents`, token, form);
  }
  const details = { id_type: 'national_id', id_number: 'CI0012342222', first_name: 'Awa', last_name: 'Traore', date_of_birth: '1990-04-12', nationality: 'CI' };
  await call('POST', `${route}/submit`, token, details);
  return (await until(route, token, (data) => data.status === 'needs_review')) ? { token, session } : { token };
}

/** Invitations of the demo owner to two organisations a colleague opens, and one of the demo organisation. */
async function invitations(owner: string, org: string): Promise<{ accept?: string; decline?: string; revoke?: string }> {
  const colleague = await login('admin@demo.example');
  const invite = async (name: string) => {
    const opened = idOf(
      await call('POST', '/business/organizations', colleague, { legal_name: `${name} SARL`, country: 'CI', registration_number: `CI-ABJ-2026-B-${crypto.randomInt(10000, 99999)}`, legal_form: 'company', default_currency: 'XOF' }, idempotent()),
    );
    return opened ? idOf(await call('POST', `/business/organizations/${opened}/invitations`, colleague, { identifier: 'owner@demo.example', role: 'finance_manager' })) : undefined;
  };
  const revoke = idOf(await call('POST', `${org}/invitations`, owner, { identifier: 'outsider@demo.example', role: 'cashier' }));
  return { accept: await invite('Samples Accept'), decline: await invite('Samples Decline'), revoke };
}

export async function fixtures(): Promise<Fixtures> {
  const owner = await login('owner@demo.example');
  const admin = await login('ops@demo.example');
  const me = await call('GET', '/me', owner);
  const organizations = (dataOf(me).organizations ?? []) as Json[];
  const orgId = organizations.find((item) => item.name === 'Demo Trading SARL')?.id as string;
  const org = `/business/organizations/${orgId}`;
  // First, while the owner's wallet and daily limits are untouched by the other fixtures.
  const held = await heldPayout(owner);
  const key = `samples-${crypto.randomUUID()}`;
  const transfer = await call('POST', '/transfers', owner, { amount: 100, currency: 'XOF', recipientIdentifier: 'admin@demo.example', note: 'code samples' }, { 'idempotency-key': key });
  const escrows = await call('GET', '/escrows?limit=100', owner);
  const disputed = await disputedEscrow(owner);
  const tontines = await call('GET', '/tontines', owner);
  const links = await call('GET', `${org}/payment-links`, owner);
  await payOnThePage(owner, org);
  const payments = await call('GET', `${org}/payments`, owner);
  const invoices = await call('GET', `${org}/invoices`, owner);
  const accounts = await call('GET', `${org}/accounts`, owner);
  const members = await call('GET', `${org}/members`, owner);
  const apiKey = await call('POST', `${org}/api-keys`, owner, { name: 'Code samples', scopes: ['payments:read'] });
  const endpointId = idOf(await call('POST', `${org}/webhook-endpoints`, owner, { url: 'http://127.0.0.1:4000/webhooks', events: ['*'], description: 'Code samples' }));
  if (endpointId) await call('POST', `${org}/webhook-endpoints/${endpointId}/test`, owner);
  const deliveries = endpointId ? await call('GET', `${org}/webhook-endpoints/${endpointId}/deliveries`, owner) : { json: {} };
  const events = await call('GET', '/events', owner);
  const orgEvents = await call('GET', `${org}/events`, owner);
  const money = await topUps(owner);
  const payout = await payouts(owner, org);
  const coins = await cryptoObjects(owner);
  const orgConversion = await organizationConversion(owner, org, accounts);
  const invited = await invitations(owner, org);
  const own = await verificationSession('finance@demo.example', false);
  const [approved, rejected] = await Promise.all([verificationSession('representative@demo.example', true), verificationSession('cashier@demo.example', true)]);
  // A second session of the owner, to revoke: `current` in its own listing names it.
  const spare = await login('owner@demo.example');
  const spareSession = firstId(await call('GET', '/me/sessions', spare), (item) => item.current === true);

  const escrowId = firstId(escrows, (escrow) => escrow.status === 'funded') ?? firstId(escrows);
  const seller = ((list(escrows).find((escrow) => escrow.id === escrowId)?.seller ?? {}) as Json).identifier as string | undefined;
  const values: Record<string, string | undefined> = {
    ORG_ID: orgId,
    TRANSFER_ID: idOf(transfer),
    KEY: key,
    ESCROW_ID: escrowId,
    TONTINE_ID: firstId(tontines),
    LINK_ID: firstId(links, (link) => link.status === 'active') ?? firstId(links),
    PAYMENT_ID: firstId(payments),
    INVOICE_ID: firstId(invoices),
    ACCOUNT_ID: firstId(accounts),
    KEY_ID: idOf(apiKey),
    ENDPOINT_ID: endpointId,
    DELIVERY_ID: firstId(deliveries),
    EVENT_ID: firstId(events),
    WALLET_ID: money.wallet,
    TOP_UP_ID: money.approve,
    PAYOUT_ID: payout.approve,
    DEPOSIT_ID: coins.deposit,
    CONVERSION_ID: coins.conversion,
    WITHDRAWAL_ID: coins.withdrawals[0],
    HELD_PAYOUT_ID: held,
    INVITATION_ID: invited.accept,
    SESSION_ID: own.session,
    // The member whose role the samples change, then who is removed: the cashier.
    USER_ID: list(members).find((member) => member.identifier === 'cashier@demo.example')?.user_id as string | undefined,
  };
  const overrides: Record<string, Record<string, string | undefined>> = {
    resolveEscrow: { ESCROW_ID: disputed },
    getOrganizationEvent: { EVENT_ID: firstId(orgEvents) },
    declineTestHelperTopUp: { TOP_UP_ID: money.decline },
    cancelPayout: { PAYOUT_ID: payout.cancel },
    declineOrganizationInvitation: { INVITATION_ID: invited.decline },
    revokeOrganizationInvitation: { INVITATION_ID: invited.revoke },
    approveVerificationSession: { SESSION_ID: approved.session },
    rejectVerificationSession: { SESSION_ID: rejected.session },
    revokeMySession: { SESSION_ID: spareSession },
    cancelCryptoWithdrawal: { WITHDRAWAL_ID: coins.withdrawals[1] },
    failCryptoWithdrawal: { WITHDRAWAL_ID: coins.withdrawals[2] },
    getOrganizationCryptoConversion: { CONVERSION_ID: orgConversion },
  };
  const tokens: Record<string, string> = {};
  for (const operationId of ['getVerificationSession', 'uploadVerificationDocument', 'submitVerificationSession', 'cancelVerificationSession']) tokens[operationId] = own.token;
  if (seller) {
    const sellerToken = await login(seller);
    for (const operationId of ['deliverEscrow', 'refundEscrow']) tokens[operationId] = sellerToken;
  }
  const defined = (record: Record<string, string | undefined>) => Object.fromEntries(Object.entries(record).filter((entry): entry is [string, string] => entry[1] !== undefined));
  return { owner, admin, values: defined(values), overrides: Object.fromEntries(Object.entries(overrides).map(([id, record]) => [id, Object.fromEntries(Object.entries(record).map(([name, value]) => [name, value ?? '']))])), tokens };
}

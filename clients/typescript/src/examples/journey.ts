// The example CI runs against `make run` (scripts/client-example.sh): log in, read the wallets,
// send a transfer whose first answer is lost on the way back (the client retries it with the
// same Idempotency-Key: one transfer, not two), and verify a Standard Webhooks delivery.
//
//   API_URL=http://localhost:8080/api node dist/examples/journey.js
import { Webhook } from 'standardwebhooks';
import { login, verifyWebhook, WebhookVerificationError } from '../index';

const baseUrl = process.env.API_URL ?? 'http://localhost:8080/api';

function check(condition: unknown, message: string): asserts condition {
  if (!condition) throw new Error(`example failed: ${message}`);
  console.log(`ok - ${message}`);
}

async function main(): Promise<void> {
  // A network that loses the first answer of each POST /transfers after the server acted on it.
  let lost = 0;
  const lossyFetch: typeof fetch = async (input, init) => {
    const method = input instanceof Request ? input.method : (init?.method ?? 'GET');
    const url = input instanceof Request ? input.url : String(input);
    const response = await fetch(input, init);
    if (method === 'POST' && url.endsWith('/transfers') && lost === 0) {
      lost += 1;
      throw new TypeError('fetch failed (the answer was lost)');
    }
    return response;
  };

  const { client, session } = await login(baseUrl, 'owner@demo.example', 'demo-password', { fetch: lossyFetch, retry: { baseDelayMs: 50 } });
  check(session.token_type === 'Bearer', 'logged in as owner@demo.example');

  const me = await client.GET('/me');
  check(me.data?.data.email === 'owner@demo.example', `GET /me is typed: ${me.data?.data.email}`);

  const wallets = await client.GET('/wallets');
  const xofBefore = wallets.data?.data.data.find((wallet) => wallet.currency === 'XOF');
  check(xofBefore !== undefined, `XOF wallet: ${xofBefore?.balance}`);

  const key = crypto.randomUUID();
  const note = `client example ${key.slice(0, 8)}`;
  const sent = await client.POST('/transfers', {
    params: { header: { 'Idempotency-Key': key } },
    body: { amount: 1200, currency: 'XOF', recipientIdentifier: 'admin@demo.example', note },
  });
  check(lost === 1, 'the first answer was lost and the client retried');
  // The retry carried the same key: the server answers with the first outcome (200) or names it
  // (409 IdempotencyKeyAlreadyProcessed): either way one transfer.
  const transferId = sent.data?.data.id ?? (sent.error && 'details' in sent.error ? (sent.error.details as { resource_id?: string }).resource_id : undefined);
  check(typeof transferId === 'string', `the retry names the transfer (status ${sent.response.status})`);

  const keyState = await client.GET('/idempotency-keys/{key}', { params: { path: { key } } });
  check(keyState.data?.data.resource?.id === transferId, 'the key names that one transfer');
  const list = await client.GET('/transfers', { params: { query: { limit: 5 } } });
  const copies = list.data?.data.data.filter((transfer) => transfer.note === note) ?? [];
  check(copies.length === 1, 'exactly one transfer was made');

  const after = await client.GET('/wallets');
  const xofAfter = after.data?.data.data.find((wallet) => wallet.currency === 'XOF');
  check(BigInt(xofBefore.balance_minor) - BigInt(xofAfter?.balance_minor ?? '0') === 1200n, 'the wallet was debited once (1 200 XOF)');

  const refused = await client.POST('/transfers', { params: { header: { 'Idempotency-Key': crypto.randomUUID() } }, body: { amount: 900000000, currency: 'XOF', recipientIdentifier: 'admin@demo.example' } });
  check(refused.error?.error === 'InsufficientFunds', `a refusal is a typed error: ${refused.error?.error}`);

  // Webhooks: what the events branch will send, verified as a partner would.
  const secret = `whsec_${Buffer.from('an example signing secret, 32 b').toString('base64')}`;
  const body = JSON.stringify({ type: 'transfer.completed', data: { id: transferId } });
  const id = `evt_${key}`;
  const timestamp = new Date();
  const headers = { 'webhook-id': id, 'webhook-timestamp': String(Math.floor(timestamp.getTime() / 1000)), 'webhook-signature': new Webhook(secret).sign(id, timestamp, body) };
  const event = verifyWebhook<{ type: string }>(body, headers, ['whsec_b2xkIHNlY3JldCBiZWZvcmUgdGhlIHJvdGF0aW9u', secret]);
  check(event.id === id && event.payload.type === 'transfer.completed', 'a signed webhook verifies (with the second of two secrets, as during a rotation)');
  let tampered = false;
  try {
    verifyWebhook(body.replace('completed', 'failed'), headers, secret);
  } catch (error) {
    tampered = error instanceof WebhookVerificationError;
  }
  check(tampered, 'a tampered body is refused');
  console.log('client example: all checks passed');
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : error);
  process.exit(1);
});

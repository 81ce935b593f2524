import http from 'node:http';
import type { AddressInfo } from 'node:net';
import net from 'node:net';
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type App } from '../support/app';
import { bearer, businessPath, createCaller, createOrganization, memberToken } from '../support/factories';
import { createCustomer } from '../support/invoice-factories';

/**
 * The `type` filter of the events lists takes `*` as it is (`?type=escrow.*`): RFC 3986 allows
 * it in a query, and curl, browsers and `fetch` send it unencoded. These requests are written
 * on a socket byte for byte, so no client library encodes the `*` on the way.
 */
let app: App;
let server: http.Server;
let port: number;

beforeAll(async () => {
  app = await buildTestApp();
  server = http.createServer(app);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

/** One GET written on a raw socket, the path exactly as given; answers the status and the JSON body. */
function rawGet(path: string, token: string): Promise<{ status: number; body: { success: boolean; error?: string; data?: { data: { type: string }[] } } }> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('error', reject);
    socket.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      const [head = '', ...rest] = text.split('\r\n\r\n');
      const status = Number(head.split(' ')[1]);
      const raw = rest.join('\r\n\r\n');
      // The body may come chunked: keep what lies between the first `{` and the last `}`.
      resolve({ status, body: JSON.parse(raw.slice(raw.indexOf('{'), raw.lastIndexOf('}') + 1)) });
    });
    socket.write(`GET ${path} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nAuthorization: Bearer ${token}\r\nAccept: application/json\r\nConnection: close\r\n\r\n`);
  });
}

describe('an unencoded * in the type filter of the events lists', () => {
  it('GET /api/events?type=escrow.* answers 200', async () => {
    const caller = await createCaller(app);
    const token = caller.auth.Authorization.slice('Bearer '.length);
    const res = await rawGet('/api/events?type=escrow.*', token);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.success).toBe(true);
  });

  it('the organisation events ?type=network_status.* answers 200, and ?type=invoice.* selects the invoice events', async () => {
    const org = await createOrganization();
    const token = await memberToken(app, org, 'owner');
    const network = await rawGet(`${businessPath(org.id)}/events?type=network_status.*`, token);
    expect(network.status, JSON.stringify(network.body)).toBe(200);
    const customer = await createCustomer(org);
    const created = await request(app)
      .post(`${businessPath(org.id)}/invoices`)
      .set(bearer(token))
      .send({ kind: 'invoice', customer_id: customer.id, currency: 'XOF', line_items: [{ description: 'Work', quantity: 1, unit_amount: '1000' }] });
    expect(created.status).toBe(201);
    const invoices = await rawGet(`${businessPath(org.id)}/events?type=invoice.*`, token);
    expect(invoices.status, JSON.stringify(invoices.body)).toBe(200);
    expect(invoices.body.data?.data.map((e) => e.type)).toEqual(['invoice.created']);
    // The encoded form keeps working.
    const encoded = await rawGet(`${businessPath(org.id)}/events?type=invoice.%2A`, token);
    expect(encoded.body.data?.data.map((e) => e.type)).toEqual(['invoice.created']);
  });

  it('other reserved characters in the filter are still refused by its pattern (400, the error envelope)', async () => {
    const caller = await createCaller(app);
    const token = caller.auth.Authorization.slice('Bearer '.length);
    const res = await rawGet('/api/events?type=escrow.[x]', token);
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ success: false, error: 'ValidationError' });
  });
});

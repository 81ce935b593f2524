import { describe, expect, it } from 'vitest';
// A type only: erased when compiled, so it does not load the guard.
import type { LookupAll } from '../../src/modules/events';

/**
 * The guard is loaded by the first test, not imported: it parses its refused IPv6 blocks when it
 * loads, and a mutant there must fail a test rather than stop this file from loading (which
 * `make mutation` would count as a survivor). Every later test then fails too, as it should.
 */
type Guard = typeof import('../../src/modules/events');
type UrlPolicy = Parameters<Guard['checkUrlSyntax']>[1];
let guard: Guard | undefined;
const loaded = (): Guard => {
  if (!guard) throw new Error('the webhook URL guard did not load');
  return guard;
};
const isPublicAddress = (address: string) => loaded().isPublicAddress(address);
const checkUrlSyntax = (raw: string, policy: UrlPolicy) => loaded().checkUrlSyntax(raw, policy);
const checkWebhookUrl = (raw: string, policy: UrlPolicy, lookupAll?: LookupAll) => loaded().checkWebhookUrl(raw, policy, lookupAll);
const guardedLookup = (policy: UrlPolicy, lookupAll?: LookupAll) => loaded().guardedLookup(policy, lookupAll);

it('loads, its refused IPv6 blocks parsed', async () => {
  guard = await import('../../src/modules/events');
  expect(guard.isPublicAddress('::1')).toBe(false);
});

const PRODUCTION = { allowPrivateTargets: false };
const DEVELOPMENT = { allowPrivateTargets: true };

/** A resolver answering from a table (an unknown name does not resolve). */
function resolver(table: Record<string, string[]>): LookupAll {
  return async (hostname) => {
    const addresses = table[hostname];
    if (!addresses) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
    return addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
  };
}

describe('isPublicAddress', () => {
  it.each([
    '10.1.2.3',
    '127.0.0.1',
    '127.255.255.254',
    '0.0.0.0',
    '169.254.169.254',
    '172.16.0.1',
    '172.31.255.255',
    '192.168.1.1',
    '100.64.0.1',
    '100.127.255.255',
    '224.0.0.1',
    '255.255.255.255',
    '::1',
    '::',
    'fc00::1',
    'fd00:ec2::254',
    'fe80::1',
    '::ffff:127.0.0.1',
    '::ffff:7f00:1',
    '::ffff:169.254.169.254',
    '64:ff9b::a00:1',
    'ff02::1',
    '::127.0.0.1',
    '::7f00:1',
    '::ffff:0:127.0.0.1',
    '::ffff:0:7f00:1',
    '::8.8.8.8',
    '64:ff9b:1::808:808',
    '2002:808:808::1',
    '2001:db8::1',
    '2001:20::1',
    'fe80::1%eth0',
    '192.0.2.1',
    '198.18.0.1',
  ])('%s is not public', (address) => {
    expect(isPublicAddress(address)).toBe(false);
  });

  it.each(['8.8.8.8', '1.1.1.1', '172.32.0.1', '100.128.0.1', '2606:4700:4700::1111', '::ffff:8.8.8.8', '::ffff:0:8.8.8.8', '64:ff9b::808:808'])('%s is public', (address) => {
    expect(isPublicAddress(address)).toBe(true);
  });

  it('a host name is not an address', () => {
    expect(isPublicAddress('example.com')).toBe(false);
  });
});

describe('checkUrlSyntax in production settings', () => {
  it.each([
    ['http://hooks.example.com/x', 'scheme'],
    ['ftp://hooks.example.com/x', 'scheme'],
    ['https://user:pass@hooks.example.com/x', 'userinfo'],
    ['https://user@hooks.example.com/x', 'userinfo'],
    ['https://:secret@hooks.example.com/x', 'userinfo'],
    ['https://hooks.example.com:1023/x', 'port'],
    ['https://hooks.example.com:22/x', 'port'],
    ['https://hooks.example.com:80/x', 'port'],
    ['https://127.0.0.1/x', 'private_address'],
    ['https://10.0.0.8/x', 'private_address'],
    ['https://169.254.169.254/latest/meta-data', 'private_address'],
    ['https://100.64.1.1/x', 'private_address'],
    ['https://[::1]/x', 'private_address'],
    ['https://[::ffff:127.0.0.1]/x', 'private_address'],
    ['https://[fd00:ec2::254]/x', 'private_address'],
    ['https://2130706433/x', 'private_address'],
    ['https://0x7f.1/x', 'private_address'],
    ['not a url', 'invalid'],
  ])('%s is refused (%s)', (url, reason) => {
    expect(checkUrlSyntax(url, PRODUCTION)).toEqual({ ok: false, reason });
  });

  it.each(['https://hooks.example.com/x', 'https://hooks.example.com:443/x', 'https://hooks.example.com:1024/x', 'https://hooks.example.com:8443/x', 'https://8.8.8.8/x'])('%s passes', (url) => {
    expect(checkUrlSyntax(url, PRODUCTION).ok).toBe(true);
  });

  it('with private targets allowed, http and loopback pass; userinfo and low ports never do', () => {
    expect(checkUrlSyntax('http://127.0.0.1:4567/hook', DEVELOPMENT).ok).toBe(true);
    expect(checkUrlSyntax('http://localhost:8080/hook', DEVELOPMENT).ok).toBe(true);
    expect(checkUrlSyntax('http://a:b@127.0.0.1:4567/hook', DEVELOPMENT)).toEqual({ ok: false, reason: 'userinfo' });
    expect(checkUrlSyntax('http://127.0.0.1:25/hook', DEVELOPMENT)).toEqual({ ok: false, reason: 'port' });
    expect(checkUrlSyntax('http://127.0.0.1:1023/hook', DEVELOPMENT)).toEqual({ ok: false, reason: 'port' });
    // 443 is the one low port allowed (for https it is the default, so the URL names no port at all).
    expect(checkUrlSyntax('http://127.0.0.1:443/hook', DEVELOPMENT).ok).toBe(true);
  });
});

describe('checkWebhookUrl (DNS)', () => {
  const dns = resolver({
    'public.example': ['93.184.216.34'],
    'internal.example': ['10.0.0.5'],
    'mixed.example': ['93.184.216.34', '127.0.0.1'],
    'v6private.example': ['fd12::1'],
  });

  it('refuses a host any of whose addresses is private, and one that does not resolve', async () => {
    expect(await checkWebhookUrl('https://internal.example/x', PRODUCTION, dns)).toEqual({ ok: false, reason: 'private_address' });
    expect(await checkWebhookUrl('https://mixed.example/x', PRODUCTION, dns)).toEqual({ ok: false, reason: 'private_address' });
    expect(await checkWebhookUrl('https://v6private.example/x', PRODUCTION, dns)).toEqual({ ok: false, reason: 'private_address' });
    expect(await checkWebhookUrl('https://nowhere.example/x', PRODUCTION, dns)).toEqual({ ok: false, reason: 'unresolvable' });
    expect(await checkWebhookUrl('https://empty.example/x', PRODUCTION, resolver({ 'empty.example': [] }))).toEqual({ ok: false, reason: 'unresolvable' });
  });

  it('asks no DNS for an IP literal: the address is the one checked', async () => {
    const refuse: LookupAll = async () => {
      throw new Error('no DNS expected');
    };
    expect((await checkWebhookUrl('https://8.8.8.8/x', PRODUCTION, refuse)).ok).toBe(true);
    expect(await checkWebhookUrl('https://[::1]/x', PRODUCTION, refuse)).toEqual({ ok: false, reason: 'private_address' });
  });

  it('asks the system resolver by default, every address: localhost is private', async () => {
    expect(await checkWebhookUrl('https://localhost/x', PRODUCTION)).toEqual({ ok: false, reason: 'private_address' });
  });

  it('accepts a host whose every address is public', async () => {
    expect((await checkWebhookUrl('https://public.example/x', PRODUCTION, dns)).ok).toBe(true);
  });

  it('asks no DNS when private targets are allowed', async () => {
    const refuse: LookupAll = async () => {
      throw new Error('no DNS expected');
    };
    expect((await checkWebhookUrl('http://anything.example/x', DEVELOPMENT, refuse)).ok).toBe(true);
  });
});

describe('guardedLookup (the connection goes to the address that was checked)', () => {
  function lookup(policy: { allowPrivateTargets: boolean }, answers: string[][]) {
    let call = 0;
    const rebinding: LookupAll = async () => (answers[Math.min(call++, answers.length - 1)] as string[]).map((address) => ({ address, family: 4 }));
    const guarded = guardedLookup(policy, rebinding);
    return {
      resolve: () =>
        new Promise<{ error: NodeJS.ErrnoException | null; address: unknown }>((done) => guarded('rebind.example', {}, (error, address) => done({ error, address }))),
      calls: () => call,
    };
  }

  it('refuses a name that now resolves to a private address, even if it was public when the endpoint was saved', async () => {
    const dns = lookup(PRODUCTION, [['10.0.0.1']]);
    const { error, address } = await dns.resolve();
    expect(error).toMatchObject({ code: 'EPRIVATEADDRESS', message: 'webhook target rebind.example resolves to a private address' });
    expect(address).toBe('');
  });

  it('refuses a name with any private address among public ones, and a name with no address', async () => {
    for (const answer of [['93.184.216.34', '10.0.0.1'], ['10.0.0.1', '93.184.216.34'], []]) {
      const { error, address } = await lookup(PRODUCTION, [answer]).resolve();
      expect(error, answer.join(',')).toMatchObject({ code: 'EPRIVATEADDRESS' });
      expect(address).toBe('');
    }
  });

  it('hands a resolver failure on as it is, with no address', async () => {
    const failure = Object.assign(new Error('getaddrinfo ENOTFOUND gone.example'), { code: 'ENOTFOUND' });
    const guarded = guardedLookup(PRODUCTION, async () => {
      throw failure;
    });
    const answer = await new Promise<{ error: unknown; address: unknown; family: unknown }>((done) => guarded('gone.example', {}, (error, address, family) => done({ error, address, family })));
    expect(answer).toEqual({ error: failure, address: '', family: 4 });
  });

  it('answers a list when asked for all addresses: the one address checked', async () => {
    const guarded = guardedLookup(PRODUCTION, async () => [{ address: '93.184.216.34', family: 4 }]);
    const address = await new Promise<unknown>((done) => guarded('public.example', { all: true }, (_error, answer) => done(answer)));
    expect(address).toEqual([{ address: '93.184.216.34', family: 4 }]);
  });

  it('resolves once and hands the socket that very address', async () => {
    const dns = lookup(PRODUCTION, [['93.184.216.34'], ['127.0.0.1']]);
    const { error, address } = await dns.resolve();
    expect(error).toBeNull();
    expect(address).toBe('93.184.216.34');
    expect(dns.calls()).toBe(1);
  });

  it('lets private addresses through when allowed (development, tests)', async () => {
    const { error, address } = await lookup(DEVELOPMENT, [['127.0.0.1']]).resolve();
    expect(error).toBeNull();
    expect(address).toBe('127.0.0.1');
  });
});

import dns from 'node:dns';
import net from 'node:net';

/**
 * The SSRF guard of webhook URLs. In production (private targets not allowed) a URL must be
 * `https`, carry no user name or password, use port 443 or one from 1024 up, and every address
 * its host resolves to must be public; the delivery connects to the address that was checked
 * (`guardedLookup`, given to the HTTP request as its `lookup`), so a second, different DNS
 * answer (rebinding) is never used. With private targets allowed (development and tests) http
 * and loopback or private addresses are accepted; user names and low ports never are.
 */
export type UrlRefusal = 'invalid' | 'scheme' | 'userinfo' | 'port' | 'private_address' | 'unresolvable';

export interface UrlPolicy {
  allowPrivateTargets: boolean;
}

/** Ranges no webhook may reach in production: private, loopback, link-local, CGNAT, metadata, documentation, multicast, reserved. */
const BLOCKED = new net.BlockList();
for (const [network, prefix] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.88.99.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const) {
  BLOCKED.addSubnet(network, prefix, 'ipv4');
}
for (const [network, prefix] of [
  ['::', 128],
  ['::1', 128],
  ['64:ff9b:1::', 48],
  ['100::', 64],
  ['2001::', 23],
  ['2001:db8::', 32],
  ['2002::', 16],
  ['fc00::', 7],
  ['fe80::', 10],
  ['fec0::', 10],
  ['ff00::', 8],
] as const) {
  BLOCKED.addSubnet(network, prefix, 'ipv6');
}

/**
 * IPv6 ranges that carry an IPv4 address (mapped, NAT64): judged by the address they carry.
 * Kept apart because node's BlockList matches every IPv4 address against ::ffff:0:0/96.
 */
const CARRIES_IPV4 = new net.BlockList();
CARRIES_IPV4.addSubnet('::ffff:0:0', 96, 'ipv6');
CARRIES_IPV4.addSubnet('64:ff9b::', 96, 'ipv6');

/** The IPv4 address an IPv6 address carries (mapped `::ffff:a.b.c.d`, NAT64 `64:ff9b::/96`), if any. */
function embeddedIpv4(address: string): string | undefined {
  const lower = address.toLowerCase();
  const dotted = /^(?:::ffff:|64:ff9b::)(\d+\.\d+\.\d+\.\d+)$/.exec(lower);
  if (dotted) return dotted[1];
  const hex = /^(?:::ffff:|64:ff9b::)([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(lower);
  if (!hex) return undefined;
  const high = parseInt(hex[1] as string, 16);
  const low = parseInt(hex[2] as string, 16);
  return [high >> 8, high & 255, low >> 8, low & 255].join('.');
}

/** True when `address` (an IP literal) is a public unicast address. */
export function isPublicAddress(address: string): boolean {
  const family = net.isIP(address);
  if (family === 4) return !BLOCKED.check(address, 'ipv4');
  if (family === 6) {
    const v4 = embeddedIpv4(address);
    if (v4 !== undefined) return net.isIPv4(v4) && !BLOCKED.check(v4, 'ipv4');
    // A form of a mapped or NAT64 address the parser above does not read: refused.
    if (CARRIES_IPV4.check(address, 'ipv6')) return false;
    return !BLOCKED.check(address, 'ipv6');
  }
  return false;
}

export type UrlCheck = { ok: true; url: URL; host: string } | { ok: false; reason: UrlRefusal };

/** The checks that need no DNS: scheme, user name, port, and an IP literal's range. */
export function checkUrlSyntax(raw: string, policy: UrlPolicy): UrlCheck {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return { ok: false, reason: 'invalid' };
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return { ok: false, reason: 'scheme' };
  if (url.protocol === 'http:' && !policy.allowPrivateTargets) return { ok: false, reason: 'scheme' };
  if (url.username !== '' || url.password !== '') return { ok: false, reason: 'userinfo' };
  if (url.hostname === '') return { ok: false, reason: 'invalid' };
  if (url.port !== '') {
    const port = Number(url.port);
    if (port < 1024 && port !== 443) return { ok: false, reason: 'port' };
  }
  const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
  if (net.isIP(host) !== 0 && !policy.allowPrivateTargets && !isPublicAddress(host)) return { ok: false, reason: 'private_address' };
  return { ok: true, url, host };
}

export type LookupAll = (hostname: string) => Promise<{ address: string; family: number }[]>;

const systemLookupAll: LookupAll = (hostname) => dns.promises.lookup(hostname, { all: true, verbatim: true });

/** The whole check, DNS included: every address the host resolves to must be public (unless private targets are allowed). */
export async function checkWebhookUrl(raw: string, policy: UrlPolicy, lookupAll: LookupAll = systemLookupAll): Promise<UrlCheck> {
  const syntax = checkUrlSyntax(raw, policy);
  if (!syntax.ok || policy.allowPrivateTargets || net.isIP(syntax.host) !== 0) return syntax;
  let addresses: { address: string }[];
  try {
    addresses = await lookupAll(syntax.host);
  } catch {
    return { ok: false, reason: 'unresolvable' };
  }
  if (addresses.length === 0) return { ok: false, reason: 'unresolvable' };
  if (addresses.some((entry) => !isPublicAddress(entry.address))) return { ok: false, reason: 'private_address' };
  return syntax;
}

type LookupCallback = (error: NodeJS.ErrnoException | null, address: string | dns.LookupAddress[], family?: number) => void;

/**
 * The `lookup` of a delivery's HTTP request: resolves the host once, refuses the connection
 * unless every address is allowed, and hands the socket the address it checked.
 */
export function guardedLookup(policy: UrlPolicy, lookupAll: LookupAll = systemLookupAll) {
  return (hostname: string, options: dns.LookupOptions, callback: LookupCallback): void => {
    lookupAll(hostname).then(
      (addresses) => {
        const refused = !policy.allowPrivateTargets && (addresses.length === 0 || addresses.some((entry) => !isPublicAddress(entry.address)));
        if (refused) {
          const error = Object.assign(new Error(`webhook target ${hostname} resolves to a private address`), { code: 'EPRIVATEADDRESS' });
          callback(error, '', 4);
          return;
        }
        const first = addresses[0] as { address: string; family: number };
        if (options.all) callback(null, [first]);
        else callback(null, first.address, first.family);
      },
      (error: NodeJS.ErrnoException) => callback(error, '', 4),
    );
  };
}

import dns from 'node:dns';
import net from 'node:net';
import ipaddr from 'ipaddr.js';

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

/**
 * IPv6 blocks refused whatever ipaddr.js calls them (it reads them as ordinary unicast or as a
 * range whose embedded address is not where it looks):
 * - `::/96`, the deprecated IPv4-compatible form (`::127.0.0.1` is `::7f00:1`), with `::` and `::1`;
 * - `64:ff9b:1::/48`, local-use NAT64 (RFC 8215): the network chooses its prefix length, so the
 *   IPv4 address it carries cannot be read from the address alone;
 * - `2001::/23`, IETF protocol assignments (TEREDO, ORCHID, AMT, benchmarking and the rest).
 */
const REFUSED_IPV6: [ipaddr.IPv6, number][] = [
  [ipaddr.IPv6.parse('::'), 96],
  [ipaddr.IPv6.parse('64:ff9b:1::'), 48],
  [ipaddr.IPv6.parse('2001::'), 23],
];

/**
 * IPv6 ranges that carry an IPv4 address in their last 32 bits: IPv4-mapped `::ffff:0:0/96`,
 * IPv4-translated `::ffff:0:0:0/96` (SIIT) and the well-known NAT64 prefix `64:ff9b::/96`.
 * An address of these is judged by the IPv4 address it carries.
 */
const CARRIES_IPV4 = new Set(['ipv4Mapped', 'rfc6145', 'rfc6052']);

/** An IP literal read by ipaddr.js, or undefined for anything else (a host name, a zone id). */
function parseAddress(address: string): ipaddr.IPv4 | ipaddr.IPv6 | undefined {
  if (address.includes('%')) return undefined;
  if (net.isIPv4(address)) return ipaddr.IPv4.parse(address);
  if (!net.isIPv6(address)) return undefined;
  // ipaddr.js 2.5 reads `::a.b.c.d` as `::ffff:a.b.c.d`; the WHATWG URL parser writes every IPv6
  // form as its canonical hex (`::7f00:1`), which ipaddr.js reads right.
  return ipaddr.IPv6.parse(new URL(`http://[${address}]/`).hostname.slice(1, -1));
}

function isPublic(address: ipaddr.IPv4 | ipaddr.IPv6): boolean {
  if (address.kind() === 'ipv4') return address.range() === 'unicast';
  const v6 = address as ipaddr.IPv6;
  if (REFUSED_IPV6.some((block) => v6.match(block))) return false;
  const range = v6.range();
  if (CARRIES_IPV4.has(range)) return isPublic(new ipaddr.IPv4(v6.toByteArray().slice(12)));
  return range === 'unicast';
}

/**
 * True when `address` (an IP literal, in any form node or a URL writes it) is a public unicast
 * address. Classified by ipaddr.js: IPv4 `unicast` only (not private, loopback, link-local,
 * CGNAT, documentation, benchmarking, reserved, multicast, broadcast); IPv6 `unicast` only (not
 * loopback, unique-local, link-local, site-local, multicast, 6to4, TEREDO, discard, documentation,
 * reserved), outside the blocks above, and IPv6 forms that carry an IPv4 address by that address.
 */
export function isPublicAddress(address: string): boolean {
  const parsed = parseAddress(address);
  return parsed !== undefined && isPublic(parsed);
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
  // No empty host here: the URL parser refuses an http(s) URL without one.
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

import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from 'node:dns';
import { BlockList, isIP } from 'node:net';
import {
  WebhookTargetRefusedError,
  type AddressCategory,
} from '../errors/webhook-target-refused-error.ts';

export { WebhookTargetRefusedError, type AddressCategory };

/**
 * Which webhook targets Baton may call (SSRF): a webhook URL comes from an API caller, and the
 * request leaves from inside the deployment, so an address that is not public (loopback, private
 * networks, link-local such as the cloud metadata service at 169.254.169.254, carrier-grade NAT,
 * multicast, unspecified, reserved) is refused unless the operator allows it. The check runs at
 * registration (400) and again at delivery on the very address the connection uses, so a host
 * that resolves differently later (DNS rebinding) cannot slip through.
 */

const RULES: ReadonlyArray<readonly [string, number, 'ipv4' | 'ipv6', AddressCategory]> = [
  ['0.0.0.0', 8, 'ipv4', 'unspecified'],
  ['127.0.0.0', 8, 'ipv4', 'loopback'],
  ['10.0.0.0', 8, 'ipv4', 'private'],
  ['172.16.0.0', 12, 'ipv4', 'private'],
  ['192.168.0.0', 16, 'ipv4', 'private'],
  ['169.254.0.0', 16, 'ipv4', 'link_local'],
  ['100.64.0.0', 10, 'ipv4', 'cgnat'],
  ['224.0.0.0', 4, 'ipv4', 'multicast'],
  ['240.0.0.0', 4, 'ipv4', 'reserved'], // includes 255.255.255.255
  ['192.0.0.0', 24, 'ipv4', 'reserved'], // IETF protocol assignments
  ['192.0.2.0', 24, 'ipv4', 'reserved'], // documentation
  ['198.51.100.0', 24, 'ipv4', 'reserved'],
  ['203.0.113.0', 24, 'ipv4', 'reserved'],
  ['198.18.0.0', 15, 'ipv4', 'reserved'], // benchmarking
  ['::', 128, 'ipv6', 'unspecified'],
  ['::1', 128, 'ipv6', 'loopback'],
  ['fc00::', 7, 'ipv6', 'private'], // unique local (ULA)
  ['fe80::', 10, 'ipv6', 'link_local'],
  ['fec0::', 10, 'ipv6', 'private'], // deprecated site-local
  ['ff00::', 8, 'ipv6', 'multicast'],
  ['100::', 64, 'ipv6', 'reserved'], // discard-only
  ['2001:db8::', 32, 'ipv6', 'reserved'], // documentation
  ['::', 96, 'ipv6', 'reserved'], // deprecated IPv4-compatible
];

const LISTS = new Map<AddressCategory, BlockList>();
for (const [network, prefix, family, category] of RULES) {
  let list = LISTS.get(category);
  if (!list) LISTS.set(category, (list = new BlockList()));
  list.addSubnet(network, prefix, family);
}

/** The 16 bytes of an IPv6 address (with or without an embedded dotted quad). */
function ipv6Bytes(address: string): number[] {
  let text = address.toLowerCase().split('%')[0]!;
  const quad = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (quad) {
    const parts = quad[1]!.split('.').map(Number);
    const hex = (a: number, b: number): string => ((a << 8) | b).toString(16);
    text = `${text.slice(0, -quad[1]!.length)}${hex(parts[0]!, parts[1]!)}:${hex(parts[2]!, parts[3]!)}`;
  }
  const [head, tail] = text.includes('::') ? text.split('::') : [text, undefined];
  const h = head ? head.split(':') : [];
  const t = tail ? tail.split(':') : [];
  const groups = [...h, ...Array<string>(8 - h.length - t.length).fill('0'), ...t];
  return groups.flatMap((g) => {
    const n = parseInt(g || '0', 16);
    return [n >> 8, n & 0xff];
  });
}

/**
 * The IPv4 address an IPv6 address carries, for the forms that route to it: IPv4-mapped
 * (::ffff:a.b.c.d), NAT64 (64:ff9b::/96) and 6to4 (2002:AABB:CCDD::/48).
 */
function embeddedIpv4(address: string): string | null {
  const b = ipv6Bytes(address);
  const zeros = (from: number, to: number): boolean => b.slice(from, to).every((x) => x === 0);
  const quad = (i: number): string => b.slice(i, i + 4).join('.');
  if (zeros(0, 10) && b[10] === 0xff && b[11] === 0xff) return quad(12);
  if (b[0] === 0x00 && b[1] === 0x64 && b[2] === 0xff && b[3] === 0x9b && zeros(4, 12))
    return quad(12);
  if (b[0] === 0x20 && b[1] === 0x02) return quad(2);
  return null;
}

/** Why an IP address is not a public one; null when it is public. */
export function classifyAddress(address: string): AddressCategory | null {
  const family = isIP(address);
  if (family === 0) throw new Error(`classifyAddress: "${address}" is not an IP address`);
  if (family === 6) {
    const v4 = embeddedIpv4(address);
    if (v4 !== null) return classifyAddress(v4);
  }
  const type = family === 4 ? 'ipv4' : 'ipv6';
  for (const [category, list] of LISTS) if (list.check(address, type)) return category;
  return null;
}

const DESCRIBED: Record<AddressCategory, string> = {
  unspecified: 'an unspecified address',
  loopback: 'a loopback address',
  private: 'a private-network address',
  link_local: 'a link-local address (cloud metadata services live there)',
  cgnat: 'a carrier-grade NAT address',
  multicast: 'a multicast address',
  reserved: 'a reserved address',
};

export interface WebhookTargetPolicyOptions {
  /** BATON_WEBHOOK_ALLOW_PRIVATE: every address is allowed (development, tests). */
  readonly allowPrivate: boolean;
  /** BATON_WEBHOOK_ALLOWED_HOSTS: host names (or IP literals) allowed whatever they resolve to. */
  readonly allowedHosts: readonly string[];
  /** How long a registration waits for DNS (default 5 s). */
  readonly lookupTimeoutMs?: number;
}

type LookupCallback = (
  err: NodeJS.ErrnoException | null,
  address: string | LookupAddress[],
  family?: number,
) => void;

/** The comma-separated BATON_WEBHOOK_ALLOWED_HOSTS as a list. */
export function parseAllowedHosts(value: string): string[] {
  return value
    .split(',')
    .map((h) =>
      h
        .trim()
        .toLowerCase()
        .replace(/^\[|\]$/g, ''),
    )
    .filter((h) => h !== '');
}

export class WebhookTargetPolicy {
  private readonly opts: WebhookTargetPolicyOptions;
  private readonly allowed: Set<string>;

  constructor(opts: WebhookTargetPolicyOptions) {
    this.opts = opts;
    this.allowed = new Set(opts.allowedHosts.map((h) => h.toLowerCase()));
  }

  private exempt(host: string): boolean {
    return this.opts.allowPrivate || this.allowed.has(host.toLowerCase());
  }

  /** The refusal for `host` resolving to `addresses`, or null when every address may be called. */
  refusal(host: string, addresses: readonly string[]): WebhookTargetRefusedError | null {
    if (this.exempt(host)) return null;
    for (const address of addresses) {
      const category = classifyAddress(address);
      if (category === null) continue;
      const shown = address === host ? host : `${host} resolves to ${address}`;
      return new WebhookTargetRefusedError(
        `webhook.url: ${shown}, ${DESCRIBED[category]}; a webhook must reach a public address (the operator can allow it with BATON_WEBHOOK_ALLOW_PRIVATE=1 or BATON_WEBHOOK_ALLOWED_HOSTS)`,
        category,
        { host, address },
      );
    }
    return null;
  }

  /** Registration: parse, resolve and classify. Throws WebhookTargetRefusedError. */
  async check(url: string): Promise<void> {
    const parsed = new URL(url);
    if (parsed.username !== '' || parsed.password !== '')
      throw new WebhookTargetRefusedError(
        'webhook.url: credentials in the URL are not sent; remove "user:password@" and authenticate the request with its signature',
        'credentials',
        { host: parsed.hostname },
      );
    const host = hostOf(parsed);
    if (isIP(host) !== 0) {
      const refused = this.refusal(host, [host]);
      if (refused) throw refused;
      return;
    }
    const addresses = await this.resolve(host);
    const refused = this.refusal(host, addresses);
    if (refused) throw refused;
  }

  private async resolve(host: string): Promise<string[]> {
    const timeoutMs = this.opts.lookupTimeoutMs ?? 5_000;
    let timer: NodeJS.Timeout | undefined;
    try {
      const found = await Promise.race([
        new Promise<LookupAddress[]>((resolve, reject) =>
          dnsLookup(host, { all: true }, (err, addresses) =>
            err ? reject(err) : resolve(addresses),
          ),
        ),
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new Error('DNS timeout')), timeoutMs);
        }),
      ]);
      return found.map((a) => a.address);
    } catch (error) {
      const why = (error as NodeJS.ErrnoException).code ?? (error as Error).message;
      throw new WebhookTargetRefusedError(
        `webhook.url: the host ${host} does not resolve (${why}); check the URL`,
        'unresolvable',
        { host },
      );
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * A `lookup` for http.request / https.request: resolves like dns.lookup and fails the
   * connection when an address is not allowed, so the address checked is the address connected
   * to (no second resolution a rebinding server could answer differently).
   */
  readonly lookup = (hostname: string, options: LookupOptions, callback: LookupCallback): void => {
    dnsLookup(hostname, { ...options, all: true }, (err, addresses) => {
      if (err) {
        callback(err, []);
        return;
      }
      const refused = this.refusal(
        hostname,
        addresses.map((a) => a.address),
      );
      if (refused) {
        callback(refused, []);
        return;
      }
      if (options.all) callback(null, addresses);
      else callback(null, addresses[0]!.address, addresses[0]!.family);
    });
  };

  /** Delivery of an IP-literal URL: connections to literals skip `lookup`, so check it here. */
  literalRefusal(url: URL): WebhookTargetRefusedError | null {
    const host = hostOf(url);
    return isIP(host) === 0 ? null : this.refusal(host, [host]);
  }
}

/** The URL's host without IPv6 brackets. */
function hostOf(url: URL): string {
  return url.hostname.replace(/^\[|\]$/g, '');
}

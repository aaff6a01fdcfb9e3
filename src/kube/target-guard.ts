/**
 * Which addresses a tenant's kubeconfig may make the controller connect to. Without the
 * controller's opt-in (`hoist run --allow-restricted-targets`) a remote cluster's server may not
 * be the management cluster's own API server (the controller's server address and port, or the
 * in-cluster `kubernetes.default.svc` names) nor a link-local or cloud metadata address (where
 * instance credentials are served). Names are checked when the client is made (`checkTarget`)
 * and again at every connection (`guardedLookup`, so a name that later resolves elsewhere — DNS
 * rebinding — is refused too). Loopback and private addresses are allowed: remote clusters live
 * there. Pure but for DNS lookups.
 */
import { lookup as dnsLookup, type LookupAddress, type LookupAllOptions, type LookupOneOptions } from 'node:dns';
import { lookup as dnsLookupAsync } from 'node:dns/promises';
import { BlockList, isIP } from 'node:net';

/** why an address is restricted, or undefined */
export type Restriction = 'link-local' | 'metadata' | 'management-api-server';

/** a refused target address: `restriction` says why (no control flow on the message) */
export class RestrictedTargetError extends Error {
  constructor(
    readonly host: string,
    readonly restriction: Restriction,
    message: string,
  ) {
    super(message);
    this.name = 'RestrictedTargetError';
  }
}

const LINK_LOCAL = new BlockList();
LINK_LOCAL.addSubnet('169.254.0.0', 16, 'ipv4');
LINK_LOCAL.addSubnet('fe80::', 10, 'ipv6');
/** metadata services outside link-local: AWS IMDS over IPv6, Alibaba Cloud, Oracle's legacy address */
const METADATA = new BlockList();
METADATA.addAddress('fd00:ec2::254', 'ipv6');
METADATA.addAddress('100.100.100.200', 'ipv4');
METADATA.addAddress('192.0.0.192', 'ipv4');

const MANAGEMENT_NAMES = /^kubernetes(\.default(\.svc(\..*)?)?)?\.?$/i;

/** the management cluster's API server: its addresses (resolved at start) and port */
export interface ManagementServer {
  addresses: ReadonlySet<string>;
  port: string;
}

/** the addresses and port of `server` (a URL), resolved once; for ManagementServer */
export async function managementServer(server: string): Promise<ManagementServer> {
  const url = new URL(server);
  const host = bare(url.hostname);
  const addresses = isIP(host) ? [host] : (await dnsLookupAsync(host, { all: true }).catch(() => [])).map((a) => a.address);
  return { addresses: new Set(addresses.map(normal)), port: portOf(url) };
}

const bare = (hostname: string): string => hostname.replace(/^\[|\]$/g, '');
const portOf = (url: URL): string => url.port || '443';
/** ::ffff:169.254.169.254 is 169.254.169.254 */
const normal = (address: string): string => address.replace(/^::ffff:(\d+\.\d+\.\d+\.\d+)$/i, '$1').toLowerCase();

/** why connecting to `address`:`port` is restricted, or undefined */
export function restrictionOf(address: string, port: string, mgmt: ManagementServer | undefined): Restriction | undefined {
  const a = normal(address);
  const family = isIP(a) === 6 ? 'ipv6' : 'ipv4';
  if (METADATA.check(a, family)) return 'metadata';
  if (LINK_LOCAL.check(a, family)) return 'link-local';
  if (mgmt && port === mgmt.port && mgmt.addresses.has(a)) return 'management-api-server';
  return undefined;
}

function refusal(host: string, address: string, r: Restriction): RestrictedTargetError {
  const what =
    r === 'management-api-server' ? "the management cluster's own API server" : r === 'metadata' ? 'a cloud metadata address' : 'a link-local address';
  const via = address === host ? '' : ` (resolves to ${address})`;
  return new RestrictedTargetError(host, r, `server ${host}${via} is ${what}: refused unless the controller runs with --allow-restricted-targets`);
}

/**
 * Resolves `server`'s host and throws a RestrictedTargetError when any of its addresses is
 * restricted. A name that does not resolve is let through: connecting then fails as unreachable.
 */
export async function checkTarget(server: string, mgmt: ManagementServer | undefined): Promise<void> {
  const url = new URL(server);
  const host = bare(url.hostname);
  const port = portOf(url);
  if (!isIP(host) && MANAGEMENT_NAMES.test(host)) throw refusal(host, host, 'management-api-server');
  const addresses = isIP(host) ? [host] : (await dnsLookupAsync(host, { all: true }).catch(() => [])).map((a) => a.address);
  for (const a of addresses) {
    const r = restrictionOf(a, port, mgmt);
    if (r) throw refusal(host, a, r);
  }
}

/** errno-style codes of the connection lookup's refusals (net's vocabulary, not Hoist's error codes) */
const ERESTRICTED = 'ERESTRICTED';
const ENOTFOUND = 'ENOTFOUND';

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/**
 * A `lookup` for net/tls.connect that refuses restricted addresses of `port` at every connection
 * (the server's name may resolve elsewhere than when checkTarget ran).
 */
export function guardedLookup(port: string, mgmt: ManagementServer | undefined) {
  return (hostname: string, options: LookupOneOptions | LookupAllOptions, callback: LookupCallback): void => {
    dnsLookup(hostname, { ...options, all: true }, (err, addresses: LookupAddress[]) => {
      if (err) return callback(err, []);
      for (const a of addresses) {
        const r = restrictionOf(a.address, port, mgmt);
        if (r) return callback(Object.assign(refusal(hostname, a.address, r), { code: ERESTRICTED }), []);
      }
      if (options.all) return callback(null, addresses);
      const first = addresses[0];
      if (!first) return callback(Object.assign(new Error(`no address for ${hostname}`), { code: ENOTFOUND }), []);
      callback(null, first.address, first.family);
    });
  };
}

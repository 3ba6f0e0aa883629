/**
 * Which IP addresses the service may connect to when it fetches a URL on a user's behalf
 * (DESIGN §5, issue 3): only global unicast that is not a cloud metadata endpoint, unless
 * the operator allows a network.
 */
import ipaddr from 'ipaddr.js';

type Address = ipaddr.IPv4 | ipaddr.IPv6;
type Network = [Address, number];

// IPv6 global unicast is 2000::/3; everything outside it (IPv4-compatible ::/96, NAT64
// 64:ff9b::/96, discard 100::/64, site-local, …) is refused even where ipaddr.js has no name
// for it. Inside it, ipaddr.js names the special blocks (6to4, Teredo, documentation, …).
const IPV6_GLOBAL_UNICAST: Network = ipaddr.IPv6.parseCIDR('2000::/3');

// Cloud platforms' metadata and host-agent endpoints, refused like the other special ranges
// (and, like them, reachable when FETCH_ALLOW_NETWORKS names them). Most lie in ranges that
// are refused anyway and are listed so a refusal names them; Azure's host agent (wireserver)
// 168.63.129.16 is a public unicast address and is refused only because it is listed here.
const CLOUD_METADATA: Network[] = [
  '169.254.169.254/32', // AWS, Azure IMDS, GCP, Oracle, DigitalOcean, OpenStack, …
  '169.254.170.2/32', // AWS ECS task metadata
  '100.100.100.200/32', // Alibaba Cloud
  '168.63.129.16/32', // Azure host agent / wireserver (a public address)
  'fd00:ec2::254/128', // AWS IMDS over IPv6
  'fd20:ce::254/128', // GCP metadata over IPv6
].map((cidr) => ipaddr.parseCIDR(cidr));

const networkCache = new Map<string, Network>();

function parseNetwork(cidr: string): Network {
  let network = networkCache.get(cidr);
  if (network === undefined) {
    network = parseNetworkStrict(cidr);
    networkCache.set(cidr, network);
  }
  return network;
}

/** One CIDR (or a bare address, taken as a single host), strictly spelled. */
function parseNetworkStrict(entry: string): Network {
  const slash = entry.indexOf('/');
  const addressPart = slash === -1 ? entry : entry.slice(0, slash);
  const prefixPart = slash === -1 ? null : entry.slice(slash + 1);
  let address: Address;
  if (ipaddr.IPv4.isValidFourPartDecimal(addressPart)) {
    address = ipaddr.IPv4.parse(addressPart);
  } else if (addressPart.includes(':') && !addressPart.includes('%') && ipaddr.IPv6.isValid(addressPart)) {
    address = ipaddr.IPv6.parse(addressPart);
  } else {
    throw new Error(`"${entry}" is not an IPv4 or IPv6 network in CIDR notation (e.g. 10.0.0.0/8 or fd00::/8).`);
  }
  const maxPrefix = address.kind() === 'ipv4' ? 32 : 128;
  let prefix = maxPrefix;
  if (prefixPart !== null) {
    if (!/^\d{1,3}$/.test(prefixPart) || Number(prefixPart) > maxPrefix) {
      throw new Error(`"${entry}" has an invalid prefix length (0–${maxPrefix} expected).`);
    }
    prefix = Number(prefixPart);
  }
  // Normalise to the network address so that "10.1.2.3/8" and "10.0.0.0/8" are one network.
  const network =
    address.kind() === 'ipv4'
      ? ipaddr.IPv4.networkAddressFromCIDR(`${address.toString()}/${prefix}`)
      : ipaddr.IPv6.networkAddressFromCIDR(`${address.toString()}/${prefix}`);
  return [network, prefix];
}

/**
 * Parse the operator's comma-separated list of allowed networks (FETCH_ALLOW_NETWORKS).
 * Empty entries are ignored ('' → []); a bare address means that single host. Returns the
 * networks in normalised CIDR form; throws an Error naming the first bad entry.
 */
export function parseAllowNetworks(csv: string): string[] {
  const result: string[] = [];
  for (const raw of csv.split(',')) {
    const entry = raw.trim();
    if (entry === '') continue;
    const [address, prefix] = parseNetworkStrict(entry);
    result.push(`${address.toString()}/${prefix}`);
  }
  return result;
}

function parseAddress(address: string): Address | null {
  // Only canonical spellings: the URL parser has already turned decimal/octal/hex IPv4
  // into dotted quads, and DNS answers are dotted quads; anything else is not an address.
  if (ipaddr.IPv4.isValidFourPartDecimal(address)) return ipaddr.IPv4.parse(address);
  if (address.includes(':') && ipaddr.IPv6.isValid(address)) return ipaddr.IPv6.parse(address);
  return null;
}

function inNetworks(address: Address, allowNetworks: readonly string[]): boolean {
  for (const cidr of allowNetworks) {
    const network = parseNetwork(cidr);
    if (network[0].kind() === address.kind() && address.match(network)) return true;
  }
  return false;
}

/**
 * The range name of an address ('unicast' for a global unicast address, 'cloudMetadata' for
 * a listed metadata endpoint), IPv4-mapped IPv6 judged by its embedded IPv4 address. `null`
 * when the text is not an IP address.
 */
export function addressRange(address: string): string | null {
  const parsed = parseAddress(address);
  if (parsed === null) return null;
  const effective = parsed.kind() === 'ipv6' && (parsed as ipaddr.IPv6).isIPv4MappedAddress() ? (parsed as ipaddr.IPv6).toIPv4Address() : parsed;
  if (CLOUD_METADATA.some((network) => network[0].kind() === effective.kind() && effective.match(network))) {
    return 'cloudMetadata';
  }
  const range = effective.range();
  if (range === 'unicast' && effective.kind() === 'ipv6' && !effective.match(IPV6_GLOBAL_UNICAST)) {
    return 'reserved';
  }
  return range;
}

/**
 * True when the service may connect to `address`: it lies inside one of `allowNetworks`
 * (checked both as written and, for IPv4-mapped IPv6, as its embedded IPv4 address), or
 * it is a global unicast address. Anything that is not a plain IP address is refused.
 */
export function isAddressAllowed(address: string, allowNetworks: readonly string[]): boolean {
  const parsed = parseAddress(address);
  if (parsed === null) return false;
  if (inNetworks(parsed, allowNetworks)) return true;
  if (parsed.kind() === 'ipv6' && (parsed as ipaddr.IPv6).isIPv4MappedAddress()) {
    if (inNetworks((parsed as ipaddr.IPv6).toIPv4Address(), allowNetworks)) return true;
  }
  return addressRange(address) === 'unicast';
}

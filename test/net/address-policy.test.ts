import { describe, expect, it } from 'vitest';
import { addressRange } from '../../src/net/address-policy.js';
import { isAddressAllowed, parseAllowNetworks } from '../../src/net/guarded-fetch.js';

describe('isAddressAllowed without allowNetworks', () => {
  const refused: Array<[string, string]> = [
    ['127.0.0.1', 'loopback'],
    ['127.255.255.254', 'loopback, end of 127/8'],
    ['10.1.2.3', 'private 10/8'],
    ['172.16.0.1', 'private 172.16/12'],
    ['172.31.255.255', 'private 172.16/12, last'],
    ['192.168.1.1', 'private 192.168/16'],
    ['169.254.169.254', 'cloud metadata (link-local)'],
    ['169.254.0.1', 'link-local'],
    ['100.64.0.1', 'CGNAT'],
    ['100.100.100.200', 'Alibaba metadata (CGNAT)'],
    ['168.63.129.16', 'Azure host agent / wireserver (a public address)'],
    ['::ffff:168.63.129.16', 'IPv4-mapped Azure wireserver'],
    ['0.0.0.0', 'unspecified'],
    ['0.1.2.3', 'this network 0/8'],
    ['255.255.255.255', 'broadcast'],
    ['224.0.0.1', 'multicast'],
    ['239.255.255.250', 'multicast SSDP'],
    ['240.0.0.1', 'reserved 240/4'],
    ['192.0.0.170', 'IETF protocol assignments'],
    ['192.0.2.1', 'documentation TEST-NET-1'],
    ['198.18.0.1', 'benchmarking'],
    ['::', 'IPv6 unspecified'],
    ['::1', 'IPv6 loopback'],
    ['fe80::1', 'IPv6 link-local'],
    ['fe80::1%eth0', 'IPv6 link-local with zone'],
    ['fc00::1', 'unique-local'],
    ['fd00:ec2::254', 'AWS IPv6 metadata (unique-local)'],
    ['ff02::1', 'IPv6 multicast'],
    ['fec0::1', 'deprecated site-local'],
    ['::ffff:127.0.0.1', 'IPv4-mapped loopback'],
    ['::ffff:7f00:1', 'IPv4-mapped loopback, hex form'],
    ['::ffff:10.0.0.1', 'IPv4-mapped private'],
    ['::ffff:169.254.169.254', 'IPv4-mapped metadata'],
    ['::127.0.0.1', 'IPv4-compatible (deprecated)'],
    ['::ffff:0:127.0.0.1', 'IPv4-translated (RFC 6145)'],
    ['64:ff9b::7f00:1', 'NAT64 of 127.0.0.1'],
    ['64:ff9b::808:808', 'NAT64 of a public address'],
    ['64:ff9b:1::a00:1', 'local-use NAT64'],
    ['2002:7f00:1::', '6to4 of 127.0.0.1'],
    ['2002:808:808::1', '6to4 of a public address'],
    ['2001:0:4136:e378:8000:63bf:3fff:fdd2', 'Teredo'],
    ['2001:db8::1', 'documentation'],
    ['100::1', 'discard-only'],
    ['localhost', 'a name, not an address'],
    ['', 'empty'],
    ['127.1', 'non-canonical IPv4 spelling'],
    ['2130706433', 'decimal IPv4 spelling'],
    ['0x7f.0.0.1', 'hex IPv4 spelling'],
    ['[::1]', 'bracketed (URL form, not an address)'],
  ];
  it.each(refused)('refuses %s (%s)', (address) => {
    expect(isAddressAllowed(address, [])).toBe(false);
  });

  const allowed: Array<[string, string]> = [
    ['8.8.8.8', 'public DNS'],
    ['1.1.1.1', 'public DNS'],
    ['93.184.215.14', 'public web'],
    ['172.15.255.255', 'just below 172.16/12'],
    ['172.32.0.1', 'just above 172.16/12'],
    ['100.63.255.255', 'just below CGNAT'],
    ['100.128.0.1', 'just above CGNAT'],
    ['2606:4700:4700::1111', 'public IPv6'],
    ['2001:4860:4860::8888', 'public IPv6'],
    ['::ffff:8.8.8.8', 'IPv4-mapped public address'],
    ['168.63.129.15', 'just below the Azure wireserver'],
    ['168.63.129.17', 'just above the Azure wireserver'],
  ];
  it.each(allowed)('allows %s (%s)', (address) => {
    expect(isAddressAllowed(address, [])).toBe(true);
  });
});

describe('isAddressAllowed with allowNetworks', () => {
  const cases: Array<[string, string[], boolean]> = [
    ['127.0.0.1', ['127.0.0.0/8'], true],
    ['127.9.9.9', ['127.0.0.0/8'], true],
    ['127.0.0.2', ['127.0.0.1/32'], false],
    ['::1', ['::1/128'], true],
    ['::1', ['127.0.0.0/8'], false],
    ['127.0.0.1', ['::1/128'], false],
    ['::ffff:127.0.0.1', ['127.0.0.0/8'], true],
    ['10.0.0.1', ['127.0.0.0/8', '::1/128'], false],
    ['10.20.30.40', ['10.0.0.0/8'], true],
    ['fd00:ec2::254', ['fd00::/8'], true],
    ['fd00:ec2::254', ['fc00::/8'], false],
    ['2002:7f00:1::', ['2002::/16'], true],
    ['169.254.169.254', ['169.254.0.0/16'], true],
    // The operator's list wins for every metadata address alike (README, Configuration).
    ['168.63.129.16', ['168.63.129.16/32'], true],
    ['168.63.129.16', ['168.63.0.0/16'], true],
    ['::ffff:168.63.129.16', ['168.63.129.16/32'], true],
    ['168.63.129.16', ['10.0.0.0/8', '169.254.0.0/16'], false],
    ['8.8.8.8', ['127.0.0.0/8'], true],
    ['not-an-ip', ['0.0.0.0/0', '::/0'], false],
  ];
  it.each(cases)('%s with %j → %s', (address, networks, expected) => {
    expect(isAddressAllowed(address, networks)).toBe(expected);
  });
});

describe('addressRange', () => {
  const cases: Array<[string, string | null]> = [
    ['8.8.8.8', 'unicast'],
    ['10.1.2.3', 'private'],
    ['169.254.169.254', 'cloudMetadata'],
    ['169.254.170.2', 'cloudMetadata'],
    ['169.254.1.1', 'linkLocal'],
    ['100.100.100.200', 'cloudMetadata'],
    ['168.63.129.16', 'cloudMetadata'],
    ['::ffff:168.63.129.16', 'cloudMetadata'],
    ['fd00:ec2::254', 'cloudMetadata'],
    ['fd00:ec2::1', 'uniqueLocal'],
    ['not-an-ip', null],
  ];
  it.each(cases)('%s → %s', (address, range) => {
    expect(addressRange(address)).toBe(range);
  });
});

describe('parseAllowNetworks', () => {
  const good: Array<[string, string[]]> = [
    ['', []],
    ['   ', []],
    ['127.0.0.0/8', ['127.0.0.0/8']],
    ['127.0.0.0/8, ::1/128', ['127.0.0.0/8', '::1/128']],
    ['127.0.0.0/8,,::1/128,', ['127.0.0.0/8', '::1/128']],
    ['10.1.2.3/8', ['10.0.0.0/8']],
    ['192.168.1.5', ['192.168.1.5/32']],
    ['fd00::', ['fd00::/128']],
    ['FD00:EC2::/32', ['fd00:ec2::/32']],
    ['0.0.0.0/0', ['0.0.0.0/0']],
  ];
  it.each(good)('accepts %j', (csv, expected) => {
    expect(parseAllowNetworks(csv)).toEqual(expected);
  });

  const bad: Array<[string, string]> = [
    ['nope', 'nope'],
    ['127.0.0.0/8,nope', 'nope'],
    ['10.0.0.0/33', '10.0.0.0/33'],
    ['::/129', '::/129'],
    ['10.0.0.0/-1', '10.0.0.0/-1'],
    ['10.0.0.0/', '10.0.0.0/'],
    ['10.0.0.0/8/9', '10.0.0.0/8/9'],
    ['10.0.0.0/ 8', '10.0.0.0/ 8'],
    ['127.1/8', '127.1/8'],
    ['0x7f.0.0.1/8', '0x7f.0.0.1/8'],
    ['2130706433/32', '2130706433/32'],
    ['fe80::1%eth0/64', 'fe80::1%eth0/64'],
    ['localhost', 'localhost'],
  ];
  it.each(bad)('rejects %j naming %j', (csv, entry) => {
    expect(() => parseAllowNetworks(csv)).toThrow(entry);
  });
});

/** IP allowlist matching (IPv4/IPv6 addresses and CIDR ranges) on top of ipaddr.js. */
import ipaddr from 'ipaddr.js';

type Range = [ipaddr.IPv4 | ipaddr.IPv6, number];

/** Parses allowlist entries once; entries that do not parse are skipped (validation rejects them on input). */
export function compileAllowlist(entries: readonly string[] | null | undefined): Range[] | null {
  if (!entries || entries.length === 0) return null;
  const out: Range[] = [];
  for (const e of entries) {
    try {
      if (e.includes('/')) out.push(ipaddr.parseCIDR(e));
      else {
        const a = ipaddr.process(e);
        out.push([a, a.kind() === 'ipv4' ? 32 : 128]);
      }
    } catch {
      /* skip */
    }
  }
  return out;
}

/** True when `ip` falls in one of the ranges; an empty/null list allows everything. */
export function ipAllowed(ip: string, ranges: Range[] | null): boolean {
  if (!ranges) return true;
  let addr: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    // process() turns IPv4-mapped IPv6 (::ffff:10.0.0.1) into plain IPv4.
    addr = ipaddr.process(ip);
  } catch {
    return false;
  }
  return ranges.some(([net, bits]) => net.kind() === addr.kind() && addr.match(net, bits));
}

/**
 * Fastify's trustProxy from TRUST_PROXY: a hop count becomes "trust the nearest n hops" (what
 * Fastify does with a number, which its types do not declare); addresses and booleans pass through.
 */
export function trustProxyOption(v: boolean | number | string[]): boolean | string[] | ((addr: string, hop: number) => boolean) {
  return typeof v === 'number' ? (_addr: string, hop: number) => hop < v : v;
}

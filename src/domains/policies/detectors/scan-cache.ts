/**
 * A small process-wide cache of scan results for repeated identical texts: agents resend the same
 * system prompt and conversation prefix at every step, and the scans of a text depend on nothing
 * else (docs/decisions.md, "Detector speed"). Choices:
 *  - the key is the caller's scope (the agent id: no organization can learn by timing whether
 *    another one sent a text), the detector and its options, and the SHA-256 of the text, never the
 *    text itself: the cache keeps no payload (PII, secrets) alive past its request;
 *  - only texts of SCAN_CACHE_MIN_CHARS to SCAN_CACHE_MAX_CHARS: above, the caps of walk.ts cut the
 *    text anyway; below, see SCAN_CACHE_MIN_CHARS;
 *  - bounded by entries (SCAN_CACHE_ENTRIES, least recently used out); a value is a scan's raw
 *    result (offsets and scores, at most 100 findings), which callers copy and never change.
 * The decision must meet its time target without it (bench:enforce-engine measures both paths).
 */
import * as crypto from 'node:crypto';
import { LRUCache } from 'lru-cache';

/**
 * The shortest text cached. It was 512 when each detector had its own entry; one entry per root now
 * holds every PII kind, the injection analysis and the output categories, and on a short text those
 * scans together cost far more than the digest. Measured (`BENCH_CROSSOVER=1 npm run
 * bench:enforce-engine`, bench/README.md), CPU per decision of an output of 16 to 128 characters:
 * the benchmark's 14 scanning policies ~6-9 µs scanned, ~2.3 on a hit, 1-2 more than scanned on a
 * miss (digest, entry, insert, the entry kept until evicted): caching pays from ~10-35 % of repeated
 * texts, at every length (the crossover is below 16 characters). Its 8 data_restriction policies
 * alone: below 64 characters a hit costs more than the scan (the digest and lookup), at 64-128 it
 * pays only from ~70-95 % of repeats, at 256 from ~50 %. 64 keeps those shortest texts out.
 */
export const SCAN_CACHE_MIN_CHARS = 64;
export const SCAN_CACHE_MAX_CHARS = 256 * 1024;
/** Entries kept: a request may hold two (input and output), so 8,192 reach ~4,000 requests, as 4,096 did with one (entries are ~1 KB: docs/decisions.md, "Detector speed"). */
export const SCAN_CACHE_ENTRIES = 8192;

const cache = new LRUCache<string, object>({ max: SCAN_CACHE_ENTRIES });
const stats = { hits: 0, misses: 0 };
let enabled = true;
let minChars = SCAN_CACHE_MIN_CHARS;

// crypto.hash (Node >= 20.12) hashes in one call, ~2.5 times faster than createHash on 1 KB here.
const oneShot = (crypto as { hash?: (algorithm: string, data: string, encoding: 'base64') => string }).hash;

/** The digest of a text for a key (SHA-256, base64). */
export const textDigest = (text: string): string => (oneShot ? oneShot('sha256', text, 'base64') : crypto.createHash('sha256').update(text).digest('base64'));

/** Whether a text of this length goes through the cache. */
export const worthCaching = (length: number): boolean => enabled && length >= minChars && length <= SCAN_CACHE_MAX_CHARS;

/** The result cached under `key`, or `compute()` stored under it. */
export function cachedScan<T extends object>(key: string, compute: () => T): T {
  const hit = cache.get(key) as T | undefined;
  if (hit !== undefined) {
    stats.hits++;
    return hit;
  }
  stats.misses++;
  const value = compute();
  cache.set(key, value);
  return value;
}

/** Hits and misses since the start (or the last clear), and the entries held. */
export const scanCacheStats = () => ({ ...stats, entries: cache.size });

/**
 * Empties the cache and its counters; `on` false turns it off (tests, the benchmark's miss path);
 * `shortest` overrides SCAN_CACHE_MIN_CHARS until the next reset (the benchmark's crossover).
 */
export function resetScanCache(on = true, shortest = SCAN_CACHE_MIN_CHARS): void {
  cache.clear();
  stats.hits = 0;
  stats.misses = 0;
  enabled = on;
  minChars = shortest;
}

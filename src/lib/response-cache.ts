/**
 * A per-organization cache of serialized list pages for hot, rarely-written reads (GET /teams).
 *
 * Correctness: entries are keyed by (organization, scope, version, query). A change bumps the
 * version after it commits, here and, over pub/sub, on every instance, so the next read misses.
 * A reader stores its page under the version it saw *before* querying: a write that commits
 * meanwhile bumps past it, and the stale page is never served under the new version. Pub/sub is
 * at-most-once, so entries also expire after `ttlMs`: the most another instance can lag.
 * Entries live in an LRU bounded by their size in bytes (docs/decisions.md, "Security hardening").
 */
import { LRUCache } from 'lru-cache';
import type { SharedState } from './shared-state.js';
import { followInvalidations } from './lookup-cache.js';

const CHANNEL = 'cache:invalidate';

export class ResponseCache {
  private versions = new Map<string, number>();
  private entries: LRUCache<string, string>;

  constructor(
    private state: SharedState,
    ttlMs = 5_000,
    maxBytes = 32 * 1024 * 1024,
  ) {
    // A page larger than maxBytes is simply not stored (lru-cache's maxEntrySize defaults to maxSize).
    this.entries = new LRUCache({ maxSize: maxBytes, sizeCalculation: (body) => Math.max(1, Buffer.byteLength(body)), ttl: ttlMs });
    followInvalidations(state, CHANNEL, (m) => this.bump(m), () => this.entries.clear());
  }

  private bump(scopeKey: string) {
    this.versions.set(scopeKey, (this.versions.get(scopeKey) ?? 0) + 1);
  }

  /** The current version of an organization's scope; read it before querying. */
  version(orgId: string, scope: string) {
    return this.versions.get(`${orgId}:${scope}`) ?? 0;
  }

  /** A cached body, or undefined. */
  get(orgId: string, scope: string, query: string): string | undefined {
    return this.entries.get(`${orgId}:${scope}:${this.version(orgId, scope)}:${query}`);
  }

  /** Stores a body under the version read before the query was made. */
  set(orgId: string, scope: string, version: number, query: string, body: string) {
    if (version !== this.version(orgId, scope)) return; // a write committed meanwhile
    this.entries.set(`${orgId}:${scope}:${version}:${query}`, body);
  }

  /** Call after a change to the scope commits: every instance stops serving older pages. */
  async invalidate(orgId: string, scope: string) {
    // This instance is current at once; if the publish fails (run through afterCommit, which logs
    // and counts it), other instances catch up within the TTL.
    this.bump(`${orgId}:${scope}`);
    await this.state.publish(CHANNEL, `${orgId}:${scope}`);
  }
}

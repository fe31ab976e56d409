/**
 * A per-organization cache of serialized list pages for hot, rarely-written reads (GET /teams).
 *
 * Correctness: entries are keyed by (organization, scope, version, query). A change bumps the
 * version after it commits, here and, over pub/sub, on every instance, so the next read misses.
 * A reader stores its page under the version it saw *before* querying: a write that commits
 * meanwhile bumps past it, and the stale page is never served under the new version. Pub/sub is
 * at-most-once, so entries also expire after `ttlMs`: the most another instance can lag.
 */
import type { SharedState } from './shared-state.js';

const CHANNEL = 'cache:invalidate';

export class ResponseCache {
  private versions = new Map<string, number>();
  private entries = new Map<string, { body: string; until: number }>();

  constructor(
    private state: SharedState,
    private ttlMs = 5_000,
    private maxEntries = 10_000,
  ) {
    state.subscribe(CHANNEL, (m) => this.bump(m));
    // Invalidations published while the subscriber was away are lost: forget every page.
    state.onReconnect(() => this.entries.clear());
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
    const k = `${orgId}:${scope}:${this.version(orgId, scope)}:${query}`;
    const e = this.entries.get(k);
    if (!e) return undefined;
    if (e.until <= Date.now()) {
      this.entries.delete(k);
      return undefined;
    }
    return e.body;
  }

  /** Stores a body under the version read before the query was made. */
  set(orgId: string, scope: string, version: number, query: string, body: string) {
    if (version !== this.version(orgId, scope)) return; // a write committed meanwhile
    if (this.entries.size >= this.maxEntries) this.entries.clear();
    this.entries.set(`${orgId}:${scope}:${version}:${query}`, { body, until: Date.now() + this.ttlMs });
  }

  /** Call after a change to the scope commits: every instance stops serving older pages. */
  async invalidate(orgId: string, scope: string) {
    // This instance is current at once; if the publish fails (run through afterCommit, which logs
    // and counts it), other instances catch up within the TTL.
    this.bump(`${orgId}:${scope}`);
    await this.state.publish(CHANNEL, `${orgId}:${scope}`);
  }
}

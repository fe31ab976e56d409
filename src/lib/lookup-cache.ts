/**
 * A read-through cache for credential lookups: bounded LRUs (lru-cache) for found and for missing
 * values, and one load per key however many requests miss it at once.
 *
 * Found and missing values live in separate LRUs so that a flood of unknown keys evicts only other
 * unknown keys, never a valid credential in use. Concurrent misses share one promise (lru-cache's
 * own `fetch` coalesces too, but rejects the waiters when an invalidation aborts the load; here an
 * invalidation during a load only stops its result from being stored). Docs: docs/decisions.md,
 * "Security hardening".
 *
 * SharedLookupCache adds coherence across instances over the shared state's pub/sub, and
 * followInvalidations is its subscription half for caches of other shapes (docs/decisions.md,
 * "Shared building blocks (one copy each)").
 */
import { LRUCache } from 'lru-cache';
import type { SharedState } from './shared-state.js';

export interface LookupCacheOptions {
  /** Most found values kept. */
  max: number;
  /** Most missing keys remembered. */
  maxMissing: number;
  /** How long a found value is served (ms); 0 disables caching. */
  ttlMs: number;
  /** How long a missing key is remembered (ms). */
  missingTtlMs: number;
}

export class LookupCache<V extends {}> {
  private found: LRUCache<string, V> | null;
  private missing: LRUCache<string, true> | null;
  // Loads in progress; a delete marks its key's load stale, so it does not store what it read.
  private loading = new Map<string, { promise: Promise<V | null>; stale: boolean }>();

  constructor(
    private load: (key: string) => Promise<V | null>,
    opts: LookupCacheOptions,
  ) {
    // lru-cache reads a ttl of 0 as "never expires": 0 here means no caching at all.
    this.found = opts.ttlMs > 0 ? new LRUCache({ max: opts.max, ttl: opts.ttlMs }) : null;
    this.missing = opts.missingTtlMs > 0 ? new LRUCache({ max: opts.maxMissing, ttl: opts.missingTtlMs }) : null;
  }

  /** The cached value, or the loaded one (a single load for concurrent callers); null when missing. */
  get(key: string): Promise<V | null> {
    const hit = this.found?.get(key);
    if (hit !== undefined) return Promise.resolve(hit);
    if (this.missing?.has(key)) return Promise.resolve(null);
    const pending = this.loading.get(key);
    if (pending) return pending.promise;
    const entry: { promise: Promise<V | null>; stale: boolean } = { promise: Promise.resolve(null), stale: false };
    entry.promise = this.load(key)
      .then((value) => {
        if (!entry.stale) {
          if (value === null) this.missing?.set(key, true);
          else this.found?.set(key, value);
        }
        return value;
      })
      .finally(() => {
        if (this.loading.get(key) === entry) this.loading.delete(key);
      });
    this.loading.set(key, entry);
    return entry.promise;
  }

  /** The cached value without loading it: undefined unless found and still fresh. */
  peek(key: string): V | undefined {
    return this.found?.get(key);
  }

  /** Forgets a key; a load in progress is not stored and the next get reads again. */
  delete(key: string) {
    this.found?.delete(key);
    this.missing?.delete(key);
    const pending = this.loading.get(key);
    if (pending) pending.stale = true;
    this.loading.delete(key);
  }

  /** Forgets everything (e.g. after missed invalidations). */
  clear() {
    this.found?.clear();
    this.missing?.clear();
    for (const pending of this.loading.values()) pending.stale = true;
    this.loading.clear();
  }
}

/** The parts of the shared state (src/lib/shared-state.ts) a coherent cache uses. */
export type InvalidationBus = Pick<SharedState, 'publish' | 'subscribe' | 'onReconnect'>;

/**
 * Wires a local cache to every instance's invalidations: `forget(message)` for each message
 * published on `channel` (by any instance, this one included), `clearAll()` when the pub/sub
 * connection comes back, since what was published while it was away is lost (at-most-once).
 */
export function followInvalidations(bus: InvalidationBus, channel: string, forget: (message: string) => void, clearAll: () => void) {
  bus.subscribe(channel, forget);
  bus.onReconnect(clearAll);
}

/**
 * A LookupCache kept coherent across instances: `invalidate(key)` forgets the key here at once and,
 * over the shared state's pub/sub, on every instance; a pub/sub reconnect forgets everything; the
 * TTL bounds how long an instance may serve a value whose invalidation was lost. Caches sharing a
 * channel tell their messages apart by `prefix` (prepended to the key on the wire).
 */
export class SharedLookupCache<V extends {}> extends LookupCache<V> {
  private readonly prefix: string;

  constructor(
    private bus: InvalidationBus,
    private channel: string,
    load: (key: string) => Promise<V | null>,
    opts: LookupCacheOptions & { prefix?: string },
  ) {
    super(load, opts);
    this.prefix = opts.prefix ?? '';
    const forget = (message: string) => {
      if (message.startsWith(this.prefix)) this.delete(message.slice(this.prefix.length));
    };
    followInvalidations(bus, channel, forget, () => this.clear());
  }

  /** Forgets a key here at once and, through pub/sub, on every instance. Call after the change commits. */
  async invalidate(key: string) {
    this.delete(key);
    await this.bus.publish(this.channel, this.prefix + key);
  }
}

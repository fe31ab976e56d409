/**
 * The agents the enforce route reads, served from memory (docs/decisions.md, "Enforce route").
 *
 * The same mechanism as the active-policy cache (src/domains/policies/cache.ts): a bounded
 * LookupCache (one load however many requests miss at once; a load overtaken by an invalidation is
 * not stored), entries forgotten on this instance right after commit and on the others through
 * the shared state's pub/sub, everything dropped on a pub/sub reconnect, and a short TTL bounding
 * how long an instance may serve a row whose invalidation was lost.
 *
 * Two levels: what a request names (uuid or external agentId) resolves to the agent's uuid once
 * (an agent's id and agentId never change, agents are archived, never deleted), and the row is
 * cached by uuid. An invalidation names an organization (every agent of it: the kill switch) or
 * agents by uuid, so it never needs to know which names a request used.
 */
import { LRUCache } from 'lru-cache';
import { followInvalidations, LookupCache } from '../../lib/lookup-cache.js';
import type { SharedState } from '../../lib/shared-state.js';
import type { agents } from '../../db/schema/index.js';
import { AGENT_CACHE } from '../../core/cache-names.js';

type Row = typeof agents.$inferSelect;

/** The cache's name (src/core/module.ts `caches`) is its pub/sub channel. */
export { AGENT_CACHE };
const CHANNEL = AGENT_CACHE;

/** Agents kept (rows and resolved names each). */
export const MAX_CACHED_AGENTS = 50_000;
/** How long a row is served without a change being heard of (the most a lost publish costs). */
export const AGENT_CACHE_TTL_MS = 5_000;

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Where rows come from: by uuid (primary key) and by external agentId. */
export interface AgentLoader {
  byId(orgId: string, id: string): Promise<Row | null>;
  byExternal(orgId: string, externalId: string): Promise<Row | null>;
}

/** Agent rows by (organization, uuid or external agentId), invalidated on every instance. */
export class AgentCache {
  private rows: LookupCache<Row>;
  // (org, name) -> uuid for names that are not the agent's own lowercase uuid.
  private names = new LRUCache<string, string>({ max: MAX_CACHED_AGENTS });
  // Organization generations: an organization-wide invalidation moves its generation to a value
  // never used before (`counter` only grows), so rows keyed under an older one are never read
  // again, loads in progress included. An organization evicted from this LRU starts again at the
  // current counter, which is at least its last invalidation's value: still newer than its old rows.
  private gens = new LRUCache<string, number>({ max: MAX_CACHED_AGENTS });
  private counter = 0;
  // What a name last resolved to on a peek: its row key under the organization's generation then.
  // A peek then hashes one key built per request (the request's own name) instead of two, and tests
  // no regex (docs/decisions.md, "Enforce route": kept key strings).
  private hot = new LRUCache<string, { gen: number; key: string }>({ max: MAX_CACHED_AGENTS });

  constructor(
    private loader: AgentLoader,
    private state: SharedState,
    opts: { max?: number; ttlMs?: number } = {},
  ) {
    this.rows = new LookupCache(
      (key) => {
        const [orgId, , id] = key.split('|');
        return this.loader.byId(orgId, id);
      },
      // Misses are not remembered: a newly registered agent is found at once, and 404s are not the hot path.
      { max: opts.max ?? MAX_CACHED_AGENTS, maxMissing: 1, ttlMs: opts.ttlMs ?? AGENT_CACHE_TTL_MS, missingTtlMs: 0 },
    );
    followInvalidations(state, CHANNEL, (message) => this.forget(message), () => this.clear());
  }

  private gen(orgId: string) {
    let g = this.gens.get(orgId);
    if (g === undefined) this.gens.set(orgId, (g = this.counter));
    return g;
  }

  private key(orgId: string, id: string) {
    return `${orgId}|${this.gen(orgId)}|${id}`;
  }

  /** The agent row the request names (uuid or external agentId; a uuid that is one agent's id and another's agentId names the first), or null. */
  async get(orgId: string, idOrExternal: string): Promise<Row | null> {
    const named = this.names.get(`${orgId}|${idOrExternal}`);
    if (named) return this.rows.get(this.key(orgId, named));
    if (UUID_RE.test(idOrExternal)) {
      const row = await this.rows.get(this.key(orgId, idOrExternal.toLowerCase()));
      if (row) return row;
    }
    const found = await this.loader.byExternal(orgId, idOrExternal);
    if (!found) return null;
    this.names.set(`${orgId}|${idOrExternal}`, found.id);
    // Read again through the row cache (a second query, once per name): the row is cached from
    // now on, and a write that committed in between is not missed.
    return this.rows.get(this.key(orgId, found.id));
  }

  /** The row `get` would answer when it is cached (no load, no promise: the enforce path's hit); undefined otherwise. */
  peek(orgId: string, idOrExternal: string): Row | undefined {
    const name = `${orgId}|${idOrExternal}`;
    const gen = this.gen(orgId);
    const hot = this.hot.get(name);
    if (hot && hot.gen === gen) return this.rows.peek(hot.key);
    const id = this.names.get(name) ?? (UUID_RE.test(idOrExternal) ? idOrExternal.toLowerCase() : undefined);
    if (id === undefined) return undefined;
    const key = `${orgId}|${gen}|${id}`;
    const row = this.rows.peek(key);
    if (row) this.hot.set(name, { gen, key });
    return row;
  }

  /** Applies an invalidation message: `org` (every agent of it) or `org:id,id,...`. */
  private forget(message: string) {
    const [orgId, ids] = message.split(':');
    if (ids === undefined) {
      this.gens.set(orgId, ++this.counter);
      return;
    }
    for (const id of ids.split(',')) if (id) this.rows.delete(this.key(orgId, id));
  }

  /** Forgets every agent (on a pub/sub reconnect). */
  clear() {
    this.counter += 1;
    this.gens.clear();
    this.hot.clear();
    this.rows.clear();
  }

  /**
   * Forgets the organization's agents (all of them without `ids`) here at once and, through
   * pub/sub, on every instance. Call after commit.
   */
  async invalidate(orgId: string, ids?: readonly string[]) {
    if (ids && ids.length === 0) return;
    const message = ids ? `${orgId}:${ids.join(',')}` : orgId;
    this.forget(message);
    await this.state.publish(CHANNEL, message);
  }
}

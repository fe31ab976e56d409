/**
 * The active policies of each organization, in evaluation order, cached in memory for enforcement.
 *
 * The same mechanism as the authentication caches (src/http/auth.ts): a bounded LookupCache
 * (lru-cache; one load however many requests miss at once), entries forgotten on this instance at
 * once and on the others through the shared state's pub/sub, every entry dropped on a pub/sub
 * reconnect, and a TTL bounding how long an instance may lag when a publish is lost
 * (docs/decisions.md, "Policies").
 */
import { LRUCache } from 'lru-cache';
import { SharedLookupCache } from '../../lib/lookup-cache.js';
import type { SharedState } from '../../lib/shared-state.js';
import type { Policy } from './schemas.js';

/** The cache's name (src/core/module.ts `caches`) and its pub/sub channel. */
export const POLICY_CACHE = 'policies:active';
const CHANNEL = 'policies:invalidate';

/** Organizations whose active policies are kept. */
export const MAX_CACHED_ORGS = 10_000;
/** How long a snapshot is served without a change being heard of (the most a lost publish costs). */
export const POLICY_CACHE_TTL_MS = 30_000;

/** An organization's active policies as loaded once; `version` changes whenever their content does. */
export interface PolicySnapshot {
  /**
   * Increases (on this instance) each time the organization's active policies are loaded with a
   * different content: the engine may memoize what it compiles by it.
   */
  version: number;
  /** Active policies by ascending priority, then id. Frozen: shared by every caller. */
  policies: readonly Policy[];
}

// The whole content, not ids and updatedAt: two changes within one millisecond share an updatedAt.
const signature = (ps: readonly Policy[]) => JSON.stringify(ps);

/** Per-organization cache of active policies, invalidated on every instance by `invalidate(orgId)`. */
export class ActivePolicyCache {
  private snapshots: SharedLookupCache<PolicySnapshot & { signature: string }>;
  // The last snapshot of each organization, outliving its TTL: a reload that finds the same
  // policies keeps its version, so compiled policies are not rebuilt every TTL.
  private last = new LRUCache<string, PolicySnapshot & { signature: string }>({ max: MAX_CACHED_ORGS });
  private versions = 0;

  constructor(
    load: (orgId: string) => Promise<Policy[]>,
    state: SharedState,
    opts: { max?: number; ttlMs?: number } = {},
  ) {
    const ttlMs = opts.ttlMs ?? POLICY_CACHE_TTL_MS;
    this.snapshots = new SharedLookupCache(
      state,
      CHANNEL,
      async (orgId) => {
        const policies = await load(orgId);
        const sig = signature(policies);
        const prev = this.last.get(orgId);
        if (prev && prev.signature === sig) return prev;
        const next = { version: ++this.versions, policies: Object.freeze(policies.map((p) => Object.freeze(p))), signature: sig };
        this.last.set(orgId, next);
        return next;
      },
      { max: opts.max ?? MAX_CACHED_ORGS, maxMissing: 1, ttlMs, missingTtlMs: 0 },
    );
  }

  /** The organization's active policies with their version (loaded once, then served from memory). */
  async snapshot(orgId: string): Promise<PolicySnapshot> {
    const s = (await this.snapshots.get(orgId))!;
    return { version: s.version, policies: s.policies };
  }

  /** The snapshot when it is cached (no load, no promise: the enforce path's hit); undefined otherwise. */
  peek(orgId: string): PolicySnapshot | undefined {
    return this.snapshots.peek(orgId);
  }

  /** The organization's active policies by ascending priority, then id. */
  async activePolicies(orgId: string): Promise<readonly Policy[]> {
    return (await this.snapshot(orgId)).policies;
  }

  /** Forgets an organization's policies here at once and, through pub/sub, on every instance. Call after commit. */
  async invalidate(orgId: string) {
    await this.snapshots.invalidate(orgId);
  }
}

/**
 * Which event types an organization's active webhooks want, cached per organization: high-volume
 * emitters (trace ingest) ask before writing an event nobody would receive. The same mechanism as
 * the active-policy cache (src/domains/policies/cache.ts): a bounded LookupCache, forgotten on this
 * instance at once and on the others over the shared state's pub/sub after a committed change,
 * cleared on a pub/sub reconnect, and a TTL bounding what a lost publish costs (docs/decisions.md, "Webhooks").
 */
import { SharedLookupCache } from '../../lib/lookup-cache.js';
import type { SharedState } from '../../lib/shared-state.js';
import type { Subscriptions } from '../events/subscriptions.js';
import type { EventType } from '../events/outbox.js';

/** The cache's name (src/core/module.ts `caches`) and its pub/sub channel. */
export const SUBSCRIPTIONS_CACHE = 'webhooks:subscriptions';
const CHANNEL = 'webhooks:invalidate';
const MAX_CACHED_ORGS = 10_000;
/** The most a lost invalidation costs: an event written that nobody wants, or one skipped for a new webhook, for this long. */
export const SUBSCRIPTIONS_TTL_MS = 30_000;

/** Per-organization event types of active webhooks, invalidated on every instance by `invalidate(orgId)`. */
export class SubscriptionCache implements Subscriptions {
  private cache: SharedLookupCache<Set<string>>;

  constructor(
    load: (orgId: string) => Promise<Set<string>>,
    state: SharedState,
    opts: { ttlMs?: number } = {},
  ) {
    this.cache = new SharedLookupCache(state, CHANNEL, load, { max: MAX_CACHED_ORGS, maxMissing: 1, ttlMs: opts.ttlMs ?? SUBSCRIPTIONS_TTL_MS, missingTtlMs: 0 });
  }

  /** True when an active webhook of the organization subscribes to `type`. */
  async wants(orgId: string, type: EventType): Promise<boolean> {
    return (await this.cache.get(orgId))!.has(type);
  }

  /** Forgets the organization here at once and, through pub/sub, on every instance. Call after commit. */
  async invalidate(orgId: string) {
    await this.cache.invalidate(orgId);
  }
}

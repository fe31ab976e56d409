/**
 * The month-to-date spend budget_cap reads on the enforce route, without a database query per
 * request (docs/decisions.md, "Spend counter"). The database row stays the truth: every accrual
 * bumps `spend_seq` in the UPDATE that moves the spend, and ingest, once its transaction has
 * committed and before it answers, writes each agent's new (month, spend) under that version to the
 * shared state. A read that finds nothing fills the counter from the row, under the row's version.
 * The shared state keeps the newest version whoever lands last, so a fill that read the row before
 * a concurrent batch committed never hides that batch.
 *
 * What a read can miss: an accrual whose post-commit write was lost (the instance died between
 * commit and write, or Redis refused it), for at most SPEND_COUNTER_TTL_MS, when the entry expires
 * and is read again from the row.
 *
 * The counter is used only where it is exact: on Redis (every instance writes and reads the same
 * entries) and on the embedded PGlite (one process owns the database). PostgreSQL without Redis may
 * run several instances that each keep their own memory, so there every read goes to the row.
 */
import { LRUCache } from 'lru-cache';
import type { MaybePromise, SharedState, Versioned } from '../../lib/shared-state.js';
import { spendNow } from './service.js';

/** How long an entry is trusted before it is read again from the row: the bound on a lost write. */
export const SPEND_COUNTER_TTL_MS = 10_000;

/** An agent's spend as the row holds it after an accrual (or as a fill read it). */
export interface SpendVersion {
  agentId: string;
  /** 'YYYY-MM' (UTC) the spend belongs to. */
  month: string;
  spend: number;
  /** The row's spend_seq: higher is newer. */
  seq: number;
}

/** Reads the row's spend version (null for an unknown agent). */
export type SpendRowReader = (orgId: string, agentId: string) => Promise<SpendVersion | null>;

const key = (orgId: string, agentId: string) => `spend:${orgId}:${agentId}`;
/** Agents whose key string is kept (as many as the agent cache keeps). */
const KEPT_KEYS = 50_000;
const encode = (v: SpendVersion) => `${v.month} ${v.spend}`;

/** A stored value (`YYYY-MM spend`) as a version, or null when it is not one (then the row is read). */
const decode = (agentId: string, seq: number, value: string): SpendVersion | null => {
  const m = /^(\d{4}-\d{2}) (\S+)$/.exec(value);
  const spend = m ? Number(m[2]) : Number.NaN;
  return m && Number.isFinite(spend) ? { agentId, month: m[1], spend, seq } : null;
};

/** The spend of the month of `now` in a version: 0 when it belongs to another month (spendNow, as for the row). */
const spendAt = (v: SpendVersion, now: Date) => spendNow({ spendMonth: v.month, currentMonthCostUsd: v.spend }, now);

/** Month-to-date spend per agent on the shared state, moved by ingest after commit. */
export class SpendCounter {
  // Each agent's key string, built once: the enforce path reads it per request, and a string built
  // per request is hashed at every lookup (docs/decisions.md, "Enforce route").
  private readonly keys = new LRUCache<string, { orgId: string; key: string }>({ max: KEPT_KEYS });

  /**
   * `exact` says whether the shared state is seen by every writer of the database (Redis, or the
   * embedded database of this one process); when false every read goes to the row.
   */
  constructor(
    private readonly state: SharedState,
    private readonly readRow: SpendRowReader,
    readonly exact: boolean,
  ) {}

  /**
   * The agent's spend in the month of `now`: from the counter, or from the row (filling the counter).
   * A number at once when the in-process state holds it (no promise on the enforce path), else a promise.
   */
  read(orgId: string, agentId: string, now: Date): MaybePromise<number> {
    if (!this.exact) return this.fromRow(orgId, agentId, now);
    let hit: MaybePromise<Versioned | null>;
    try {
      hit = this.state.getVersioned(this.keyOf(orgId, agentId));
    } catch {
      hit = null;
    }
    // Fail over to the row: a shared-state outage (or a value that is not ours) must not turn budgets off.
    if (!(hit instanceof Promise)) return this.fromCounter(orgId, agentId, hit, now);
    return hit.catch(() => null).then((h) => this.fromCounter(orgId, agentId, h, now));
  }

  /** The agent's key (kept per agent id, checked against its organization). */
  private keyOf(orgId: string, agentId: string): string {
    const kept = this.keys.get(agentId);
    if (kept && kept.orgId === orgId) return kept.key;
    const k = key(orgId, agentId);
    this.keys.set(agentId, { orgId, key: k });
    return k;
  }

  /** The spend a stored value holds, or the row's when there is none (or it is not ours). */
  private fromCounter(orgId: string, agentId: string, hit: Versioned | null, now: Date): MaybePromise<number> {
    const stored = hit && decode(agentId, hit.version, hit.value);
    return stored ? spendAt(stored, now) : this.fromRow(orgId, agentId, now);
  }

  /** Reads the row and, where the counter is exact, fills the counter with it. */
  private async fromRow(orgId: string, agentId: string, now: Date): Promise<number> {
    const row = await this.readRow(orgId, agentId);
    if (!row) return 0;
    if (this.exact) await this.store(orgId, [row]).catch(() => {});
    return spendAt(row, now);
  }

  /** Writes accrued versions (after the accrual committed); an older version never replaces a newer one. */
  async store(orgId: string, versions: readonly SpendVersion[]): Promise<void> {
    if (!this.exact) return;
    await Promise.all(versions.map((v) => this.state.putVersioned(key(orgId, v.agentId), v.seq, encode(v), SPEND_COUNTER_TTL_MS)));
  }
}

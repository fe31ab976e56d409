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
import type { SharedState } from '../../lib/shared-state.js';
import { monthOf } from './service.js';

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
const encode = (v: SpendVersion) => `${v.month} ${v.spend}`;

/** The spend of `month` in a stored version: 0 when the version belongs to another month (as spendNow). */
const spendIn = (month: string, storedMonth: string, spend: number) => (storedMonth === month ? spend : 0);

/** Month-to-date spend per agent on the shared state, moved by ingest after commit. */
export class SpendCounter {
  /**
   * `exact` says whether the shared state is seen by every writer of the database (Redis, or the
   * embedded database of this one process); when false every read goes to the row.
   */
  constructor(
    private readonly state: SharedState,
    private readonly readRow: SpendRowReader,
    readonly exact: boolean,
  ) {}

  /** The agent's spend in the month of `now`: from the counter, or from the row (filling the counter). */
  async read(orgId: string, agentId: string, now: Date): Promise<number> {
    const month = monthOf(now);
    if (this.exact) {
      // Fail over to the row: a shared-state outage must not turn budgets off (fail closed).
      const hit = await this.state.getVersioned(key(orgId, agentId)).catch(() => null);
      if (hit) {
        const sp = hit.value.indexOf(' ');
        return spendIn(month, hit.value.slice(0, sp), Number(hit.value.slice(sp + 1)));
      }
    }
    const row = await this.readRow(orgId, agentId);
    if (!row) return 0;
    if (this.exact) await this.store(orgId, [row]).catch(() => {});
    return spendIn(month, row.month, row.spend);
  }

  /** Writes accrued versions (after the accrual committed); an older version never replaces a newer one. */
  async store(orgId: string, versions: readonly SpendVersion[]): Promise<void> {
    if (!this.exact) return;
    await Promise.all(versions.map((v) => this.state.putVersioned(key(orgId, v.agentId), v.seq, encode(v), SPEND_COUNTER_TTL_MS)));
  }
}

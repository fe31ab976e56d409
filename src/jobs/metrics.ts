/** Per-type counters of one runner, and the snapshot that joins them with the queue's depth. */
import type { Db } from '../db/client.js';
import { queueDepth } from './store.js';

export interface TypeCounters {
  /** Runs started, succeeded, failed (a retry is scheduled) and moved to dead by this runner. */
  started: number;
  succeeded: number;
  failed: number;
  dead: number;
  /** Due-to-start delay and run time, summed and at most, in ms. */
  waitMsTotal: number;
  waitMsMax: number;
  runMsTotal: number;
  runMsMax: number;
}

export interface JobsSnapshot {
  /** From the database: every instance's jobs, by type and status. */
  queue: Array<{ type: string; status: string; count: number }>;
  /** Per type: how long the oldest due pending job has waited (ms), 0 when none is due. */
  oldestDueWaitMs: Record<string, number>;
  dead: number;
  /** This process only. */
  runs: Record<string, TypeCounters>;
  inFlight: number;
}

/** The runner's in-memory counters by job type. */
export class JobCounters {
  readonly byType = new Map<string, TypeCounters>();

  /** The counters of `type`, created on first use. */
  of(type: string): TypeCounters {
    let c = this.byType.get(type);
    if (!c) this.byType.set(type, (c = { started: 0, succeeded: 0, failed: 0, dead: 0, waitMsTotal: 0, waitMsMax: 0, runMsTotal: 0, runMsMax: 0 }));
    return c;
  }
}

/** Reads the queue's depth and merges this runner's counters into one snapshot. */
export async function jobsSnapshot(db: Db, counters: JobCounters, inFlight: number, now: Date): Promise<JobsSnapshot> {
  const rows = await queueDepth(db, now);
  const oldestDueWaitMs: Record<string, number> = {};
  for (const r of rows) {
    if (r.status !== 'pending') continue;
    oldestDueWaitMs[r.type] = r.oldest_due ? Math.max(0, now.getTime() - new Date(r.oldest_due).getTime()) : 0;
  }
  return {
    queue: rows.map(({ type, status, count }) => ({ type, status, count })),
    oldestDueWaitMs,
    dead: rows.filter((r) => r.status === 'dead').reduce((n, r) => n + r.count, 0),
    runs: Object.fromEntries([...counters.byType].map(([t, c]) => [t, { ...c }])),
    inFlight,
  };
}

/**
 * The policy-decisions module: the buffered log of deny and require_approval decisions, the
 * per-policy decision counters, and their read routes (docs/decisions.md, "Decision log and policy
 * stats"). The enforce route calls `services.policyDecisions.record(...)`.
 */
import { defineModule } from '../../core/module.js';
import { DecisionLog } from './log.js';
import { policyDecisionRoutes } from './routes.js';
import { deleteExpiredCounts, deleteExpiredDecisions } from './service.js';
import type { RetentionLimits } from '../../db/retention.js';

export { DecisionLog, DEFAULT_MAX_BUFFERED, type DecisionLogCounts, type DecisionLogOptions, type DecisionRecordInput } from './log.js';
export { policyDecisionSchema, policyStatsSchema, type PolicyDecision, type PolicyStats } from './schemas.js';

const HOUR_MS = 3_600_000;

export const policyDecisionsModule = defineModule({
  name: 'policyDecisions',
  routes: policyDecisionRoutes,
  needs: ['config', 'db', 'clock', 'subscriptions'],
  services: ({ config, db, clock, subscriptions }) => {
    // Events of a decision reach the outbox only when a webhook wants their type.
    const log = new DecisionLog({ db, subscriptions });
    return {
      /** Buffers one decision: synchronous, no I/O, never throws. */
      record: (input: Parameters<DecisionLog['record']>[0]) => log.record(input),
      /** Writes what is buffered (rows, counters, events) in one transaction; throws when it could not (the batch is kept). */
      flush: () => log.flush(),
      /** The buffer itself (figures, held sizes). */
      log,
      flushIntervalMs: config.DECISIONS_FLUSH_INTERVAL_MS,
      /** Deletes counter buckets older than the longest stats window (see service.ts). */
      deleteExpiredCounts: () => deleteExpiredCounts(db, clock.now()),
      /** Deletes decision rows older than DECISION_RETENTION_DAYS at the clock's now (nothing when 0), in bounded batches. */
      deleteExpiredDecisions: (limits: RetentionLimits = {}) => deleteExpiredDecisions(db, config.DECISION_RETENTION_DAYS, clock.now(), limits),
    };
  },
  // The buffer is this process's memory: every API instance flushes its own, and once more at close.
  localTasks: (s) => [{ name: 'policy-decisions-flush', everyMs: s.flushIntervalMs, run: (log) => s.log.flushAndReport(log) }],
  // Hourly, in bounded batches, like trace retention: the counters past the longest stats window,
  // the decision rows past DECISION_RETENTION_DAYS (docs/decisions.md, "Retention of the decision log and the outbox").
  schedules: (s) => [
    {
      name: 'policy-decision-counts-retention',
      everyMs: HOUR_MS,
      run: async () => {
        await s.deleteExpiredCounts();
      },
    },
    {
      name: 'policy-decision-retention',
      everyMs: HOUR_MS,
      run: async () => {
        await s.deleteExpiredDecisions();
      },
    },
  ],
  caches: [],
});

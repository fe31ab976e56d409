/** The traces module: ingest, queries, flags, stats, exports and retention. */
import { AGENT_CACHE } from '../../core/cache-names.js';
import { defineModule } from '../../core/module.js';
import { traceRoutes } from './routes.js';
import { loadPriceTable, Pricing } from './pricing.js';
import { retentionCutoff } from '../../db/retention.js';
import { deleteExpiredTraces, type DeleteExpiredOptions } from './retention.js';

// The quality aggregate quality_threshold policies read through the enforce route (docs/decisions.md, "Enforce route").
export { qualityAggregate, type QualityMetric } from './quality.js';

const HOUR_MS = 3_600_000;

export const tracesModule = defineModule({
  name: 'traces',
  routes: traceRoutes,
  needs: ['config', 'db', 'clock'],
  services: ({ config, db, clock }) => ({
    /** Cost estimates for traces sent without a cost (the shipped table or PRICE_TABLE_PATH). */
    pricing: new Pricing(loadPriceTable(config.PRICE_TABLE_PATH)),
    /** Deletes traces older than TRACE_RETENTION_DAYS at the clock's now (nothing when 0), in bounded batches (sizes: retention.ts's defaults unless given). */
    deleteExpired: async (limits: Pick<DeleteExpiredOptions, 'batchSize' | 'maxBatches'> = {}) => {
      const before = retentionCutoff(config.TRACE_RETENTION_DAYS, clock.now());
      return before ? deleteExpiredTraces(db, { before, ...limits }) : { deleted: 0, more: false };
    },
  }),
  // Hourly, in bounded batches: a run that hit its cap leaves the rest to the next hour rather than
  // holding the worker (docs/decisions.md, "Trace retention").
  schedules: (traces) => [
    {
      name: 'trace-retention',
      everyMs: HOUR_MS,
      run: async () => {
        await traces.deleteExpired();
      },
    },
  ],
  // Ingest forgets the agents it accrued to in the agents module's cache (after commit).
  caches: [AGENT_CACHE],
});

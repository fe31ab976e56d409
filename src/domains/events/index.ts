/** The events module: the outbox written in the changing transaction (delivered by the webhooks module, which also answers who subscribes to what), and its retention. */
import { defineModule } from '../../core/module.js';
import type { RetentionLimits } from '../../db/retention.js';
import { deleteProcessedEvents, emit } from './outbox.js';

const HOUR_MS = 3_600_000;

export const eventsModule = defineModule({
  name: 'events',
  needs: ['config', 'db', 'clock'],
  services: ({ config, db, clock }) => ({
    emit,
    /** Deletes processed events older than OUTBOX_RETENTION_DAYS at the clock's now (nothing when 0; never a pending one), in bounded batches. */
    deleteProcessed: (limits: RetentionLimits = {}) => deleteProcessedEvents(db, config.OUTBOX_RETENTION_DAYS, clock.now(), limits),
  }),
  // Hourly, in bounded batches, like trace retention (docs/decisions.md, "Retention of the decision log and the outbox").
  schedules: (events) => [
    {
      name: 'outbox-retention',
      everyMs: HOUR_MS,
      run: async () => {
        await events.deleteProcessed();
      },
    },
  ],
  caches: [],
});

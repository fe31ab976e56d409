/** The webhooks module: webhook CRUD, signed durable delivery of outbox events, and who subscribes to what. */
import { defineModule } from '../../core/module.js';
import type { Subscriptions } from '../events/subscriptions.js';
import { WebhookDelivery } from './delivery.js';
import { DELIVER_JOB, DISPATCH_JOB } from './jobs.js';
import { retentionCutoff } from '../../db/retention.js';
import { deleteExpiredWebhookHistory, type DeleteWebhookHistoryOptions } from './retention.js';
import { webhookRoutes } from './routes.js';
import { activeEventTypes, testWebhook } from './service.js';
import { SubscriptionCache, SUBSCRIPTIONS_CACHE } from './subscriptions.js';

export { verifyWebhook } from '../../lib/webhook-signature.js';

/** How often pending outbox events are swept up even if no wake-up job reached a runner. */
export const DISPATCH_SWEEP_MS = 5_000;
const HOUR_MS = 3_600_000;

export const webhooksModule = defineModule({
  name: 'webhooks',
  routes: webhookRoutes,
  needs: ['db', 'state', 'config', 'clock', 'afterCommit'],
  services: ({ db, state, config, clock, afterCommit }) => {
    const subscriptions = new SubscriptionCache((orgId) => activeEventTypes(db, orgId), state);
    const settings = () => ({ version: config.WEBHOOK_SIGNATURE_VERSION, allowPrivate: config.allowPrivateTargets });
    const delivery = new WebhookDelivery({
      db,
      clock,
      settings,
      onDisabled: afterCommit.wrap('webhooks: subscriptions cache (disabled by the worker)', (orgId: string) => subscriptions.invalidate(orgId)),
    });
    return {
      /** Which event types some active webhook of an organization wants (cached; see subscriptions.ts). */
      subscriptions: subscriptions as Subscriptions,
      /** Forgets an organization's subscriptions on every instance (after a committed change). */
      invalidate: (orgId: string) => subscriptions.invalidate(orgId),
      /** Sends a signed test payload to a webhook now. */
      test: (orgId: string, id: string) => testWebhook(db, orgId, id, settings(), clock.now()),
      /** Dispatch and delivery (the job handlers; benchmarks and tests call them directly too). */
      delivery,
      /** Signing and outbound settings in force. */
      settings,
      /** The rotation grace period, seconds. */
      graceSeconds: config.WEBHOOK_SECRET_GRACE_SECONDS,
      allowPrivate: config.allowPrivateTargets,
      /** Deletes delivery history older than WEBHOOK_RETENTION_DAYS at the clock's now (nothing when 0), in bounded batches (sizes: retention.ts's defaults unless given). */
      deleteExpiredHistory: async (limits: Pick<DeleteWebhookHistoryOptions, 'batchSize' | 'maxBatches'> = {}) => {
        const before = retentionCutoff(config.WEBHOOK_RETENTION_DAYS, clock.now());
        return before ? deleteExpiredWebhookHistory(db, { before, ...limits }) : { deleted: 0, more: false };
      },
    };
  },
  jobTypes: (s) => [
    { type: DISPATCH_JOB, handler: async () => void (await s.delivery.dispatch()), options: { leaseMs: 60_000 } },
    {
      type: DELIVER_JOB,
      handler: async (job) => s.delivery.deliver(job.organizationId, (job.payload as { webhookId: string }).webhookId),
      // Longer than a lane's turn (30 s) plus one attempt (60 s at most), so a live turn is not reclaimed.
      options: { leaseMs: 3 * 60_000, baseDelayMs: 1_000, maxDelayMs: 60_000 },
    },
  ],
  schedules: (s) => [
    { name: 'webhooks-dispatch-sweep', everyMs: DISPATCH_SWEEP_MS, run: async () => void (await s.delivery.dispatch()) },
    // Hourly, in bounded batches: a run that hit its cap leaves the rest to the next hour rather than
    // holding the worker (docs/decisions.md, "Webhook delivery retention").
    { name: 'webhooks-retention', everyMs: HOUR_MS, run: async () => void (await s.deleteExpiredHistory()) },
  ],
  caches: [SUBSCRIPTIONS_CACHE],
});

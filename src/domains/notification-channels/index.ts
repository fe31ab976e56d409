/**
 * The notification channels module: channels (email, Slack, PagerDuty, signed webhook), their
 * routes, and `notify`, which alerts call to queue a message for delivery through the job runner
 * (docs/decisions.md, "Notification channels").
 */
import { defineModule } from '../../core/module.js';
import { Sender } from './deliver.js';
import { notificationChannelRoutes } from './routes.js';
import { DELIVER_JOB, runDelivery } from './service.js';

export { notify, DELIVER_JOB, DELIVERY_MAX_ATTEMPTS, type DeliveryPayload } from './service.js';
export { notificationMessageSchema, notificationChannelSchema, type NotificationMessage, type NotificationChannel } from './schemas.js';

export const notificationChannelsModule = defineModule({
  name: 'notification-channels',
  routes: notificationChannelRoutes,
  needs: ['config', 'db', 'clock'],
  services: ({ config, db, clock }) => {
    const sender = new Sender(config, clock);
    return { sender, deliver: (job: { id: string; organizationId: string; payload: unknown }) => runDelivery(db, sender, clock, job) };
  },
  // Retries with full jitter up to 15 s · 2^(n-1) (15, 30, 60, 120, 240 s bounds): a target down
  // for a few minutes still gets the message; the lease outlives the delivery deadline by far.
  jobTypes: (s) => [{ type: DELIVER_JOB, handler: s.deliver, options: { leaseMs: 2 * 60_000, baseDelayMs: 15_000, maxDelayMs: 10 * 60_000 } }],
  caches: [],
});

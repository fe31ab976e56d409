/** The webhooks module's job types (docs/decisions.md, "Webhooks"). */
export { DISPATCH_JOB } from '../events/outbox.js';

/** Drains one webhook's due messages in event order (payload `{ webhookId }`). */
export const DELIVER_JOB = 'webhooks.deliver';

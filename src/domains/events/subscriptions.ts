/**
 * Which event types some active webhook of an organization subscribes to. High-volume events
 * (trace_completed, trace_error) are written to the outbox only when someone listens.
 *
 * Webhooks are not built yet (a later issue): until then nobody subscribes, and this answers
 * false without any I/O. The webhook issue replaces it with a per-organization cached lookup,
 * invalidated over pub/sub when a webhook changes.
 */
import type { EventType } from './outbox.js';

export interface Subscriptions {
  /** True when an active webhook of the organization subscribes to this event type. */
  wants(organizationId: string, type: EventType): Promise<boolean>;
}

/** The subscriptions source used until webhooks exist: nobody listens. */
export const noSubscriptions: Subscriptions = { wants: async () => false };

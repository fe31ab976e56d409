/**
 * Which event types some active webhook of an organization subscribes to. High-volume events
 * (trace_completed, trace_error) are written to the outbox only when someone listens. The webhooks
 * module implements it (src/domains/webhooks/subscriptions.ts: a per-organization cache invalidated
 * over pub/sub); the interface lives here so emitters need not import the webhooks module.
 */
import type { EventType } from './outbox.js';

export interface Subscriptions {
  /** True when an active webhook of the organization subscribes to this event type. */
  wants(organizationId: string, type: EventType): Promise<boolean>;
}

/** Nobody listens: for code that runs without the webhooks module (tools, benchmarks). */
export const noSubscriptions: Subscriptions = { wants: async () => false };

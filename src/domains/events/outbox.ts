/** The event outbox: events are rows written in the caller's transaction, delivered later by workers. */
import { createHash } from 'node:crypto';
import { newId } from '../../db/schema/columns.js';
import type { Executor } from '../../db/client.js';
import { outboxEvents } from '../../db/schema/index.js';

export const EVENT_TYPES = [
  'agent_registered',
  'agent_updated',
  'agent_deleted',
  'trace_completed',
  'trace_error',
  'policy_violated',
  'kill_switch_triggered',
  'limit_exceeded',
  'prompt_approved',
  'prompt_deployed',
  'budget_warning',
  'budget_exceeded',
  'alert_triggered',
  'custom_validator_invoked',
  'custom_validator_denied',
  'custom_validator_failed',
] as const;
export type EventType = (typeof EVENT_TYPES)[number];

/**
 * Writes an event in the caller's transaction: it exists exactly when the change commits.
 * The delivery body `{ id, type, createdAt, organizationId, agentId, data }` and its idempotency
 * key (SHA-256 of organization, type and body) are fixed now, so every retry is identical.
 */
export async function emit(
  tx: Executor,
  organizationId: string,
  type: EventType,
  agentId: string | null,
  data: Record<string, unknown>,
) {
  const id = newId();
  const createdAt = new Date().toISOString();
  const body = JSON.stringify({ id, type, createdAt, organizationId, agentId, data });
  const idempotencyKey = createHash('sha256').update(organizationId).update('\n').update(type).update('\n').update(body).digest('hex');
  await tx.insert(outboxEvents).values({ id, organizationId, type, agentId, data, body, idempotencyKey, createdAt: new Date(createdAt) });
  return { id, idempotencyKey, body };
}

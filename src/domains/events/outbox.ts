/** The event outbox: events are rows written in the caller's transaction, delivered later by workers. */
import { createHash } from 'node:crypto';
import { and, eq, lt, sql } from 'drizzle-orm';
import { newId } from '../../db/schema/columns.js';
import { rowsOf, type Executor } from '../../db/client.js';
import { deleteExpiredRows, retentionCutoff, type RetentionLimits, type RetentionRun } from '../../db/retention.js';
import { organizationIds } from '../organizations/index.js';
import { outboxEvents } from '../../db/schema/index.js';
import { enqueue } from '../../jobs/enqueue.js';

/** The job type that drains the outbox (the webhooks module handles it; docs/decisions.md, "Webhooks"). */
export const DISPATCH_JOB = 'webhooks.dispatch';

// Transactions that already enqueued their dispatch job: one job per committing transaction, however
// many events it writes (an ingest of 100 traces is one wake-up, not 100).
const dispatchQueued = new WeakSet<object>();
const DUE_AT_ONCE = new Date(0);

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

/** The fields of a delivery body (contract.md "Events"); `type` may also be `test` or `notification`. */
export interface EventFields {
  id: string;
  type: string;
  createdAt: string;
  organizationId: string;
  agentId: string | null;
  data: Record<string, unknown>;
}

/**
 * The exact delivery body of an event and its idempotency key (hex SHA-256 of organization, type
 * and body): one definition for outbox events, webhook tests and channel webhooks.
 */
export function eventEnvelope(e: EventFields): { body: string; idempotencyKey: string } {
  const body = JSON.stringify({ id: e.id, type: e.type, createdAt: e.createdAt, organizationId: e.organizationId, agentId: e.agentId, data: e.data });
  const idempotencyKey = createHash('sha256').update(e.organizationId).update('\n').update(e.type).update('\n').update(body).digest('hex');
  return { body, idempotencyKey };
}

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
  const { body, idempotencyKey } = eventEnvelope({ id, type, createdAt, organizationId, agentId, data });
  await tx.insert(outboxEvents).values({ id, organizationId, type, agentId, data, body, idempotencyKey, createdAt: new Date(createdAt) });
  // Wake the dispatcher when this transaction commits (the job row commits with the event; on
  // PostgreSQL its NOTIFY reaches every runner at commit), instead of waiting for the sweep.
  const inTransaction = typeof (tx as { rollback?: unknown }).rollback === 'function';
  if (!inTransaction || !dispatchQueued.has(tx)) {
    // Due at once on any clock (emit has no injected clock; the runner compares with its own), and
    // claimed ahead of older work: the wake-up is what keeps API-change-to-receiver latency low.
    await enqueue(tx, { type: DISPATCH_JOB, organizationId, maxAttempts: 3, runAt: DUE_AT_ONCE });
    if (inTransaction) dispatchQueued.add(tx);
  }
  return { id, idempotencyKey, body };
}

/** A pending outbox event as the dispatcher reads it. */
export interface PendingEvent {
  organizationId: string;
  id: string;
  type: string;
  agentId: string | null;
  body: string;
  idempotencyKey: string;
}

/**
 * Locks up to `limit` pending events, oldest first, in the caller's transaction. FOR UPDATE SKIP LOCKED:
 * dispatchers on several instances take disjoint batches and never wait on each other. `available_at`
 * is not compared: nothing defers an event today, and the database's default must not race the
 * injected clock.
 */
export async function claimPendingEvents(tx: Executor, limit: number): Promise<PendingEvent[]> {
  const rows = rowsOf<{ organization_id: string; id: string; type: string; agent_id: string | null; body: string; idempotency_key: string }>(
    await tx.execute(sql`
      select organization_id, id, type, agent_id, body, idempotency_key from outbox_events
      where status = 'pending' order by available_at, id limit ${limit} for update skip locked`),
  );
  return rows.map((r) => ({ organizationId: r.organization_id, id: r.id, type: r.type, agentId: r.agent_id, body: r.body, idempotencyKey: r.idempotency_key }));
}

/** True when some outbox event is still pending (the dispatcher's look after releasing its lock). */
export async function hasPendingEvents(db: Executor): Promise<boolean> {
  return rowsOf(await db.execute(sql`select 1 from outbox_events where status = 'pending' limit 1`)).length > 0;
}

/** Marks claimed events processed (their deliveries, if any, now live with the webhooks). */
export async function markEventsProcessed(tx: Executor, events: readonly { organizationId: string; id: string }[], now: Date) {
  if (events.length === 0) return;
  const keys = sql.join(events.map((e) => sql`(${e.organizationId}::uuid, ${e.id}::uuid)`), sql`, `);
  await tx.execute(sql`
    update outbox_events set status = 'processed', processed_at = ${now.toISOString()}::timestamptz, attempts = attempts + 1
    where (organization_id, id) in (${keys})`);
}

/**
 * Deletes processed events older than `days` before `now` (nothing when 0), in bounded batches per
 * organization; a pending event is never deleted. Safe for webhooks: the dispatcher copies an
 * event's body and idempotency key into its webhook messages in the transaction that marks it
 * processed, and nothing reads a processed event again (docs/decisions.md, "Retention of the
 * decision log and the outbox").
 */
export async function deleteProcessedEvents(db: Executor, days: number, now: Date, limits: RetentionLimits = {}): Promise<RetentionRun> {
  const before = retentionCutoff(days, now);
  if (!before) return { deleted: 0, more: false };
  const t = outboxEvents;
  // Old by both times: processed_at is the dispatcher's clock, created_at the emitter's; created_at
  // lets outbox_org_created_idx bound each statement.
  const expired = and(eq(t.status, 'processed'), lt(t.processedAt, before), lt(t.createdAt, before))!;
  return deleteExpiredRows(db, t, expired, await organizationIds(db), limits);
}

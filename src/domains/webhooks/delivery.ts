/**
 * Delivery: the dispatcher turns outbox events into per-webhook messages; a lane drains one webhook's
 * messages in event order, one attempt at a time (docs/decisions.md, "Webhooks").
 *
 * Stages of a delivery:
 *  1. dispatch (job `webhooks.dispatch`, woken by each emitting transaction, swept every few seconds):
 *     locks a batch of pending outbox events (SKIP LOCKED), writes one message per matching active
 *     webhook, marks the events processed and enqueues `webhooks.deliver` for each webhook whose lane
 *     is free, all in one transaction.
 *  2. deliver (job `webhooks.deliver`): takes the webhook's lane (a lease on its row), sends its due
 *     messages oldest event first, records each attempt, schedules retries, releases the lane and
 *     looks once more (a message committed while the lane was held is never stranded).
 */
import { randomUUID } from 'node:crypto';
import { and, asc, eq, inArray, lte, sql } from 'drizzle-orm';
import { rowsOf, type Db, type Tx } from '../../db/client.js';
import { webhookDeliveries, webhookMessages, webhooks } from '../../db/schema/index.js';
import type { Clock } from '../../core/clock.js';
import { systemActor } from '../../core/actor.js';
import { writeAudit } from '../audit/service.js';
import { newId } from '../../db/schema/columns.js';
import { enqueue } from '../../jobs/enqueue.js';
import { claimPendingEvents, hasPendingEvents, markEventsProcessed } from '../events/outbox.js';
import { DELIVER_JOB, DISPATCH_JOB } from './jobs.js';
import { sendSigned, type SendOutcome, type SendSettings } from './send.js';
import type { WebhookRow } from './service.js';

/** Every attempt failing for this long disables a webhook. */
export const FAILING_DISABLE_MS = 5 * 24 * 3600 * 1000;
/** The advisory lock key that serializes dispatch transactions (an arbitrary constant). */
const DISPATCH_LOCK = 718_274_031;
/** Outbox events per dispatch transaction. */
const DISPATCH_BATCH = 100;
/** A lane hands over (re-enqueues itself) after this many sends or this long, so webhooks share the runner fairly. */
const TURN_MAX_SENDS = 200;
const TURN_MAX_MS = 30_000;
/** Longest wait a 429's Retry-After can impose; longest exponential step. */
const MAX_RETRY_AFTER_S = 3600;
const MAX_BACKOFF_S = 24 * 3600;
/** Messages read per look of a lane. */
const DUE_BATCH = 50;
/** A lane renews its lease (and re-reads the webhook) at least this often during a turn. */
const RENEW_EVERY = 10;
const RENEW_MS = 2_000;

export interface DeliveryDeps {
  db: Db;
  clock: Clock;
  settings: () => SendSettings;
  /** After a webhook was disabled by the worker (410 or 5 days of failures): the subscriptions cache. */
  onDisabled: (orgId: string) => Promise<void>;
  random?: () => number;
}

interface LaneHook extends WebhookRow {}

/** Delay before the retry that follows failed attempt `n` (1-based): backoff·2^(n-1), plus up to 20 % jitter, capped at a day. */
export function retryDelayMs(hook: Pick<WebhookRow, 'retryBackoffSeconds'>, n: number, outcome: Pick<SendOutcome, 'retryAfterSeconds'>, random: () => number = Math.random) {
  if (outcome.retryAfterSeconds !== null) return Math.min(MAX_RETRY_AFTER_S, Math.max(1, outcome.retryAfterSeconds)) * 1000;
  const base = Math.min(MAX_BACKOFF_S, hook.retryBackoffSeconds * 2 ** (n - 1));
  // Jitter only lengthens the wait: never earlier than the documented backoff, and receivers that failed together spread out.
  return Math.round(base * 1000 * (1 + 0.2 * random()));
}


export class WebhookDelivery {
  constructor(private deps: DeliveryDeps) {}

  /**
   * Dispatches pending outbox events in batches until none is left (or `maxBatches`, then a fresh job
   * carries on). Answers the number of events processed.
   *
   * One dispatcher at a time (a transaction-scoped advisory lock, taken with try): batches reach the
   * lanes in outbox order. A dispatcher that finds the lock taken returns at once instead of holding a
   * runner slot; the holder looks for pending events again after each release, so an event whose own
   * wake-up found the lock taken is dispatched by the holder (it committed before that wake-up ran,
   * hence before the holder's release and its look).
   */
  async dispatch(maxBatches = 50): Promise<number> {
    let total = 0;
    for (let i = 0; i < maxBatches; i++) {
      const n = await this.deps.db.transaction((tx) => this.dispatchBatch(tx));
      if (n < 0) return total;
      total += n;
      if (n < DISPATCH_BATCH && !(await hasPendingEvents(this.deps.db))) return total;
    }
    await enqueue(this.deps.db, { type: DISPATCH_JOB, maxAttempts: 3 }, this.deps.clock.now());
    return total;
  }

  /** One batch in the caller's transaction; -1 when another dispatcher holds the lock. */
  private async dispatchBatch(tx: Tx): Promise<number> {
    const [lock] = rowsOf<{ ok: boolean }>(await tx.execute(sql`select pg_try_advisory_xact_lock(${DISPATCH_LOCK}) as ok`));
    if (!lock.ok) return -1;
    const events = await claimPendingEvents(tx, DISPATCH_BATCH);
    if (events.length === 0) return 0;
    const now = this.deps.clock.now();
    const orgs = [...new Set(events.map((e) => e.organizationId))];
    // FOR SHARE: a lane releasing meanwhile waits for this commit, so its re-check sees these messages
    // (the skip of a held lane below relies on it).
    const hooks = await tx
      .select({ organizationId: webhooks.organizationId, id: webhooks.id, eventTypes: webhooks.eventTypes, agentIds: webhooks.agentIds, laneUntil: webhooks.laneUntil })
      .from(webhooks)
      .where(and(inArray(webhooks.organizationId, orgs), eq(webhooks.isActive, true)))
      .for('share');
    const messages: (typeof webhookMessages.$inferInsert)[] = [];
    const touched = new Map<string, { organizationId: string; id: string; laneUntil: Date | null }>();
    for (const e of events) {
      for (const h of hooks) {
        if (h.organizationId !== e.organizationId || !h.eventTypes.includes(e.type)) continue;
        // agentIds null: every agent. Set: only events about those agents (an event about no agent matches none).
        if (h.agentIds && !(e.agentId && h.agentIds.includes(e.agentId))) continue;
        messages.push({ organizationId: e.organizationId, webhookId: h.id, eventId: e.id, eventType: e.type, body: e.body, idempotencyKey: e.idempotencyKey, nextAttemptAt: now, createdAt: now, updatedAt: now });
        touched.set(h.id, h);
      }
    }
    if (messages.length > 0) await tx.insert(webhookMessages).values(messages).onConflictDoNothing();
    for (const h of touched.values()) {
      // A held lane re-checks for due messages after it releases: no job needed (nor one per event).
      if (h.laneUntil && h.laneUntil > now) continue;
      await enqueue(tx, { type: DELIVER_JOB, organizationId: h.organizationId, payload: { webhookId: h.id } }, now);
    }
    await markEventsProcessed(tx, events, now);
    return events.length;
  }

  /** Takes the lane of a webhook for `token`: answers the fresh row, or null when it is held or the webhook is gone or inactive. */
  private async takeLane(orgId: string, id: string, token: string): Promise<LaneHook | null> {
    const now = this.deps.clock.now();
    const [row] = await this.deps.db
      .update(webhooks)
      .set({ laneOwner: token, laneUntil: sql`${now.toISOString()}::timestamptz + make_interval(secs => ${webhooks.timeoutSeconds} + 30)` })
      .where(and(eq(webhooks.organizationId, orgId), eq(webhooks.id, id), eq(webhooks.isActive, true), sql`(${webhooks.laneUntil} is null or ${webhooks.laneUntil} <= ${now.toISOString()}::timestamptz or ${webhooks.laneOwner} = ${token})`))
      .returning();
    return row ?? null;
  }

  private async releaseLane(orgId: string, id: string, token: string) {
    await this.deps.db
      .update(webhooks)
      .set({ laneOwner: null, laneUntil: null })
      .where(and(eq(webhooks.organizationId, orgId), eq(webhooks.id, id), eq(webhooks.laneOwner, token)));
  }

  private async dueMessages(orgId: string, webhookId: string, limit: number) {
    return this.deps.db
      .select()
      .from(webhookMessages)
      .where(and(eq(webhookMessages.organizationId, orgId), eq(webhookMessages.webhookId, webhookId), eq(webhookMessages.status, 'pending'), lte(webhookMessages.nextAttemptAt, this.deps.clock.now())))
      .orderBy(asc(webhookMessages.eventId), asc(webhookMessages.series))
      .limit(limit);
  }

  /**
   * The `webhooks.deliver` job: drains the webhook's due messages in event order while holding its lane.
   * A held lane is someone else's turn: it re-checks after releasing, and if its holder died, a job at
   * the lease's end takes over.
   */
  async deliver(orgId: string, webhookId: string): Promise<void> {
    const token = randomUUID();
    const started = performance.now();
    let sends = 0;
    for (;;) {
      const hook = await this.takeLane(orgId, webhookId, token);
      if (!hook) return this.laneBusy(orgId, webhookId);
      let current: LaneHook | null = hook;
      let renewedAt = performance.now();
      let sinceRenew = 0;
      drain: for (;;) {
        const due = await this.dueMessages(orgId, webhookId, DUE_BATCH);
        if (due.length === 0) break;
        for (const m of due) {
          if (sends >= TURN_MAX_SENDS || performance.now() - started > TURN_MAX_MS) {
            // Hand over: the rest goes to a fresh job, behind the other webhooks' jobs.
            // Released first: a continuation that found the lane still held would wait for the lease's end.
            await this.releaseLane(orgId, webhookId, token);
            await enqueue(this.deps.db, { type: DELIVER_JOB, organizationId: orgId, payload: { webhookId } }, this.deps.clock.now());
            return;
          }
          // Renewed every RENEW_EVERY sends or RENEW_MS, which also re-reads the webhook (a PATCH or a
          // rotation applies within that); the lease is far longer, so a live turn never loses it.
          if (sinceRenew >= RENEW_EVERY || performance.now() - renewedAt > RENEW_MS) {
            current = await this.takeLane(orgId, webhookId, token);
            renewedAt = performance.now();
            sinceRenew = 0;
          }
          sinceRenew++;
          if (!current) return; // lost the lane (disabled, deleted, or our lease lapsed): the new holder carries on
          const now = this.deps.clock.now();
          const outcome = await sendSigned(current, m, this.deps.settings(), now);
          sends++;
          const verdict = await this.record(current, m, outcome, token);
          if (verdict === 'lost') return;
          if (verdict === 'disabled') {
            await this.deps.onDisabled(orgId);
            return;
          }
        }
        if (due.length < DUE_BATCH) break drain;
      }
      await this.releaseLane(orgId, webhookId, token);
      // A message committed while we held the lane saw it held and enqueued nothing: look once more.
      if ((await this.dueMessages(orgId, webhookId, 1)).length === 0) return;
    }
  }

  /** The lane is held (or the webhook inactive/gone): if held, make sure someone looks when its lease ends. */
  private async laneBusy(orgId: string, webhookId: string) {
    const [row] = await this.deps.db
      .select({ isActive: webhooks.isActive, laneUntil: webhooks.laneUntil })
      .from(webhooks)
      .where(and(eq(webhooks.organizationId, orgId), eq(webhooks.id, webhookId)));
    if (!row || !row.isActive || !row.laneUntil) return;
    await enqueue(this.deps.db, { type: DELIVER_JOB, organizationId: orgId, payload: { webhookId }, runAt: row.laneUntil }, this.deps.clock.now());
  }

  /**
   * Records one attempt in one transaction: the attempt row, the message's state, the webhook's
   * counters, a retry job, and disabling (410, or every attempt failed for 5 days). Guarded by the lane:
   * a worker that lost it (stopped and replaced) records nothing.
   */
  private async record(hook: LaneHook, m: typeof webhookMessages.$inferSelect, o: SendOutcome, token: string): Promise<'ok' | 'lost' | 'disabled'> {
    const now = this.deps.clock.now();
    const attempt = m.attempts + 1;
    if (o.success) {
      // The common case in one statement (atomic, no transaction round trips): counters, attempt row and
      // message state, all conditional on still holding the lane.
      const at = now.toISOString();
      const [row] = rowsOf<{ n: number }>(
        await this.deps.db.execute(sql`
          with w as (
            update webhooks set success_count = success_count + 1, last_triggered_at = ${at}::timestamptz,
              last_success_at = ${at}::timestamptz, failing_since = null
            where organization_id = ${hook.organizationId}::uuid and id = ${hook.id}::uuid and lane_owner = ${token}
            returning organization_id, id
          ), d as (
            insert into webhook_deliveries (organization_id, id, webhook_id, message_id, event_id, event_type, idempotency_key,
              attempt_number, status_code, response_body, success, error_message, duration_ms, created_at)
            select w.organization_id, ${newId()}::uuid, w.id, ${m.id}::uuid, ${m.eventId}::uuid, ${m.eventType}, ${m.idempotencyKey},
              ${attempt}, ${o.statusCode}, ${o.responseBody}, true, null, ${o.durationMs}, ${at}::timestamptz from w
          ), msg as (
            update webhook_messages set attempts = ${attempt}, status = 'succeeded', next_attempt_at = ${at}::timestamptz,
              last_error = null, updated_at = ${at}::timestamptz
            where organization_id = ${m.organizationId}::uuid and id = ${m.id}::uuid and exists (select 1 from w)
          )
          select count(*)::int as n from w`),
      );
      return row.n > 0 ? 'ok' : 'lost';
    }
    return this.deps.db.transaction(async (tx) => {
      const [w] = await tx
        .update(webhooks)
        .set(
          o.success
            ? { successCount: sql`${webhooks.successCount} + 1`, lastTriggeredAt: now, lastSuccessAt: now, failingSince: null }
            : { failureCount: sql`${webhooks.failureCount} + 1`, lastTriggeredAt: now, lastFailureAt: now, lastFailureReason: o.errorMessage, failingSince: sql`coalesce(${webhooks.failingSince}, ${now.toISOString()}::timestamptz)` },
        )
        .where(and(eq(webhooks.organizationId, hook.organizationId), eq(webhooks.id, hook.id), eq(webhooks.laneOwner, token)))
        .returning({ failingSince: webhooks.failingSince });
      if (!w) return 'lost' as const;
      await tx.insert(webhookDeliveries).values({
        organizationId: hook.organizationId,
        webhookId: hook.id,
        messageId: m.id,
        eventId: m.eventId,
        eventType: m.eventType,
        idempotencyKey: m.idempotencyKey,
        attemptNumber: attempt,
        statusCode: o.statusCode,
        responseBody: o.responseBody,
        success: o.success,
        errorMessage: o.errorMessage,
        durationMs: o.durationMs,
        createdAt: now,
      });
      const failingTooLong = !o.success && w.failingSince !== null && now.getTime() - w.failingSince.getTime() >= FAILING_DISABLE_MS;
      const disable = o.gone || failingTooLong;
      const exhausted = attempt > hook.maxRetries;
      const retry = !o.success && !disable && !exhausted;
      const nextAttemptAt = retry ? new Date(now.getTime() + retryDelayMs(hook, attempt, o, this.deps.random)) : now;
      await tx
        .update(webhookMessages)
        .set({ attempts: attempt, status: o.success ? 'succeeded' : retry ? 'pending' : 'failed', nextAttemptAt, lastError: o.errorMessage, updatedAt: now })
        .where(and(eq(webhookMessages.organizationId, m.organizationId), eq(webhookMessages.id, m.id)));
      if (retry) await enqueue(tx, { type: DELIVER_JOB, organizationId: hook.organizationId, payload: { webhookId: hook.id }, runAt: nextAttemptAt }, now);
      if (!disable) return 'ok' as const;
      const reason = o.gone
        ? 'Disabled: the receiver answered 410 Gone'
        : `Disabled: every delivery attempt failed for 5 days (last: ${o.errorMessage})`;
      await tx
        .update(webhooks)
        .set({ isActive: false, lastFailureReason: reason, laneOwner: null, laneUntil: null, updatedAt: new Date() })
        .where(and(eq(webhooks.organizationId, hook.organizationId), eq(webhooks.id, hook.id)));
      // A change of the webhook like any other: audited, by the system on the receiver's behalf.
      const actor = systemActor(hook.organizationId, 'system:webhooks', 'Webhook delivery');
      await writeAudit(tx, { principal: actor, ip: null, userAgent: null, clock: this.deps.clock }, { action: 'webhook.disable', resourceType: 'webhook', resourceId: hook.id, metadata: { reason } });
      // Nothing more goes to a disabled webhook: its pending messages fail now, visible and redeliverable.
      await tx
        .update(webhookMessages)
        .set({ status: 'failed', lastError: reason, updatedAt: now })
        .where(and(eq(webhookMessages.organizationId, hook.organizationId), eq(webhookMessages.webhookId, hook.id), eq(webhookMessages.status, 'pending')));
      return 'disabled' as const;
    });
  }
}


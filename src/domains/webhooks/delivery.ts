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
 *
 * Lane leases are taken, renewed and judged on the database's clock (`now()` in SQL), never on an
 * instance's: instances whose clocks disagree still agree on who holds a lane. Scheduling times
 * (nextAttemptAt, job run times) stay on the injected clock (docs/decisions.md, "Webhook lanes on the
 * database's clock").
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

/** One job's turn on a lane: sends so far and when it began (for the hand-over). */
interface Turn {
  started: number;
  sends: number;
}

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
    // (the skip of a held lane below relies on it). `laneHeld` is judged on the database's clock.
    const hooks = await tx
      .select({ organizationId: webhooks.organizationId, id: webhooks.id, eventTypes: webhooks.eventTypes, agentIds: webhooks.agentIds, laneHeld: sql<boolean>`coalesce(${webhooks.laneUntil} > now(), false)` })
      .from(webhooks)
      .where(and(inArray(webhooks.organizationId, orgs), eq(webhooks.isActive, true)))
      .for('share');
    // Grouped once by organization: each event looks only at its own organization's webhooks.
    const hooksByOrg = new Map<string, typeof hooks>();
    for (const h of hooks) {
      const list = hooksByOrg.get(h.organizationId);
      if (list) list.push(h);
      else hooksByOrg.set(h.organizationId, [h]);
    }
    const messages: (typeof webhookMessages.$inferInsert)[] = [];
    const touched = new Map<string, (typeof hooks)[number]>();
    for (const e of events) {
      for (const h of hooksByOrg.get(e.organizationId) ?? []) {
        if (!h.eventTypes.includes(e.type)) continue;
        // agentIds null: every agent. Set: only events about those agents (an event about no agent matches none).
        if (h.agentIds && !(e.agentId && h.agentIds.includes(e.agentId))) continue;
        messages.push({ organizationId: e.organizationId, webhookId: h.id, eventId: e.id, eventType: e.type, body: e.body, idempotencyKey: e.idempotencyKey, nextAttemptAt: now, createdAt: now, updatedAt: now });
        touched.set(h.id, h);
      }
    }
    if (messages.length > 0) await tx.insert(webhookMessages).values(messages).onConflictDoNothing();
    for (const h of touched.values()) {
      // A held lane re-checks for due messages after it releases: no job needed (nor one per event).
      if (h.laneHeld) continue;
      await enqueue(tx, { type: DELIVER_JOB, organizationId: h.organizationId, payload: { webhookId: h.id } }, now);
    }
    await markEventsProcessed(tx, events, now);
    return events.length;
  }

  /**
   * Takes (or renews) the lane of a webhook for `token`: answers the fresh row, or null when it is held
   * or the webhook is gone or inactive. The lease is set and judged with the database's now(), so
   * instances with differing clocks cannot take each other's lanes.
   */
  private async takeLane(orgId: string, id: string, token: string): Promise<LaneHook | null> {
    const [row] = await this.deps.db
      .update(webhooks)
      .set({ laneOwner: token, laneUntil: sql`now() + make_interval(secs => ${webhooks.timeoutSeconds} + 30)` })
      .where(and(eq(webhooks.organizationId, orgId), eq(webhooks.id, id), eq(webhooks.isActive, true), sql`(${webhooks.laneUntil} is null or ${webhooks.laneUntil} <= now() or ${webhooks.laneOwner} = ${token})`))
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
    const turn: Turn = { started: performance.now(), sends: 0 };
    for (;;) {
      const hook = await this.takeLane(orgId, webhookId, token);
      if (!hook) return this.laneBusy(orgId, webhookId);
      let ended: boolean;
      try {
        ended = await this.drain(hook, token, turn);
      } catch (err) {
        // A failed query (or any error) mid-turn must not leave the lane held until its lease ends:
        // released here, so the job's retry or the next job takes it at once. Best effort: if the
        // release fails too, the lease still ends. Conditional on our token, so it never frees
        // someone else's lane.
        await this.releaseLane(orgId, webhookId, token).catch(() => {});
        throw err;
      }
      if (ended) return;
      await this.releaseLane(orgId, webhookId, token);
      // A message committed while we held the lane saw it held and enqueued nothing: look once more.
      if ((await this.dueMessages(orgId, webhookId, 1)).length === 0) return;
    }
  }

  /**
   * Sends the lane's due messages while holding it. Answers true when the turn ended here (handed
   * over, lane lost, webhook disabled), false when nothing due is left and the lane is still ours.
   */
  private async drain(hook: LaneHook, token: string, turn: Turn): Promise<boolean> {
    const { organizationId: orgId, id: webhookId } = hook;
    let current: LaneHook | null = hook;
    let renewedAt = performance.now();
    let sinceRenew = 0;
    for (;;) {
      const due = await this.dueMessages(orgId, webhookId, DUE_BATCH);
      for (const m of due) {
        if (turn.sends >= TURN_MAX_SENDS || performance.now() - turn.started > TURN_MAX_MS) {
          // Hand over: the rest goes to a fresh job, behind the other webhooks' jobs.
          // Released first: a continuation that found the lane still held would wait for the lease's end.
          await this.releaseLane(orgId, webhookId, token);
          await enqueue(this.deps.db, { type: DELIVER_JOB, organizationId: orgId, payload: { webhookId } }, this.deps.clock.now());
          return true;
        }
        // Renewed every RENEW_EVERY sends or RENEW_MS, which also re-reads the webhook (a PATCH or a
        // rotation applies within that); the lease is far longer, so a live turn never loses it.
        if (sinceRenew >= RENEW_EVERY || performance.now() - renewedAt > RENEW_MS) {
          current = await this.takeLane(orgId, webhookId, token);
          renewedAt = performance.now();
          sinceRenew = 0;
        }
        sinceRenew++;
        if (!current) return true; // lost the lane (disabled, deleted, or our lease lapsed): the new holder carries on
        const outcome = await sendSigned(current, m, this.deps.settings(), this.deps.clock.now());
        turn.sends++;
        const verdict = await this.record(current, m, outcome, token);
        if (verdict === 'lost') return true;
        if (verdict === 'disabled') {
          await this.deps.onDisabled(orgId);
          return true;
        }
      }
      if (due.length < DUE_BATCH) return false;
    }
  }

  /**
   * The lane is held (or the webhook inactive/gone): if held, make sure someone looks when its lease
   * ends. The lease is on the database's clock: what is left of it is read there and the job is due
   * that long after the injected clock's now.
   */
  private async laneBusy(orgId: string, webhookId: string) {
    const [row] = await this.deps.db
      .select({ isActive: webhooks.isActive, leftMs: sql<number | null>`(extract(epoch from (${webhooks.laneUntil} - now())) * 1000)::float8` })
      .from(webhooks)
      .where(and(eq(webhooks.organizationId, orgId), eq(webhooks.id, webhookId)));
    if (!row || !row.isActive || row.leftMs === null) return;
    const now = this.deps.clock.now();
    const runAt = new Date(now.getTime() + Math.max(0, Math.ceil(Number(row.leftMs))));
    await enqueue(this.deps.db, { type: DELIVER_JOB, organizationId: orgId, payload: { webhookId }, runAt }, now);
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
    // A failed attempt (the success case returned above).
    return this.deps.db.transaction(async (tx) => {
      const [w] = await tx
        .update(webhooks)
        .set({ failureCount: sql`${webhooks.failureCount} + 1`, lastTriggeredAt: now, lastFailureAt: now, lastFailureReason: o.errorMessage, failingSince: sql`coalesce(${webhooks.failingSince}, ${now.toISOString()}::timestamptz)` })
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
        success: false,
        errorMessage: o.errorMessage,
        durationMs: o.durationMs,
        createdAt: now,
      });
      const failingTooLong = w.failingSince !== null && now.getTime() - w.failingSince.getTime() >= FAILING_DISABLE_MS;
      const disable = o.gone || failingTooLong;
      const exhausted = attempt > hook.maxRetries;
      const retry = !disable && !exhausted;
      const nextAttemptAt = retry ? new Date(now.getTime() + retryDelayMs(hook, attempt, o, this.deps.random)) : now;
      await tx
        .update(webhookMessages)
        .set({ attempts: attempt, status: retry ? 'pending' : 'failed', nextAttemptAt, lastError: o.errorMessage, updatedAt: now })
        .where(and(eq(webhookMessages.organizationId, m.organizationId), eq(webhookMessages.id, m.id)));
      if (retry) await enqueue(tx, { type: DELIVER_JOB, organizationId: hook.organizationId, payload: { webhookId: hook.id }, runAt: nextAttemptAt }, now);
      if (!disable) return 'ok' as const;
      const reason = o.gone
        ? 'Disabled: the receiver answered 410 Gone'
        : `Disabled: every delivery attempt failed for 5 days (last: ${o.errorMessage})`;
      await tx
        .update(webhooks)
        .set({ isActive: false, lastFailureReason: reason, laneOwner: null, laneUntil: null, updatedAt: now })
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


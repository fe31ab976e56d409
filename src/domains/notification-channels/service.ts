/**
 * Notification channels: CRUD with per-type configuration and masked secrets, `notify` (one durable
 * job per channel, enqueued in the caller's transaction), the job that delivers, and the synchronous
 * test (docs/decisions.md, "Notification channels").
 */
import { randomUUID } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import { and, count, desc, eq, inArray, type SQL } from 'drizzle-orm';
import type { Db, Executor } from '../../db/client.js';
import { notificationChannels } from '../../db/schema/index.js';
import { notFound, validation } from '../../core/errors.js';
import type { Clock } from '../../core/clock.js';
import { enqueue } from '../../jobs/index.js';
import { writeAudit, type AuditContext } from '../audit/service.js';
import { maskConfiguration, parseConfiguration, restoreMasked, type ChannelType, type TargetRules } from './configuration.js';
import type { Sender, DeliveryOutcome } from './deliver.js';
import {
  notificationMessageSchema,
  type CreateNotificationChannelInput,
  type ListNotificationChannelsQuery,
  type NotificationChannel,
  type NotificationMessage,
  type TestResult,
  type UpdateNotificationChannelInput,
} from './schemas.js';

type Row = typeof notificationChannels.$inferSelect;

/** The job type of one delivery to one channel. */
export const DELIVER_JOB = 'notification.deliver';
/** Attempts of a delivery before its job is dead (docs/decisions.md, "Notification channels"). */
export const DELIVERY_MAX_ATTEMPTS = 6;

const iso = (d: Date | null) => (d ? d.toISOString() : null);

/** The public view of a channel: secrets masked unless `reveal` (the create response only). */
export const channelView = (r: Row, opts: { reveal?: boolean } = {}): NotificationChannel => ({
  id: r.id,
  organizationId: r.organizationId,
  name: r.name,
  description: r.description,
  channelType: r.channelType as ChannelType,
  configuration: opts.reveal ? r.configuration : maskConfiguration(r.channelType, r.configuration),
  isActive: r.isActive,
  createdBy: r.createdBy,
  lastDeliveryAt: iso(r.lastDeliveryAt),
  lastFailureAt: iso(r.lastFailureAt),
  lastFailureReason: r.lastFailureReason,
  createdAt: r.createdAt.toISOString(),
  updatedAt: r.updatedAt.toISOString(),
});

/** One page of the organization's channels, newest first. */
export async function listChannels(db: Db, orgId: string, q: ListNotificationChannelsQuery) {
  const t = notificationChannels;
  const conds: SQL[] = [eq(t.organizationId, orgId)];
  if (q.channelType) conds.push(eq(t.channelType, q.channelType));
  if (q.isActive !== undefined) conds.push(eq(t.isActive, q.isActive));
  const where = and(...conds);
  const [rows, [{ total }]] = await Promise.all([
    db.select().from(t).where(where).orderBy(desc(t.createdAt), desc(t.id)).limit(q.limit).offset(q.offset),
    db.select({ total: count() }).from(t).where(where),
  ]);
  return { rows: rows.map((r) => channelView(r)), total };
}

/** A channel of the organization, or 404 (also for another organization's channel). */
export async function getChannel(db: Executor, orgId: string, id: string, opts: { forUpdate?: boolean } = {}) {
  const t = notificationChannels;
  const q = db.select().from(t).where(and(eq(t.organizationId, orgId), eq(t.id, id))).limit(1);
  const [row] = opts.forUpdate ? await q.for('update') : await q;
  if (!row) throw notFound('Notification channel');
  return row;
}

/** The configuration for `type`, or a 422 naming `configuration.<field>`. */
function checkedConfiguration(type: ChannelType, value: unknown, rules: TargetRules) {
  const parsed = parseConfiguration(type, value, rules);
  if (!parsed.ok) throw validation(parsed.fields);
  return parsed.configuration;
}

/** Creates a channel; the answer carries the configuration in full (a generated webhook secret is shown only here). */
export async function createChannel(db: Db, ctx: AuditContext, input: CreateNotificationChannelInput, rules: TargetRules) {
  const configuration = checkedConfiguration(input.channelType, input.configuration, rules);
  return db.transaction(async (tx) => {
    const [row] = await tx
      .insert(notificationChannels)
      .values({
        organizationId: ctx.principal.organizationId,
        name: input.name,
        description: input.description ?? null,
        channelType: input.channelType,
        configuration,
        isActive: input.isActive,
        createdBy: ctx.principal.userId,
      })
      .returning();
    // The audit entry never holds a secret: it records the masked view.
    await writeAudit(tx, ctx, { action: 'notification_channel.create', resourceType: 'notification_channel', resourceId: row.id, after: channelView(row) });
    return channelView(row, { reveal: true });
  });
}

/**
 * Updates the given fields. A new `channelType` needs a `configuration` for it. A configuration of
 * the same type may carry masked secrets as read: they keep the stored values. A request that changes
 * nothing writes no audit entry.
 */
export async function updateChannel(db: Db, ctx: AuditContext, id: string, input: UpdateNotificationChannelInput, rules: TargetRules) {
  const orgId = ctx.principal.organizationId;
  return db.transaction(async (tx) => {
    const before = await getChannel(tx, orgId, id, { forUpdate: true });
    const type = (input.channelType ?? before.channelType) as ChannelType;
    const set: Partial<Row> = {};
    if (input.name !== undefined && input.name !== before.name) set.name = input.name;
    if (input.description !== undefined && input.description !== before.description) set.description = input.description;
    if (input.isActive !== undefined && input.isActive !== before.isActive) set.isActive = input.isActive;
    if (type !== before.channelType) {
      if (input.configuration === undefined) throw validation({ configuration: `is required when channelType changes (to ${type})` });
      set.channelType = type;
    }
    if (input.configuration !== undefined) {
      const given = type === before.channelType ? restoreMasked(type, input.configuration, before.configuration) : input.configuration;
      const configuration = checkedConfiguration(type, given, rules);
      if (!isDeepStrictEqual(configuration, before.configuration)) set.configuration = configuration;
    }
    if (Object.keys(set).length === 0) return channelView(before);
    const [row] = await tx
      .update(notificationChannels)
      .set({ ...set, updatedAt: new Date() })
      .where(and(eq(notificationChannels.organizationId, orgId), eq(notificationChannels.id, id)))
      .returning();
    const after = channelView(row);
    await writeAudit(tx, ctx, { action: 'notification_channel.update', resourceType: 'notification_channel', resourceId: id, before: channelView(before), after });
    return after;
  });
}

/** Deletes a channel for good; deliveries still queued for it find nothing and end. */
export async function deleteChannel(db: Db, ctx: AuditContext, id: string) {
  const orgId = ctx.principal.organizationId;
  await db.transaction(async (tx) => {
    const before = await getChannel(tx, orgId, id, { forUpdate: true });
    await tx.delete(notificationChannels).where(and(eq(notificationChannels.organizationId, orgId), eq(notificationChannels.id, id)));
    await writeAudit(tx, ctx, { action: 'notification_channel.delete', resourceType: 'notification_channel', resourceId: id, before: channelView(before) });
  });
}

/** The payload of a `notification.deliver` job. */
export interface DeliveryPayload {
  channelId: string;
  message: NotificationMessage;
  /** When notify was called: the webhook body's createdAt, the same on every attempt. */
  createdAt: string;
}

/**
 * Queues `message` for each active channel among `channelIds` of the organization: one durable job
 * per channel, written on `executor` (call it with the transaction of the change that causes the
 * notification, so the jobs exist exactly when it commits). The idempotency key is (channel, action,
 * dedupKey): a repeat while the first is still queued, running or dead is ignored. Unknown, other
 * organizations' and inactive channels are skipped. Throws a VALIDATION_ERROR on a malformed message.
 */
export async function notify(executor: Executor, orgId: string, channelIds: string | readonly string[], message: NotificationMessage, opts: { now?: Date } = {}) {
  const parsed = notificationMessageSchema.safeParse(message);
  if (!parsed.success) throw validation(Object.fromEntries(parsed.error.issues.map((i) => [['message', ...i.path.map(String)].join('.'), i.message])));
  const ids = [...new Set(typeof channelIds === 'string' ? [channelIds] : channelIds)];
  const now = opts.now ?? new Date();
  const out = { enqueued: [] as string[], skipped: [] as string[] };
  if (ids.length === 0) return out;
  const t = notificationChannels;
  const active = await executor
    .select({ id: t.id })
    .from(t)
    .where(and(eq(t.organizationId, orgId), inArray(t.id, ids), eq(t.isActive, true)));
  const found = new Set(active.map((r) => r.id));
  for (const channelId of ids) {
    if (!found.has(channelId)) {
      out.skipped.push(channelId);
      continue;
    }
    const payload: DeliveryPayload = { channelId, message: parsed.data, createdAt: now.toISOString() };
    const { created } = await enqueue(
      executor,
      { type: DELIVER_JOB, organizationId: orgId, payload, idempotencyKey: `${channelId}:${parsed.data.action}:${parsed.data.dedupKey}`, maxAttempts: DELIVERY_MAX_ATTEMPTS },
      now,
    );
    (created ? out.enqueued : out.skipped).push(channelId);
  }
  return out;
}

/** `<kind>: <message>`, as stored in lastFailureReason and answered by the test route. */
const reasonOf = (o: Extract<DeliveryOutcome, { ok: false }>) => `${o.kind}: ${o.message}`;

/**
 * Runs one delivery job: a deleted or inactive channel ends it quietly; success stamps
 * lastDeliveryAt; a failure stamps lastFailureAt/Reason and throws when retrying can help (the
 * runner retries with backoff), and ends the job when it cannot (a 4xx from Slack or PagerDuty).
 */
export async function runDelivery(db: Db, sender: Sender, clock: Clock, job: { id: string; organizationId: string; payload: unknown }) {
  const p = job.payload as DeliveryPayload;
  const t = notificationChannels;
  const key = and(eq(t.organizationId, job.organizationId), eq(t.id, p.channelId));
  const [row] = await db.select().from(t).where(key).limit(1);
  if (!row || !row.isActive) return;
  const outcome = await sender.deliver(row, p.message, { id: job.id, createdAt: p.createdAt });
  if (outcome.ok) {
    await db.update(t).set({ lastDeliveryAt: clock.now() }).where(key);
    return;
  }
  const reason = reasonOf(outcome);
  await db.update(t).set({ lastFailureAt: clock.now(), lastFailureReason: reason }).where(key);
  if (!outcome.permanent) throw new Error(`notification delivery failed: ${reason}`);
}

/**
 * Sends a test message to a channel (active or not) now, bounded by the delivery deadline, and
 * reports the outcome; a failing target is a result, never an error. A PagerDuty test triggers and
 * then resolves the same dedup_key, so no incident stays open.
 */
export async function testChannel(db: Db, sender: Sender, orgId: string, id: string, now: Date): Promise<TestResult> {
  const row = await getChannel(db, orgId, id);
  const message: NotificationMessage = {
    dedupKey: `agov-test-${row.id}-${now.getTime()}`,
    title: `Test notification for channel "${row.name}"`,
    body: 'This is a test message from Agent Governance: the channel is configured correctly.',
    severity: 'info',
    action: 'trigger',
  };
  const envelope = { id: randomUUID(), createdAt: now.toISOString() };
  const outcome = await sender.deliver(row, message, envelope);
  if (outcome.ok && row.channelType === 'pagerduty') {
    await sender.deliver(row, { ...message, action: 'resolve' }, envelope);
  }
  if (outcome.ok) return outcome.statusCode === undefined ? { success: true } : { success: true, statusCode: outcome.statusCode };
  return { success: false, ...(outcome.statusCode !== undefined ? { statusCode: outcome.statusCode } : {}), error: reasonOf(outcome) };
}

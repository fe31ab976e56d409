/** Webhooks: CRUD, secret rotation, the test send, the delivery log and redelivery (docs/decisions.md, "Webhooks"). */
import { and, count, desc, eq, sql } from 'drizzle-orm';
import type { Db, Executor } from '../../db/client.js';
import { webhookDeliveries, webhookMessages, webhooks } from '../../db/schema/index.js';
import { changedFields } from '../../core/changes.js';
import { conflict, notFound, validation } from '../../core/errors.js';
import { enqueue } from '../../jobs/enqueue.js';
import { targetUrlProblem } from '../../lib/outbound.js';
import { eventEnvelope } from '../events/outbox.js';
import { newSigningSecret } from '../../lib/webhook-signature.js';
import { findAgents } from '../agents/index.js';
import { writeAudit, type AuditContext } from '../audit/service.js';
import { newId } from '../../db/schema/columns.js';
import type { CreateWebhookInput, TestResult, UpdateWebhookInput, Webhook, WebhookDelivery } from './schemas.js';
import { sendSigned, type SendSettings } from './send.js';
import { DELIVER_JOB } from './jobs.js';

export type WebhookRow = typeof webhooks.$inferSelect;
type OnChanged = (orgId: string) => Promise<void>;

const iso = (d: Date | null) => (d ? d.toISOString() : null);

/** The Webhook resource of a row: never the secret. */
export const webhookView = (r: WebhookRow): Webhook => ({
  id: r.id,
  name: r.name,
  description: r.description,
  url: r.url,
  eventTypes: r.eventTypes as Webhook['eventTypes'],
  agentIds: r.agentIds,
  isActive: r.isActive,
  maxRetries: r.maxRetries,
  retryBackoffSeconds: r.retryBackoffSeconds,
  timeoutSeconds: r.timeoutSeconds,
  customHeaders: r.customHeaders,
  successCount: r.successCount,
  failureCount: r.failureCount,
  lastTriggeredAt: iso(r.lastTriggeredAt),
  lastSuccessAt: iso(r.lastSuccessAt),
  lastFailureAt: iso(r.lastFailureAt),
  lastFailureReason: r.lastFailureReason,
  tags: r.tags,
  notes: r.notes,
  createdAt: r.createdAt.toISOString(),
  updatedAt: r.updatedAt.toISOString(),
  createdBy: r.createdBy,
});

/** A new signing secret: `whsec_` + base64 of 32 random bytes (contract.md, "Events"). */
export const newSecret = newSigningSecret;

const scoped = (orgId: string, id: string) => and(eq(webhooks.organizationId, orgId), eq(webhooks.id, id));

/** One webhook of the organization (with its secrets, for the worker and the test send), or 404. */
export async function getWebhook(db: Executor, orgId: string, id: string, lock = false): Promise<WebhookRow> {
  const q = db.select().from(webhooks).where(scoped(orgId, id)).limit(1);
  const [row] = lock ? await q.for('update') : await q;
  if (!row) throw notFound('Webhook');
  return row;
}

/** A page of the organization's webhooks, newest first. */
export async function listWebhooks(db: Db, orgId: string, q: { limit: number; offset: number }) {
  const where = eq(webhooks.organizationId, orgId);
  const [rows, [{ total }]] = await Promise.all([
    db.select().from(webhooks).where(where).orderBy(desc(webhooks.id)).limit(q.limit).offset(q.offset),
    db.select({ total: count() }).from(webhooks).where(where),
  ]);
  return { rows: rows.map(webhookView), total };
}

/** The checks beyond the schema (422 naming each field): the URL as an outbound target, agents of the organization. */
async function checkWebhook(db: Executor, orgId: string, p: { url?: string; agentIds?: string[] | null }, allowPrivate: boolean) {
  const fields: Record<string, string> = {};
  if (p.url !== undefined) {
    const problem = targetUrlProblem(p.url, { allowPrivate });
    if (problem) fields.url = problem;
  }
  if (p.agentIds && p.agentIds.length > 0) {
    const found = new Set((await findAgents(db as Db, orgId, [...new Set(p.agentIds)], [])).map((a) => a.id));
    p.agentIds.forEach((id, i) => {
      if (!found.has(id)) fields[`agentIds.${i}`] = 'no such agent in this organization';
    });
  }
  if (Object.keys(fields).length > 0) throw validation(fields);
}

/** Creates a webhook; answers it with its secret (the only time the secret is shown, besides rotate-secret). */
export async function createWebhook(db: Db, ctx: AuditContext, input: CreateWebhookInput, allowPrivate: boolean, onChanged: OnChanged) {
  const orgId = ctx.principal.organizationId;
  const secret = newSecret();
  const view = await db.transaction(async (tx) => {
    await checkWebhook(tx, orgId, input, allowPrivate);
    const [row] = await tx
      .insert(webhooks)
      .values({
        ...input,
        organizationId: orgId,
        description: input.description ?? null,
        agentIds: input.agentIds ?? null,
        tags: input.tags ?? null,
        notes: input.notes ?? null,
        secret,
        createdBy: ctx.principal.userId ?? 'unknown',
      })
      .returning();
    const v = webhookView(row);
    // The audit entry keeps the webhook as shown: never its secret.
    await writeAudit(tx, ctx, { action: 'webhook.create', resourceType: 'webhook', resourceId: row.id, after: v });
    return v;
  });
  await onChanged(orgId);
  return { ...view, secret };
}

/**
 * Changes the given fields. Re-activating a webhook forgets its failure streak (the 5-day rule starts
 * over) and resumes delivery. No change, no audit entry.
 */
export async function updateWebhook(db: Db, ctx: AuditContext, id: string, input: UpdateWebhookInput, allowPrivate: boolean, onChanged: OnChanged) {
  const orgId = ctx.principal.organizationId;
  const result = await db.transaction(async (tx) => {
    const before = await getWebhook(tx, orgId, id, true);
    await checkWebhook(tx, orgId, input, allowPrivate);
    const set = changedFields(before, input);
    if (!set) return { view: webhookView(before), changed: false };
    const reactivated = set.isActive === true && !before.isActive;
    const [row] = await tx
      .update(webhooks)
      .set({ ...set, ...(reactivated ? { failingSince: null } : {}), updatedAt: new Date() })
      .where(scoped(orgId, id))
      .returning();
    const view = webhookView(row);
    await writeAudit(tx, ctx, { action: 'webhook.update', resourceType: 'webhook', resourceId: id, before: webhookView(before), after: view, metadata: { changes: Object.keys(set) } });
    if (reactivated) await enqueue(tx, { type: DELIVER_JOB, organizationId: orgId, payload: { webhookId: id } }, ctx.clock.now());
    return { view, changed: true };
  });
  if (result.changed) await onChanged(orgId);
  return result.view;
}

/** Deletes a webhook for good, with its pending deliveries and its delivery log. */
export async function deleteWebhook(db: Db, ctx: AuditContext, id: string, onChanged: OnChanged) {
  const orgId = ctx.principal.organizationId;
  await db.transaction(async (tx) => {
    const before = await getWebhook(tx, orgId, id, true);
    await tx.delete(webhooks).where(scoped(orgId, id));
    await writeAudit(tx, ctx, { action: 'webhook.delete', resourceType: 'webhook', resourceId: id, before: webhookView(before) });
  });
  await onChanged(orgId);
}

/**
 * A new signing secret, answered once. The previous secret keeps signing (alongside the new one) for
 * `graceSeconds`, so receivers can roll their key (docs/decisions.md, "Webhooks").
 */
export async function rotateSecret(db: Db, ctx: AuditContext, id: string, graceSeconds: number) {
  const orgId = ctx.principal.organizationId;
  const secret = newSecret();
  await db.transaction(async (tx) => {
    const before = await getWebhook(tx, orgId, id, true);
    const now = ctx.clock.now();
    await tx
      .update(webhooks)
      .set({ secret, previousSecret: before.secret, previousSecretExpiresAt: new Date(now.getTime() + graceSeconds * 1000), updatedAt: new Date() })
      .where(scoped(orgId, id));
    await writeAudit(tx, ctx, { action: 'webhook.rotate_secret', resourceType: 'webhook', resourceId: id, metadata: { graceSeconds } });
  });
  return { id, secret };
}

type DeliveryRow = typeof webhookDeliveries.$inferSelect & { body: string };

const deliveryView = (r: DeliveryRow): WebhookDelivery => ({
  id: r.id,
  webhookId: r.webhookId,
  eventId: r.eventId,
  eventType: r.eventType,
  payload: JSON.parse(r.body) as Record<string, unknown>,
  statusCode: r.statusCode,
  responseBody: r.responseBody,
  success: r.success,
  attemptNumber: r.attemptNumber,
  errorMessage: r.errorMessage,
  idempotencyKey: r.idempotencyKey,
  durationMs: r.durationMs,
  createdAt: r.createdAt.toISOString(),
});

/** A webhook's delivery attempts, most recent first (the payload is the message's body). */
export async function listDeliveries(db: Db, orgId: string, webhookId: string, q: { limit: number; offset: number }) {
  await getWebhook(db, orgId, webhookId);
  const where = and(eq(webhookDeliveries.organizationId, orgId), eq(webhookDeliveries.webhookId, webhookId));
  const [rows, [{ total }]] = await Promise.all([
    db
      .select({ d: webhookDeliveries, body: webhookMessages.body })
      .from(webhookDeliveries)
      .innerJoin(webhookMessages, and(eq(webhookMessages.organizationId, webhookDeliveries.organizationId), eq(webhookMessages.id, webhookDeliveries.messageId)))
      .where(where)
      .orderBy(desc(webhookDeliveries.createdAt), desc(webhookDeliveries.id))
      .limit(q.limit)
      .offset(q.offset),
    db.select({ total: count() }).from(webhookDeliveries).where(where),
  ]);
  return { rows: rows.map((r) => deliveryView({ ...r.d, body: r.body })), total };
}

/**
 * Sends the event of a delivery attempt again as a new attempt series: same event id, same body,
 * same idempotency key (contract.md: a redelivery is the same logical event). 409 when the webhook is
 * inactive (re-activate it first).
 */
export async function redeliver(db: Db, ctx: AuditContext, webhookId: string, deliveryId: string) {
  const orgId = ctx.principal.organizationId;
  return db.transaction(async (tx) => {
    const hook = await getWebhook(tx, orgId, webhookId, true);
    const [d] = await tx
      .select()
      .from(webhookDeliveries)
      .where(and(eq(webhookDeliveries.organizationId, orgId), eq(webhookDeliveries.webhookId, webhookId), eq(webhookDeliveries.id, deliveryId)))
      .limit(1);
    if (!d) throw notFound('Webhook delivery');
    if (!hook.isActive) throw conflict('The webhook is inactive: re-activate it (PATCH isActive: true) before redelivering');
    const [m] = await tx.select().from(webhookMessages).where(and(eq(webhookMessages.organizationId, orgId), eq(webhookMessages.id, d.messageId))).limit(1);
    // Retention may have deleted the message (and, by cascade, the delivery) since the read above.
    if (!m) throw notFound('Webhook delivery');
    // The webhook row is locked above, so two redeliveries of one event get distinct series.
    const [{ series }] = await tx
      .select({ series: sql<number>`coalesce(max(${webhookMessages.series}), 0)::int + 1` })
      .from(webhookMessages)
      .where(and(eq(webhookMessages.organizationId, orgId), eq(webhookMessages.webhookId, webhookId), eq(webhookMessages.eventId, m.eventId)));
    const now = ctx.clock.now();
    await tx.insert(webhookMessages).values({
      organizationId: orgId,
      webhookId,
      eventId: m.eventId,
      eventType: m.eventType,
      body: m.body,
      idempotencyKey: m.idempotencyKey,
      series,
      nextAttemptAt: now,
    });
    await enqueue(tx, { type: DELIVER_JOB, organizationId: orgId, payload: { webhookId } }, now);
    await writeAudit(tx, ctx, { action: 'webhook.redeliver', resourceType: 'webhook', resourceId: webhookId, metadata: { deliveryId, eventId: m.eventId, series } });
    return { webhookId, eventId: m.eventId, idempotencyKey: m.idempotencyKey, series, status: 'pending' as const };
  });
}

/** The event types each organization's active webhooks want (the subscriptions cache's load). */
export async function activeEventTypes(db: Db, orgId: string): Promise<Set<string>> {
  const rows = await db
    .select({ eventTypes: webhooks.eventTypes })
    .from(webhooks)
    .where(and(eq(webhooks.organizationId, orgId), eq(webhooks.isActive, true)));
  return new Set(rows.flatMap((r) => r.eventTypes));
}


/**
 * POST /webhooks/{id}/test: one signed request with a `test` payload, sent now (not queued, not
 * retried, not recorded as a delivery), answering the target's status or why there was none.
 */
export async function testWebhook(db: Db, orgId: string, id: string, settings: SendSettings, now: Date): Promise<TestResult> {
  const hook = await getWebhook(db, orgId, id);
  const eventId = newId();
  const { body, idempotencyKey } = eventEnvelope({ id: eventId, type: 'test', createdAt: now.toISOString(), organizationId: orgId, agentId: null, data: { webhookId: id, message: 'A test delivery from the agent governance service' } });
  const o = await sendSigned(hook, { body, eventId, idempotencyKey }, settings, now);
  return {
    success: o.success,
    statusCode: o.statusCode ?? 0,
    statusText: o.statusText,
    ...(o.success ? {} : { error: o.errorMessage ?? 'failed', errorKind: o.errorKind ?? 'network' }),
    durationMs: o.durationMs,
  };
}

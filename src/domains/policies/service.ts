/** Policies: create, list, read, change and delete; validation of ruleDefinition and agent references. */
import { and, asc, count, eq, ilike, or, sql, type SQL } from 'drizzle-orm';
import type { Db, Executor } from '../../db/client.js';
import { policies } from '../../db/schema/index.js';
import { changedFields } from '../../core/changes.js';
import { notFound, validation } from '../../core/errors.js';
import type { Environment } from '../../http/validation.js';
import { findAgents } from '../agents/index.js';
import { writeAudit, type AuditContext } from '../audit/service.js';
import { parseRuleDefinition, type PolicyType } from './rules.js';
import type { CreatePolicyInput, ListPoliciesQuery, Policy, UpdatePolicyInput } from './schemas.js';

type Row = typeof policies.$inferSelect;

/** The Policy resource of a row (assignable to the engine's PolicyDefinition: camelCase, ISO timestamps). */
export const policyView = (r: Row): Policy => ({
  id: r.id,
  organizationId: r.organizationId,
  name: r.name,
  description: r.description,
  policyType: r.policyType as PolicyType,
  appliesToAgents: r.appliesToAgents,
  appliesToEnvironments: r.appliesToEnvironments as Environment[],
  ruleDefinition: r.ruleDefinition,
  enforcementMode: r.enforcementMode as Policy['enforcementMode'],
  isActive: r.isActive,
  alertOnViolation: r.alertOnViolation,
  alertChannels: r.alertChannels,
  complianceFrameworks: r.complianceFrameworks,
  complianceControls: r.complianceControls,
  severity: r.severity as Policy['severity'],
  actions: r.actions as Policy['actions'],
  agentId: r.agentId,
  priority: r.priority,
  maxRequests: r.maxRequests,
  timeWindowSeconds: r.timeWindowSeconds,
  notifyWebhookUrl: r.notifyWebhookUrl,
  notifyEmail: r.notifyEmail,
  notes: r.notes,
  createdBy: r.createdBy,
  createdAt: r.createdAt.toISOString(),
  updatedAt: r.updatedAt.toISOString(),
  tags: r.tags,
});

const scoped = (orgId: string, id: string) => and(eq(policies.organizationId, orgId), eq(policies.id, id));

/** One policy of the organization, or 404. */
export async function getPolicy(db: Executor, orgId: string, id: string, lock = false) {
  const q = db.select().from(policies).where(scoped(orgId, id)).limit(1);
  const [row] = lock ? await q.for('update') : await q;
  if (!row) throw notFound('Policy');
  return row;
}

/** The organization's active policies in evaluation order: ascending priority, then id. */
export async function loadActivePolicies(db: Db, orgId: string): Promise<Policy[]> {
  const rows = await db
    .select()
    .from(policies)
    .where(and(eq(policies.organizationId, orgId), eq(policies.isActive, true)))
    .orderBy(asc(policies.priority), asc(policies.id));
  return rows.map(policyView);
}

function escapeLike(s: string) {
  return s.replace(/[\\%_]/g, (c) => `\\${c}`);
}

/**
 * A filtered page of policies in evaluation order (priority, then id). `agentId` selects the
 * policies that name the agent, through `agentId` or `appliesToAgents` (docs/decisions.md, "Policies").
 */
export async function listPolicies(db: Db, orgId: string, q: ListPoliciesQuery) {
  const c: SQL[] = [eq(policies.organizationId, orgId)];
  if (q.policyType) c.push(eq(policies.policyType, q.policyType));
  if (q.isActive !== undefined) c.push(eq(policies.isActive, q.isActive));
  if (q.enforcementMode) c.push(eq(policies.enforcementMode, q.enforcementMode));
  if (q.agentId) c.push(or(eq(policies.agentId, q.agentId), sql`${policies.appliesToAgents} @> array[${q.agentId}]::uuid[]`)!);
  if (q.search) {
    const p = `%${escapeLike(q.search)}%`;
    c.push(or(ilike(policies.name, p), ilike(policies.description, p))!);
  }
  const where = and(...c);
  const [rows, [{ total }]] = await Promise.all([
    db.select().from(policies).where(where).orderBy(asc(policies.priority), asc(policies.id)).limit(q.limit).offset(q.offset),
    db.select({ total: count() }).from(policies).where(where),
  ]);
  return { rows: rows.map(policyView), total };
}

type Checked = Pick<CreatePolicyInput, 'policyType' | 'ruleDefinition' | 'appliesToAgents' | 'agentId' | 'maxRequests' | 'timeWindowSeconds'>;

/**
 * The rules a policy must satisfy as a whole (422 naming each field): ruleDefinition valid for its
 * policyType, maxRequests and timeWindowSeconds given together, agents of the organization.
 * Answers the parsed ruleDefinition (with the rule schema's defaults) to store.
 */
async function checkPolicy(db: Executor, orgId: string, p: Checked, ruleGiven: boolean) {
  const fields: Record<string, string> = {};
  const parsed = parseRuleDefinition(p.policyType, p.ruleDefinition);
  if (!parsed.ok) {
    for (const [k, v] of Object.entries(parsed.fields)) {
      // A stored rule that does not fit a new policyType: the client must send a ruleDefinition.
      fields[k] = ruleGiven ? v : `${v} (the stored ruleDefinition does not fit policyType ${p.policyType}: send a ruleDefinition)`;
    }
  }
  const limitGiven = (v: number | null | undefined) => v !== null && v !== undefined;
  if (limitGiven(p.maxRequests) !== limitGiven(p.timeWindowSeconds)) {
    const missing = limitGiven(p.maxRequests) ? 'timeWindowSeconds' : 'maxRequests';
    fields[missing] = 'maxRequests and timeWindowSeconds are given together (or both null)';
  }
  const ids = [...new Set([...(p.appliesToAgents ?? []), ...(p.agentId ? [p.agentId] : [])])];
  if (ids.length > 0) {
    const found = new Set((await findAgents(db, orgId, ids, [])).map((a) => a.id));
    (p.appliesToAgents ?? []).forEach((id, i) => {
      if (!found.has(id)) fields[`appliesToAgents.${i}`] = 'no such agent in this organization';
    });
    if (p.agentId && !found.has(p.agentId)) fields.agentId = 'no such agent in this organization';
  }
  if (Object.keys(fields).length > 0) throw validation(fields);
  return parsed.ok ? (parsed.rule as Record<string, unknown>) : p.ruleDefinition;
}

/** Creates a policy. `onChanged(orgId)` runs after commit (the active-policy cache). */
export async function createPolicy(db: Db, ctx: AuditContext, input: CreatePolicyInput, onChanged: (orgId: string) => Promise<void>) {
  const orgId = ctx.principal.organizationId;
  const view = await db.transaction(async (tx) => {
    const ruleDefinition = await checkPolicy(tx, orgId, input, true);
    const [row] = await tx
      .insert(policies)
      .values({
        ...input,
        organizationId: orgId,
        ruleDefinition,
        description: input.description ?? null,
        agentId: input.agentId ?? null,
        maxRequests: input.maxRequests ?? null,
        timeWindowSeconds: input.timeWindowSeconds ?? null,
        notifyWebhookUrl: input.notifyWebhookUrl ?? null,
        notes: input.notes ?? null,
        createdBy: ctx.principal.userId,
      })
      .returning();
    const v = policyView(row);
    await writeAudit(tx, ctx, { action: 'policy.create', resourceType: 'policy', resourceId: row.id, after: v });
    return v;
  });
  await onChanged(orgId);
  return view;
}

/**
 * Changes the given fields. A new policyType needs a ruleDefinition valid for it: without one in
 * the body, the stored ruleDefinition is checked against the new type (docs/decisions.md, "Policies"). No change,
 * no audit entry and no cache invalidation.
 */
export async function updatePolicy(db: Db, ctx: AuditContext, id: string, input: UpdatePolicyInput, onChanged: (orgId: string) => Promise<void>) {
  const orgId = ctx.principal.organizationId;
  const result = await db.transaction(async (tx) => {
    // Checked against the locked row, so a concurrent change cannot slip between check and write.
    const before = await getPolicy(tx, orgId, id, true);
    const merged = { ...before, ...stripUndefined(input) } as Row & Checked;
    const ruleDefinition = await checkPolicy(tx, orgId, { ...merged, policyType: merged.policyType as PolicyType }, input.ruleDefinition !== undefined);
    // The stored rule is the parsed one (with its schema's defaults), whether sent or re-checked for a new type.
    const patch = { ...input, ...(input.ruleDefinition !== undefined || input.policyType !== undefined ? { ruleDefinition } : {}) };
    const set = changedFields(before, patch);
    if (!set) return { view: policyView(before), changed: false };
    const [row] = await tx.update(policies).set({ ...set, updatedAt: new Date() }).where(scoped(orgId, id)).returning();
    const view = policyView(row);
    await writeAudit(tx, ctx, { action: 'policy.update', resourceType: 'policy', resourceId: id, before: policyView(before), after: view, metadata: { changes: Object.keys(set) } });
    return { view, changed: true };
  });
  if (result.changed) await onChanged(orgId);
  return result.view;
}

/** Deletes a policy for good (docs/decisions.md, "Policies": deactivate with PATCH isActive false to keep it). */
export async function deletePolicy(db: Db, ctx: AuditContext, id: string, onChanged: (orgId: string) => Promise<void>) {
  const orgId = ctx.principal.organizationId;
  await db.transaction(async (tx) => {
    const before = await getPolicy(tx, orgId, id, true);
    await tx.delete(policies).where(scoped(orgId, id));
    await writeAudit(tx, ctx, { action: 'policy.delete', resourceType: 'policy', resourceId: id, before: policyView(before) });
  });
  await onChanged(orgId);
}

const stripUndefined = <T extends object>(o: T) => Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;

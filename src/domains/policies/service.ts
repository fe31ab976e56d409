/** Policies: create, list, read, change and delete; validation of ruleDefinition and agent references. */
import { and, asc, count, eq, ilike, or, sql, type SQL } from 'drizzle-orm';
import type { Db, Executor } from '../../db/client.js';
import { policies } from '../../db/schema/index.js';
import { containsPattern } from '../../db/like.js';
import { changedFields } from '../../core/changes.js';
import { DomainError, invalidTransition, notFound, validation } from '../../core/errors.js';
import { newId } from '../../db/schema/columns.js';
import type { PolicyDefinition } from './engine/index.js';
import type { Environment } from '../../http/validation.js';
import { findAgents } from '../agents/index.js';
import { writeAudit, type AuditContext } from '../audit/service.js';
import { parseRuleDefinition, type PolicyType } from './rules.js';
import type { CreatePolicyInput, ListPoliciesQuery, Policy, UpdatePolicyInput } from './schemas.js';
import { callsValidator, newValidatorSecret } from './validator-signing.js';

/** A policy as a create, update or rotation answers it: `validatorSecret` only when that call generated one (docs/decisions.md, "Enforce route"). */
export type PolicyWithSecret = Policy & { validatorSecret?: string };
const withSecret = (v: Policy, secret: string | null): PolicyWithSecret => (secret ? { ...v, validatorSecret: secret } : v);

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
    const p = containsPattern(q.search);
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
    const validatorSecret = callsValidator(input.policyType, ruleDefinition) ? newValidatorSecret() : null;
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
        validatorSecret,
      })
      .returning();
    const v = policyView(row);
    await writeAudit(tx, ctx, { action: 'policy.create', resourceType: 'policy', resourceId: row.id, after: v });
    return withSecret(v, validatorSecret);
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
    // A custom policy that first gets a validatorUrl gets its secret, shown in this answer only.
    const validatorSecret = !before.validatorSecret && callsValidator(merged.policyType, ruleDefinition) ? newValidatorSecret() : null;
    if (!set && !validatorSecret) return { view: policyView(before), changed: false };
    const [row] = await tx.update(policies).set({ ...set, ...(validatorSecret ? { validatorSecret } : {}), updatedAt: new Date() }).where(scoped(orgId, id)).returning();
    const view = policyView(row);
    await writeAudit(tx, ctx, { action: 'policy.update', resourceType: 'policy', resourceId: id, before: policyView(before), after: view, metadata: { changes: [...Object.keys(set ?? {}), ...(validatorSecret ? ['validatorSecret'] : [])] } });
    return { view: withSecret(view, validatorSecret), changed: true };
  });
  if (result.changed) await onChanged(orgId);
  return result.view as PolicyWithSecret;
}

/**
 * Replaces the validator secret of a custom policy with validatorUrl (409 INVALID_TRANSITION for
 * any other policy) and answers the policy with the new secret. The old secret stops signing at
 * once (no grace period: the validator's owner rotates and deploys together). Bumps updatedAt, so
 * the enforce route's secret cache (keyed by policy version) reads the new one. Audited without the secret.
 */
export async function rotateValidatorSecret(db: Db, ctx: AuditContext, id: string, onChanged: (orgId: string) => Promise<void>): Promise<PolicyWithSecret> {
  const orgId = ctx.principal.organizationId;
  const out = await db.transaction(async (tx) => {
    const before = await getPolicy(tx, orgId, id, true);
    if (!callsValidator(before.policyType, before.ruleDefinition)) throw invalidTransition('Only a custom policy with a validatorUrl has a validator secret');
    const validatorSecret = newValidatorSecret();
    const [row] = await tx.update(policies).set({ validatorSecret, updatedAt: new Date() }).where(scoped(orgId, id)).returning();
    const view = policyView(row);
    await writeAudit(tx, ctx, { action: 'policy.rotate_validator_secret', resourceType: 'policy', resourceId: id });
    return withSecret(view, validatorSecret);
  });
  await onChanged(orgId);
  return out;
}

/** The validator secret of a policy (null when it has none or is gone): the enforce route signs with it. */
export async function validatorSecretOf(db: Executor, orgId: string, id: string): Promise<string | null> {
  const [row] = await db.select({ s: policies.validatorSecret }).from(policies).where(scoped(orgId, id)).limit(1);
  return row?.s ?? null;
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

/**
 * An unsaved policy for `POST /policies/test`: checked exactly like a create (422 naming
 * `policy.<field>`), answered as an active definition with a throwaway id and version (docs/decisions.md, "Enforce route").
 */
export async function dryRunDefinition(db: Db, orgId: string, input: CreatePolicyInput, now: Date): Promise<PolicyDefinition> {
  let ruleDefinition: Record<string, unknown>;
  try {
    ruleDefinition = await checkPolicy(db, orgId, input, true);
  } catch (err) {
    if (err instanceof DomainError && err.fields) throw validation(Object.fromEntries(Object.entries(err.fields).map(([k, v]) => [`policy.${k}`, v])));
    throw err;
  }
  return {
    id: newId(),
    name: input.name,
    policyType: input.policyType,
    ruleDefinition,
    enforcementMode: input.enforcementMode,
    // A dry run evaluates the policy as it would run once active, whatever isActive says.
    isActive: true,
    appliesToAgents: input.appliesToAgents,
    appliesToEnvironments: input.appliesToEnvironments,
    agentId: input.agentId ?? null,
    priority: input.priority,
    maxRequests: input.maxRequests ?? null,
    timeWindowSeconds: input.timeWindowSeconds ?? null,
    severity: input.severity,
    updatedAt: now.toISOString(),
  };
}

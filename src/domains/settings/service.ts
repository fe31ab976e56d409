/** Organization security and general settings (both live on the organizations row). */
import { eq } from 'drizzle-orm';
import type { Db, Executor } from '../../db/client.js';
import { organizations } from '../../db/schema/index.js';
import { notFound, validation } from '../../core/errors.js';
import { compileAllowlist, ipAllowed } from '../../lib/ip.js';
import { changedFields } from '../../core/changes.js';
import { writeAudit, type AuditContext } from '../audit/service.js';
import type { UpdateOrgSettingsInput, UpdateSecuritySettingsInput } from './schemas.js';
import type { Environment } from '../../http/validation.js';

type Org = typeof organizations.$inferSelect;

export const securityView = (o: Org) => ({
  ipAllowlist: o.ipAllowlist,
  allowedEnvironments: o.allowedEnvironments as Environment[],
  defaultKeyExpiryDays: o.defaultKeyExpiryDays,
  enforceMfa: o.enforceMfa,
  dashboardWidgets: o.dashboardWidgets,
});

export const orgView = (o: Org) => ({
  id: o.id,
  name: o.name,
  plan: o.plan as 'free',
  complianceFrameworks: o.complianceFrameworks,
  dataResidency: o.dataResidency as 'global',
});

async function load(db: Executor, orgId: string, lock = false) {
  const q = db.select().from(organizations).where(eq(organizations.id, orgId));
  const [row] = lock ? await q.for('update') : await q;
  if (!row) throw notFound('Organization');
  return row;
}

/** The organization row (settings views are derived from it). */
export const getOrganization = (db: Executor, orgId: string) => load(db, orgId);

/**
 * Updates security settings. An IP allowlist that would shut out the caller making the change is
 * refused (422): locking every admin out of an organization is not undoable through the API.
 */
export async function updateSecurity(db: Db, ctx: AuditContext, input: UpdateSecuritySettingsInput, onChanged: () => Promise<void>) {
  if (input.ip_allowlist && input.ip_allowlist.length > 0 && ctx.ip && !ipAllowed(ctx.ip, compileAllowlist(input.ip_allowlist))) {
    throw validation({ ip_allowlist: `must include the caller's own address (${ctx.ip})` }, 'The new allowlist would lock you out');
  }
  const orgId = ctx.principal.organizationId;
  const { row, changed } = await db.transaction(async (tx) => {
    const before = await load(tx, orgId, true);
    const set = changedFields(before, {
      ipAllowlist: input.ip_allowlist,
      allowedEnvironments: input.allowed_environments && [...new Set(input.allowed_environments)],
      defaultKeyExpiryDays: input.default_key_expiry_days,
      enforceMfa: input.enforce_mfa,
      dashboardWidgets: input.dashboard_widgets,
    });
    if (!set) return { row: before, changed: false };
    const [row] = await tx
      .update(organizations)
      .set({ ...set, updatedAt: new Date() })
      .where(eq(organizations.id, orgId))
      .returning();
    await writeAudit(tx, ctx, { action: 'security_settings.update', resourceType: 'security_settings', resourceId: orgId, before: securityView(before), after: securityView(row) });
    return { row, changed: true };
  });
  if (changed) await onChanged();
  return securityView(row);
}

/** Updates plan, compliance frameworks and data residency. */
export async function updateOrgSettings(db: Db, ctx: AuditContext, input: UpdateOrgSettingsInput) {
  const orgId = ctx.principal.organizationId;
  return db.transaction(async (tx) => {
    const before = await load(tx, orgId, true);
    const set = changedFields(before, { plan: input.plan, complianceFrameworks: input.compliance_frameworks, dataResidency: input.data_residency });
    if (!set) return orgView(before);
    const [row] = await tx
      .update(organizations)
      .set({ ...set, updatedAt: new Date() })
      .where(eq(organizations.id, orgId))
      .returning();
    await writeAudit(tx, ctx, { action: 'organization_settings.update', resourceType: 'organization_settings', resourceId: orgId, before: orgView(before), after: orgView(row) });
    return orgView(row);
  });
}

/** The organization's default lifetime of a new API key, in days (undefined for an unknown organization). */
export async function defaultKeyExpiryDays(db: Executor, orgId: string): Promise<number | undefined> {
  const [org] = await db.select({ days: organizations.defaultKeyExpiryDays }).from(organizations).where(eq(organizations.id, orgId));
  return org?.days;
}

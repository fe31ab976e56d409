/** HTTP routes for /settings/security and /settings/organization (admin). */
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { dataSchema, errorResponses, one } from '../../http/envelope.js';
import { auditContext, principalOf } from '../../http/context.js';
import { orgSettingsSchema, securitySettingsSchema, updateOrgSettingsInput, updateSecuritySettingsInput } from './schemas.js';
import * as svc from './service.js';

const tags = ['Settings'];
const auth = { scope: 'admin' as const };

export async function settingsRoutes(app: FastifyInstance) {
  const r = app.withTypeProvider<ZodTypeProvider>();
  const { db } = app.deps;

  r.get('/settings/security', {
    config: { auth },
    schema: { tags, operationId: 'settings.getSecurity', summary: 'Get security settings', description: 'IP allowlist, allowed environments, default key expiry, MFA enforcement and dashboard widgets of your organization.', response: { 200: dataSchema(securitySettingsSchema), ...errorResponses } },
  }, async (req) => one(svc.securityView(await svc.getOrganization(db, principalOf(req).organizationId))));

  r.patch('/settings/security', {
    config: { auth },
    schema: { tags, operationId: 'settings.updateSecurity', summary: 'Update security settings (snake_case input)', description: 'Input fields are snake_case (`ip_allowlist`, `allowed_environments`, `default_key_expiry_days`, ...); the response is camelCase. Changes apply to the next request on every instance. Audited (`security_settings.update`).', body: updateSecuritySettingsInput, response: { 200: dataSchema(securitySettingsSchema), ...errorResponses } },
  }, async (req) => {
    const ctx = auditContext(req);
    const forgetOrg = () => app.deps.afterCommit.run('auth: forget security settings', () => app.deps.auth.invalidateOrg(ctx.principal.organizationId));
    return one(await svc.updateSecurity(db, ctx, req.body, forgetOrg));
  });

  r.get('/settings/organization', {
    config: { auth },
    schema: { tags, operationId: 'settings.getOrganization', summary: 'Get organization settings', description: 'Name, plan, compliance frameworks and data residency of your organization.', response: { 200: dataSchema(orgSettingsSchema), ...errorResponses } },
  }, async (req) => one(svc.orgView(await svc.getOrganization(db, principalOf(req).organizationId))));

  r.patch('/settings/organization', {
    config: { auth },
    schema: { tags, operationId: 'settings.updateOrganization', summary: 'Update organization settings (snake_case input)', description: 'Input fields are snake_case; the response is camelCase. Audited (`organization_settings.update`).', body: updateOrgSettingsInput, response: { 200: dataSchema(orgSettingsSchema), ...errorResponses } },
  }, async (req) => one(await svc.updateOrgSettings(db, auditContext(req), req.body)));
}

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
    schema: { tags, summary: 'Get security settings', response: { 200: dataSchema(securitySettingsSchema), ...errorResponses } },
  }, async (req) => one(svc.securityView(await svc.getOrganization(db, principalOf(req).organizationId))));

  r.patch('/settings/security', {
    config: { auth },
    schema: { tags, summary: 'Update security settings (snake_case input)', body: updateSecuritySettingsInput, response: { 200: dataSchema(securitySettingsSchema), ...errorResponses } },
  }, async (req) => {
    const ctx = auditContext(req);
    const forgetOrg = () => app.deps.afterCommit.run('auth: forget security settings', () => app.deps.auth.invalidateOrg(ctx.principal.organizationId));
    return one(await svc.updateSecurity(db, ctx, req.body, forgetOrg));
  });

  r.get('/settings/organization', {
    config: { auth },
    schema: { tags, summary: 'Get organization settings', response: { 200: dataSchema(orgSettingsSchema), ...errorResponses } },
  }, async (req) => one(svc.orgView(await svc.getOrganization(db, principalOf(req).organizationId))));

  r.patch('/settings/organization', {
    config: { auth },
    schema: { tags, summary: 'Update organization settings (snake_case input)', body: updateOrgSettingsInput, response: { 200: dataSchema(orgSettingsSchema), ...errorResponses } },
  }, async (req) => one(await svc.updateOrgSettings(db, auditContext(req), req.body)));
}

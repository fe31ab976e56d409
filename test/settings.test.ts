import { describe, expect, it } from './fixture.js';
import { createKey, createOrg } from './helpers.js';

describe('/settings/security', () => {
  it('answers the defaults, takes snake_case input and answers camelCase', async ({ org }) => {
    const got = await org.req({ method: 'GET', url: '/api/v1/settings/security' });
    expect(got.json().data).toEqual({ ipAllowlist: [], allowedEnvironments: [], defaultKeyExpiryDays: 30, enforceMfa: false, dashboardWidgets: [] });
    const res = await org.req({
      method: 'PATCH', url: '/api/v1/settings/security',
      payload: { default_key_expiry_days: 7, enforce_mfa: true, dashboard_widgets: ['costs'], ip_allowlist: ['127.0.0.1', '10.0.0.0/8'] },
    });
    expect(res.statusCode).toBe(200);
    expect(res.json().data).toMatchObject({ defaultKeyExpiryDays: 7, enforceMfa: true, dashboardWidgets: ['costs'], ipAllowlist: ['127.0.0.1', '10.0.0.0/8'] });
    // New keys now default to 7 days.
    const k = await createKey(org, {});
    const got2 = await org.req({ method: 'GET', url: `/api/v1/api-keys/${k.id}` });
    expect((Date.parse(got2.json().data.expiresAt) - Date.now()) / 86_400_000).toBeCloseTo(7, 1);
  });

  it('refuses an allowlist that would lock out the caller', async ({ org }) => {
    const res = await org.req({ method: 'PATCH', url: '/api/v1/settings/security', payload: { ip_allowlist: ['10.0.0.0/8'] } });
    expect(res.statusCode).toBe(422);
    expect(res.json().error.fields.ip_allowlist).toMatch(/127\.0\.0\.1/);
  });

  it('422 names snake_case fields', async ({ org }) => {
    const res = await org.req({ method: 'PATCH', url: '/api/v1/settings/security', payload: { allowed_environments: ['prod'], ip_allowlist: ['nope'] } });
    expect(res.statusCode).toBe(422);
    expect(Object.keys(res.json().error.fields)).toEqual(expect.arrayContaining(['allowed_environments.0', 'ip_allowlist.0']));
  });
});

describe('/settings/organization', () => {
  it('updates plan, compliance frameworks and data residency, audited, per organization', async ({ org, freshOrg: other }) => {
    const res = await org.req({ method: 'PATCH', url: '/api/v1/settings/organization', payload: { plan: 'enterprise', compliance_frameworks: ['SOC2'], data_residency: 'eu' } });
    expect(res.statusCode).toBe(200);
    expect(res.json().data).toMatchObject({ id: org.orgId, plan: 'enterprise', complianceFrameworks: ['SOC2'], dataResidency: 'eu' });
    expect((await other.req({ method: 'GET', url: '/api/v1/settings/organization' })).json().data).toMatchObject({ plan: 'free', dataResidency: 'global' });
    const audit = await org.req({ method: 'GET', url: '/api/v1/audit-logs?action=organization_settings.update' });
    expect(audit.json().data[0]).toMatchObject({ beforeState: { plan: 'free' }, afterState: { plan: 'enterprise' } });
    expect((await org.req({ method: 'PATCH', url: '/api/v1/settings/organization', payload: { plan: 'gold' } })).statusCode).toBe(422);
  });

  it('requires admin', async ({ org }) => {
    const dev = await createKey(org, { scopes: ['agent:write'] });
    expect((await org.req({ key: dev.key, method: 'GET', url: '/api/v1/settings/organization' })).statusCode).toBe(403);
  });
});

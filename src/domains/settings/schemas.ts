import { z } from 'zod';
import { environmentEnum, ipOrCidr, str } from '../../http/validation.js';

export const securitySettingsSchema = z
  .object({
    ipAllowlist: z.array(z.string()),
    allowedEnvironments: z.array(environmentEnum),
    defaultKeyExpiryDays: z.number().int(),
    enforceMfa: z.boolean(),
    dashboardWidgets: z.array(z.string()),
  })
  .meta({ id: 'SecuritySettings' });

/** snake_case input, as the specification says. */
export const updateSecuritySettingsInput = z
  .object({
    ip_allowlist: z.array(ipOrCidr()).max(500).optional(),
    allowed_environments: z.array(environmentEnum).max(3).optional(),
    default_key_expiry_days: z.number().int().min(1).max(365).optional(),
    enforce_mfa: z.boolean().optional(),
    dashboard_widgets: z.array(str(1, 100)).max(100).optional(),
  })
  .meta({ id: 'UpdateSecuritySettingsInput' });

export const PLANS = ['free', 'starter', 'professional', 'enterprise'] as const;
export const RESIDENCIES = ['us', 'eu', 'ap', 'global'] as const;

export const orgSettingsSchema = z
  .object({
    id: z.uuid(),
    name: z.string(),
    plan: z.enum(PLANS),
    complianceFrameworks: z.array(z.string()),
    dataResidency: z.enum(RESIDENCIES),
  })
  .meta({ id: 'OrgSettings' });

export const updateOrgSettingsInput = z
  .object({
    plan: z.enum(PLANS).optional(),
    compliance_frameworks: z.array(str(1, 100)).max(50).optional(),
    data_residency: z.enum(RESIDENCIES).optional(),
  })
  .meta({ id: 'UpdateOrgSettingsInput' });

export type UpdateSecuritySettingsInput = z.infer<typeof updateSecuritySettingsInput>;
export type UpdateOrgSettingsInput = z.infer<typeof updateOrgSettingsInput>;

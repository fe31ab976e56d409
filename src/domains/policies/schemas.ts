/** Zod schemas of the Policy resource and its inputs (field names and bounds: the spec's Policy, Limits). */
import { z } from 'zod';
import { enforceRequestSchema } from './enforce-schemas.js';
import { isoDateTimeOut } from '../../http/envelope.js';
import { booleanQuery, environmentEnum, jsonObject, pagination, str } from '../../http/validation.js';
import { POLICY_TYPES } from './rules.js';

export const ENFORCEMENT_MODES = ['block', 'warn', 'monitor'] as const;
export const SEVERITIES = ['info', 'warning', 'critical'] as const;
export const POLICY_ACTIONS = ['log', 'block', 'notify', 'alert'] as const;

const labels = z.array(str(1, 100)).max(50);
const count = z.number().int().min(1).max(1_000_000_000);

export const policySchema = z
  .object({
    id: z.uuid(),
    organizationId: z.uuid(),
    name: z.string(),
    description: z.string().nullable(),
    policyType: z.enum(POLICY_TYPES),
    appliesToAgents: z.array(z.uuid()),
    appliesToEnvironments: z.array(environmentEnum),
    ruleDefinition: z.record(z.string(), z.unknown()),
    enforcementMode: z.enum(ENFORCEMENT_MODES),
    isActive: z.boolean(),
    alertOnViolation: z.boolean(),
    alertChannels: z.array(z.string()),
    complianceFrameworks: z.array(z.string()),
    complianceControls: z.array(z.string()),
    severity: z.enum(SEVERITIES),
    actions: z.array(z.enum(POLICY_ACTIONS)),
    agentId: z.uuid().nullable(),
    priority: z.number().int(),
    maxRequests: z.number().int().nullable(),
    timeWindowSeconds: z.number().int().nullable(),
    notifyWebhookUrl: z.string().nullable(),
    notifyEmail: z.array(z.string()),
    notes: z.string().nullable(),
    createdBy: z.string().nullable(),
    createdAt: isoDateTimeOut(),
    updatedAt: isoDateTimeOut(),
    tags: z.array(z.string()),
  })
  .meta({ id: 'Policy' });

/**
 * Every field of CreatePolicyInput; `ruleDefinition` is an object here and is validated per
 * `policyType` by the service (rules.ts), which names the failing `ruleDefinition.<path>`.
 */
const fields = {
  name: str(1, 255),
  description: str(0, 5000).nullable(),
  policyType: z.enum(POLICY_TYPES),
  ruleDefinition: jsonObject(),
  enforcementMode: z.enum(ENFORCEMENT_MODES),
  appliesToAgents: z.array(z.uuid()).max(1000),
  appliesToEnvironments: z.array(environmentEnum).max(3),
  isActive: z.boolean(),
  alertOnViolation: z.boolean(),
  alertChannels: labels,
  complianceFrameworks: labels,
  complianceControls: labels,
  severity: z.enum(SEVERITIES),
  actions: z.array(z.enum(POLICY_ACTIONS)).max(POLICY_ACTIONS.length),
  agentId: z.uuid().nullable(),
  priority: z.number().int().min(0).max(1_000_000),
  maxRequests: count.nullable(),
  timeWindowSeconds: z.number().int().min(1).max(31 * 86_400).nullable(),
  notifyWebhookUrl: z.url({ protocol: /^https?$/ }).max(500).nullable(),
  notifyEmail: z.array(z.email().max(320)).max(50),
  notes: str(0, 10_000).nullable(),
  tags: labels,
};

export const createPolicyInput = z
  .object({
    name: fields.name,
    description: fields.description.optional(),
    policyType: fields.policyType,
    ruleDefinition: fields.ruleDefinition,
    enforcementMode: fields.enforcementMode,
    appliesToAgents: fields.appliesToAgents.default([]),
    appliesToEnvironments: fields.appliesToEnvironments.default([]),
    isActive: fields.isActive.default(true),
    alertOnViolation: fields.alertOnViolation.default(true),
    alertChannels: fields.alertChannels.default([]),
    complianceFrameworks: fields.complianceFrameworks.default([]),
    complianceControls: fields.complianceControls.default([]),
    severity: fields.severity.default('warning'),
    actions: fields.actions.default(['log']),
    agentId: fields.agentId.optional(),
    priority: fields.priority.default(100),
    maxRequests: fields.maxRequests.optional(),
    timeWindowSeconds: fields.timeWindowSeconds.optional(),
    notifyWebhookUrl: fields.notifyWebhookUrl.optional(),
    notifyEmail: fields.notifyEmail.default([]),
    notes: fields.notes.optional(),
    tags: fields.tags.default([]),
  })
  .meta({ id: 'CreatePolicyInput' });

/** Every CreatePolicyInput field, all optional and without defaults (docs/decisions.md, "Policies"). */
export const updatePolicyInput = z
  .object(Object.fromEntries(Object.entries(fields).map(([k, s]) => [k, s.optional()])) as { [K in keyof typeof fields]: z.ZodOptional<(typeof fields)[K]> })
  .meta({ id: 'UpdatePolicyInput' });

export const listPoliciesQuery = z.object({
  ...pagination,
  policyType: z.enum(POLICY_TYPES).optional(),
  isActive: booleanQuery.optional(),
  enforcementMode: z.enum(ENFORCEMENT_MODES).optional(),
  agentId: z.uuid().optional(),
  search: str(1, 200).optional(),
});

export type Policy = z.infer<typeof policySchema>;
export type CreatePolicyInput = z.infer<typeof createPolicyInput>;
export type UpdatePolicyInput = z.infer<typeof updatePolicyInput>;
export type ListPoliciesQuery = z.infer<typeof listPoliciesQuery>;

/** The Policy with the validator secret a create, update or rotation has just generated (shown once). */
export const policyWithSecretSchema = policySchema
  .extend({ validatorSecret: z.string().optional().describe('`whsec_` + base64 of 32 bytes: signs this policy\'s validator calls. Returned only by the call that generated it') })
  .meta({ id: 'PolicyWithSecret' });

/** POST /policies/test: an unsaved policy and the enforce request to run it against. */
export const testPolicyInput = z.object({ policy: createPolicyInput, request: enforceRequestSchema });

import { z } from 'zod';
import { isoDateTimeOut } from '../../http/envelope.js';
import { environmentEnum, ipv4OrCidr, isoDateTime, jsonObject, pagination, str } from '../../http/validation.js';

export const PLATFORMS = ['openai', 'azure_openai', 'anthropic', 'langchain', 'crewai', 'custom'] as const;
export const AGENT_TYPES = ['chatbot', 'workflow', 'autonomous', 'copilot'] as const;
export const AGENT_STATUSES = ['active', 'paused', 'archived'] as const;
export const HEALTH = ['healthy', 'degraded', 'failing', 'unknown'] as const;
export const BUDGET_ACTIONS = ['alert', 'pause_agent'] as const;

const tags = z.array(str(1, 100)).max(50);
const url = z.url().max(2048);

export const agentSchema = z
  .object({
    id: z.uuid(),
    organizationId: z.uuid(),
    agentId: z.string(),
    name: z.string(),
    description: z.string().nullable(),
    type: z.enum(AGENT_TYPES),
    platform: z.enum(PLATFORMS),
    frameworkVersion: z.string().nullable(),
    modelProvider: z.string().nullable(),
    ownerUserId: z.uuid().nullable(),
    teamId: z.uuid().nullable(),
    environment: environmentEnum,
    deploymentUrl: z.string().nullable(),
    status: z.enum(AGENT_STATUSES),
    healthStatus: z.enum(HEALTH),
    lastSeenAt: isoDateTimeOut().nullable(),
    pausedAt: isoDateTimeOut().nullable(),
    pausedBy: z.string().nullable(),
    pauseReason: z.string().nullable(),
    monthlyBudgetUsd: z.number().nullable(),
    budgetAction: z.enum(BUDGET_ACTIONS),
    currentMonthCostUsd: z.number(),
    tags: z.array(z.string()),
    metadata: z.record(z.string(), z.unknown()),
    createdAt: isoDateTimeOut(),
    updatedAt: isoDateTimeOut(),
    createdBy: z.string().nullable(),
  })
  .meta({ id: 'Agent' });

/**
 * `type` is a free string of 1-50 in the spec's input but an enum in the resource; we accept the
 * four documented values only, so that filters and dashboards can rely on them.
 */
export const registerAgentInput = z
  .object({
    agentId: str(1, 255),
    name: str(1, 255),
    description: str(0, 5000).nullable().optional(),
    type: z.enum(AGENT_TYPES),
    platform: z.enum(PLATFORMS),
    frameworkVersion: str(0, 50).nullable().optional(),
    modelProvider: str(0, 100).nullable().optional(),
    environment: environmentEnum,
    deploymentUrl: url.nullable().optional(),
    tags: tags.default([]),
    metadata: jsonObject().default({}),
  })
  .meta({ id: 'RegisterAgentInput' });

export const updateAgentInput = z
  .object({
    name: str(1, 255).optional(),
    description: str(0, 5000).nullable().optional(),
    tags: tags.optional(),
    metadata: jsonObject().optional(),
    ownerUserId: z.uuid().nullable().optional(),
    teamId: z.uuid().nullable().optional(),
    deploymentUrl: url.nullable().optional(),
  })
  .meta({ id: 'UpdateAgentInput' });

export const listAgentsQuery = z.object({
  ...pagination,
  status: z.enum(AGENT_STATUSES).optional(),
  environment: environmentEnum.optional(),
  type: z.enum(AGENT_TYPES).optional(),
  platform: z.enum(PLATFORMS).optional(),
  teamId: z.uuid().optional(),
  tag: str(1, 100).optional(),
  search: str(1, 200).optional(),
});

export const pauseInput = z.object({ reason: str(1, 1000).optional() }).meta({ id: 'PauseAgentInput' });
export const killSwitchInput = z
  .object({ reason: str(1, 1000).default('Kill switch activated'), environment: environmentEnum.optional() })
  .meta({ id: 'KillSwitchInput' });

export const budgetInput = z
  .object({
    monthlyBudgetUsd: z.number().min(0).max(1e12).nullable(),
    budgetAction: z.enum(BUDGET_ACTIONS).default('alert'),
    warningThresholdPct: z.number().min(1).max(100).default(80),
  })
  .meta({ id: 'SetAgentBudgetInput' });

export const agentBudgetSchema = z
  .object({
    agentId: z.uuid(),
    agentName: z.string(),
    monthlyBudgetUsd: z.number().nullable(),
    currentMonthSpend: z.number(),
    percentUsed: z.number(),
    budgetAction: z.enum(BUDGET_ACTIONS),
    projectedMonthSpend: z.number(),
    daysRemainingInPeriod: z.number().int(),
    willExceedBudget: z.boolean(),
    warningThresholdPct: z.number(),
  })
  .meta({ id: 'AgentBudget' });

const period = z
  .object({
    total: z.number().int(),
    success: z.number().int(),
    error: z.number().int(),
    successRate: z.number(),
    avgDurationMs: z.number(),
    p95DurationMs: z.number(),
    totalCostUsd: z.number(),
  })
  .meta({ id: 'AgentStatsPeriod' });

export const agentStatsSchema = z.object({ last24h: period, last7d: period, last30d: period }).meta({ id: 'AgentStats' });

export const generateAgentKeyInput = z
  .object({
    name: str(1, 255),
    description: str(0, 500).nullable().optional(),
    expiresAt: isoDateTime()
      .refine((s) => Date.parse(s) > Date.now(), 'must be in the future')
      .nullable()
      .optional(),
    ipAllowlist: z.array(ipv4OrCidr()).max(100).nullable().optional(),
  })
  .meta({ id: 'GenerateApiKeyInput' });

export const agentKeyParams = z.object({ id: z.uuid(), keyId: z.uuid() });

export type RegisterAgentInput = z.infer<typeof registerAgentInput>;
export type UpdateAgentInput = z.infer<typeof updateAgentInput>;
export type ListAgentsQuery = z.infer<typeof listAgentsQuery>;
export type BudgetInput = z.infer<typeof budgetInput>;

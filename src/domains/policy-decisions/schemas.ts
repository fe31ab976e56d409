/** The decision log's and the stats' inputs and answers (docs/decisions.md, "Decision log and policy stats"). */
import { z } from 'zod';
import { isoDateTimeOut } from '../../http/envelope.js';
import { environmentEnum, isoDateTime, pagination } from '../../http/validation.js';
import { policyViolationSchema } from '../policies/index.js';

/** The decisions the log stores (allow decisions are only counted). */
export const LOGGED_DECISIONS = ['deny', 'require_approval'] as const;

/** Longest stats window: 30 days, as the spec bounds other `hours` windows (1-720). */
export const MAX_STATS_HOURS = 720;

export const policyDecisionSchema = z
  .object({
    decisionId: z.uuid().describe('The decisionId of the enforce response'),
    organizationId: z.uuid(),
    agentId: z.uuid(),
    environment: environmentEnum,
    action: z.object({
      type: z.string().describe('tool_call, llm_call, data_access, api_call, message or custom'),
      name: z.string(),
      resource: z.string().nullable(),
    }),
    decision: z.enum(LOGGED_DECISIONS),
    violations: z.array(policyViolationSchema).describe('The blocking matches, with their codes and evidence offsets (never the matched text)'),
    warnings: z.array(policyViolationSchema).describe('The warn and monitor matches of the same decision'),
    evaluatedPolicies: z.number().int(),
    evaluationMs: z.number(),
    accessGrantId: z.uuid().nullable().describe('The pending access grant created for require_approval'),
    sessionId: z.string().nullable(),
    traceId: z.string().nullable(),
    userId: z.string().nullable(),
    createdAt: isoDateTimeOut().describe('When the decision was made'),
  })
  .meta({ id: 'PolicyDecision' });
export type PolicyDecision = z.infer<typeof policyDecisionSchema>;

export const listDecisionsQuery = z.object({
  ...pagination,
  agentId: z.uuid().optional(),
  policyId: z.uuid().optional().describe('Decisions where this policy produced a violation'),
  decision: z.enum(LOGGED_DECISIONS).optional().describe('Only deny and require_approval decisions are recorded'),
  from: isoDateTime().optional().describe('Decisions at or after this instant'),
  to: isoDateTime().optional().describe('Decisions at or before this instant'),
});
export type ListDecisionsQuery = z.infer<typeof listDecisionsQuery>;

export const decisionParams = z.object({ decisionId: z.uuid() });

export const statsQuery = z.object({
  hours: z.coerce.number().int().min(1).max(MAX_STATS_HOURS).default(24),
  agentId: z.uuid().optional(),
});
export type StatsQuery = z.infer<typeof statsQuery>;

const counts = {
  allow: z.number().int().describe('Evaluated without a match'),
  deny: z.number().int().describe('Produced a blocking violation'),
  requireApproval: z.number().int().describe('Produced a require_approval violation'),
  warn: z.number().int().describe('Produced a warn or monitor warning'),
};

export const policyStatsSchema = z
  .object({
    hours: z.number().int(),
    from: isoDateTimeOut().describe('Start of the first hourly bucket counted'),
    to: isoDateTimeOut().describe('Now'),
    policies: z.array(
      z.object({
        policyId: z.uuid(),
        policyName: z.string().nullable().describe('The current name; null when the policy was deleted'),
        ...counts,
      }),
    ).describe('Each policy with any count in the window, most evaluations first'),
    totals: z.object(counts).describe('Sums over the policies (policy outcomes, not decisions: one decision evaluating five policies counts five)'),
  })
  .meta({ id: 'PolicyStats' });
export type PolicyStats = z.infer<typeof policyStatsSchema>;

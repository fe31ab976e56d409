/**
 * The body and the answer of `POST /policies/enforce` (contract.md, "Policies and enforcement").
 * Every string, number and object is bounded (src/http/validation.ts); `input` and `output` may be
 * a string of up to MAX_PAYLOAD_CHARS or a bounded JSON object: the detectors read within their own
 * caps beyond that (docs/decisions.md, "Policy detectors" and "Enforcement engine").
 */
import { z } from 'zod';
import { environmentEnum, jsonObject, str } from '../../http/validation.js';

/** Characters of a string `input` or `output` (about 1 MB of text). */
export const MAX_PAYLOAD_CHARS = 1_048_576;

/**
 * Body limit of the enforce and test routes: the largest body the schema admits, `input` and
 * `output` both at MAX_PAYLOAD_CHARS of characters JSON writes as 6-byte escapes, plus 64 KiB for
 * the rest (the app-wide BODY_LIMIT_BYTES would refuse a valid 1 MB input with 413).
 */
export const ENFORCE_BODY_LIMIT_BYTES = 2 * MAX_PAYLOAD_CHARS * 6 + 64 * 1024;

export const ACTION_TYPES = ['tool_call', 'llm_call', 'data_access', 'api_call', 'message', 'custom'] as const;
export const DECISIONS = ['allow', 'deny', 'require_approval'] as const;

const payload = z.union([str(0, MAX_PAYLOAD_CHARS), jsonObject()]);

export const enforceAction = z.object({
  type: z.enum(ACTION_TYPES),
  name: str(1, 255).describe('The tool, model, endpoint or operation name (matched by action globs)'),
  resource: str(0, 2048).optional().describe('What the action touches (a table, URL, path); matched by resource globs'),
  parameters: jsonObject().optional().describe('The action arguments; with bindParameters a grant covers exactly these'),
});

export const enforceRequestSchema = z
  .object({
    agentId: str(1, 255).describe("The agent's uuid or its external agentId"),
    environment: environmentEnum.optional().describe("Defaults to the agent's environment"),
    action: enforceAction,
    input: payload.optional(),
    output: payload.optional(),
    modelName: str(0, 255).optional(),
    estimatedCostUsd: z.number().min(0).max(1e9).optional(),
    tokens: z.number().int().min(0).max(1e12).optional().describe("The request's expected total tokens"),
    sessionId: str(0, 255).optional(),
    userId: str(0, 255).optional(),
    traceId: str(0, 255).optional(),
    metadata: jsonObject().optional(),
  })
  .meta({ id: 'EnforceRequest' });
export type EnforceRequest = z.infer<typeof enforceRequestSchema>;

export const violationEvidence = z.object({
  path: z.string().describe('Dotted path of the field, e.g. `input.customer.card`'),
  start: z.number().int().describe('Offset (UTF-16 code units) where the match starts'),
  end: z.number().int().describe('Offset where the match ends (exclusive)'),
  score: z.number().describe('Confidence 0..1'),
});

export const policyViolationSchema = z
  .object({
    policyId: z.uuid().nullable().describe('Null for the kill switch'),
    policyName: z.string(),
    policyType: z.string().describe('A built-in policy type, or `kill_switch`'),
    code: z.string().describe('Stable code, e.g. `pii.credit_card`, `access.denied_action`, `agent.paused`'),
    message: z.string(),
    enforcementMode: z.enum(['block', 'warn', 'monitor', 'require_approval']),
    evidence: violationEvidence.optional().describe('Where the match is; never the matched text'),
  })
  .meta({ id: 'PolicyViolation' });
export type PolicyViolation = z.infer<typeof policyViolationSchema>;

export const enforceDecisionSchema = z
  .object({
    decision: z.enum(DECISIONS),
    allowed: z.boolean(),
    violations: z.array(policyViolationSchema).describe('Blocking matches (mode block, or require_approval)'),
    warnings: z.array(policyViolationSchema).describe('warn and monitor matches'),
    evaluatedPolicies: z.number().int(),
    decisionId: z.uuid(),
    evaluationMs: z.number(),
    accessGrantId: z.uuid().optional().describe('The pending access grant created for require_approval'),
  })
  .meta({ id: 'EnforceDecision' });
export type EnforceDecision = z.infer<typeof enforceDecisionSchema>;

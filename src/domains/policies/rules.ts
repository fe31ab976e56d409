/**
 * `ruleDefinition` per `policyType`: the shapes of contract.md ("Policies and enforcement"), strict
 * (unknown keys refused), every string and array bounded, regexes and globs checked when the policy
 * is saved (regex-safety.ts, glob.ts). Extensions and bounds are listed in docs/decisions.md
 * ("Policy detectors").
 */
import { z } from 'zod';
import { checkedString } from '../../http/validation.js';
import { globInput } from './glob.js';
import { MAX_PATTERN_LENGTH, regexProblem } from './regex-safety.js';

export const POLICY_TYPES = [
  'access_control',
  'data_restriction',
  'action_approval',
  'cost_limit',
  'quality_threshold',
  'budget_cap',
  'injection_scan',
  'output_classifier',
  'custom',
] as const;
export type PolicyType = (typeof POLICY_TYPES)[number];

export const PII_KINDS = ['email', 'phone', 'credit_card', 'ssn', 'iban', 'ip_address', 'api_key', 'jwt'] as const;
export type PiiKind = (typeof PII_KINDS)[number];

export const OUTPUT_CATEGORIES = ['pii', 'secrets', 'profanity', 'code', 'url', 'injection'] as const;
export type OutputCategory = (typeof OUTPUT_CATEGORIES)[number];

export const SCOPES = ['input', 'output', 'both'] as const;
export const QUALITY_METRICS = ['error_rate', 'p95_duration_ms'] as const;

const MAX_GLOBS = 100;
const MAX_PATTERNS = 20;

const glob = globInput();
const globs = z.array(glob).max(MAX_GLOBS);
const pattern = checkedString(MAX_PATTERN_LENGTH, regexProblem, 'pattern');

const accessControl = z
  .strictObject({
    allowActions: globs.optional(),
    denyActions: globs.optional(),
    allowResources: globs.optional(),
    denyResources: globs.optional(),
  })
  .refine((r) => Object.values(r).some((l) => l && l.length > 0), 'at least one of allowActions, denyActions, allowResources, denyResources must list a glob');

const dataRestriction = z
  .strictObject({
    detect: z.array(z.enum(PII_KINDS)).max(PII_KINDS.length),
    patterns: z.array(pattern).max(MAX_PATTERNS).optional(),
    scope: z.enum(SCOPES),
  })
  .refine((r) => r.detect.length > 0 || (r.patterns?.length ?? 0) > 0, { message: 'detect or patterns must name at least one detector', path: ['detect'] });

const actionApproval = z.strictObject({
  actions: z.array(glob).min(1).max(MAX_GLOBS),
  grantTtlSeconds: z.number().int().min(60).max(30 * 86_400).optional(),
  bindParameters: z.boolean().optional(),
});

const costLimit = z.strictObject({
  maxCostUsdPerRequest: z.number().positive().max(1e6).optional(),
  maxTokensPerRequest: z.number().int().positive().max(1e9).optional(),
});

const qualityThreshold = z
  .strictObject({
    metric: z.enum(QUALITY_METRICS),
    max: z.number().min(0).max(86_400_000),
    windowMinutes: z.number().int().min(1).max(7 * 24 * 60),
  })
  .refine((r) => r.metric !== 'error_rate' || r.max <= 1, { message: 'an error_rate is a fraction between 0 and 1', path: ['max'] });

const budgetCap = z.strictObject({ maxMonthlyCostUsd: z.number().positive().max(1e12) });

const injectionScan = z.strictObject({ threshold: z.number().min(0).max(1), scope: z.enum(SCOPES) });

const outputClassifier = z
  .strictObject({
    categories: z.array(z.enum(OUTPUT_CATEGORIES)).min(1).max(OUTPUT_CATEGORIES.length),
    blockOn: z.array(z.enum(OUTPUT_CATEGORIES)).max(OUTPUT_CATEGORIES.length).default([]),
  })
  .superRefine((r, ctx) => {
    r.blockOn.forEach((c, i) => {
      if (!r.categories.includes(c)) ctx.addIssue({ code: 'custom', message: `${c} is not one of categories`, path: ['blockOn', i] });
    });
  });

/** CEL is compiled by the policies service (issue 8); here only its size is checked. */
const customExpression = z.strictObject({ expression: z.string().min(1).max(4096) });
const customValidator = z.strictObject({
  validatorUrl: z.url({ protocol: /^https?$/ }).max(500),
  timeoutMs: z.number().int().min(10).max(10_000),
  failurePolicy: z.enum(['fail', 'ignore']),
});
const custom = z.union([customExpression, customValidator]);

export const ruleSchemas = {
  access_control: accessControl,
  data_restriction: dataRestriction,
  action_approval: actionApproval,
  cost_limit: costLimit,
  quality_threshold: qualityThreshold,
  budget_cap: budgetCap,
  injection_scan: injectionScan,
  output_classifier: outputClassifier,
  custom,
} as const satisfies Record<PolicyType, z.ZodType>;

export type RuleDefinition<T extends PolicyType = PolicyType> = z.output<(typeof ruleSchemas)[T]>;

export type ParseResult<T extends PolicyType> = { ok: true; rule: RuleDefinition<T> } | { ok: false; fields: Record<string, string> };

/**
 * Parses `value` as the ruleDefinition of `type`; on failure answers the fields in the shape of a
 * VALIDATION_ERROR (`{ 'ruleDefinition.detect.0': message }`), one message per path.
 */
export function parseRuleDefinition<T extends PolicyType>(type: T, value: unknown, prefix = 'ruleDefinition'): ParseResult<T> {
  const schema = ruleSchemas[type] as unknown as z.ZodType<RuleDefinition<T>> | undefined;
  if (!schema) return { ok: false, fields: { policyType: `must be one of ${POLICY_TYPES.join(', ')}` } };
  const parsed = schema.safeParse(value);
  if (parsed.success) return { ok: true, rule: parsed.data };
  const fields: Record<string, string> = {};
  for (const issue of flatIssues(parsed.error.issues)) {
    const key = [prefix, ...issue.path.map(String)].join('.');
    fields[key] ??= issue.message;
  }
  return { ok: false, fields };
}

/** A union's failure is reported through the branch that got furthest (its deepest issue). */
function flatIssues(issues: z.core.$ZodIssue[]): { path: PropertyKey[]; message: string }[] {
  return issues.flatMap((i) => {
    if (i.code === 'invalid_union' && i.errors.length > 0) {
      const branches = i.errors.map((b) => flatIssues(b).map((x) => ({ ...x, path: [...i.path, ...x.path] })));
      const unrecognized = (b: { message: string }[]) => b.some((x) => x.message === 'is not a known field');
      const best = branches.filter((b) => !unrecognized(b)).sort((a, b) => a.length - b.length)[0] ?? branches[0];
      return best;
    }
    if (i.code === 'unrecognized_keys') return i.keys.map((k) => ({ path: [...i.path, k], message: 'is not a known field' }));
    return [{ path: i.path, message: i.message }];
  });
}

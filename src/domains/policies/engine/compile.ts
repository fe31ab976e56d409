/**
 * Compiles a policy once per version (id + updatedAt): its ruleDefinition parsed (rules.ts), globs,
 * regexes, detectors and CEL programs built, scope turned into sets, and one `evaluate` function
 * that answers the policy's matches for a request. `evaluate` answers synchronously unless the
 * policy needs I/O (quality aggregates, access grants, validators), so a decision without such
 * policies never awaits (docs/decisions.md, "Enforcement engine").
 */
import { LRUCache } from 'lru-cache';
import { compileGlob, matchesAny, type Glob } from '../glob.js';
import { compileOutputClassifier, blocking } from '../detectors/output-classifier.js';
import { compilePiiDetector } from '../detectors/pii.js';
import type { Finding } from '../detectors/types.js';
import { parseRuleDefinition, type RuleDefinition } from '../rules.js';
import { piiKindIndex, type RequestScope, type Root } from './request-scope.js';
import { cel, celEvaluationError } from './cel.js';
import type { EngineContext, EngineReport, Match, MaybePromise, PolicyDefinition } from './types.js';
import { askValidator } from './validator.js';

export interface CompiledPolicy {
  readonly def: PolicyDefinition;
  readonly agents: ReadonlySet<string> | null;
  readonly environments: ReadonlySet<string> | null;
  /** Why the ruleDefinition did not parse or compile (the policy then never matches and reports policy_error), or null. */
  readonly problem: string | null;
  /** The policy's matches for this request (empty: no match); events and errors are appended to `report`. */
  evaluate(scope: RequestScope, ctx: EngineContext, report: EngineReport): MaybePromise<Match[]>;
}

type Evaluate = CompiledPolicy['evaluate'];
const NONE: Match[] = [];

const roots = (scope: 'input' | 'output' | 'both'): Root[] => (scope === 'both' ? ['input', 'output'] : [scope]);
const evidence = (f: Pick<Finding, 'path' | 'start' | 'end' | 'score'>) => ({ path: f.path, start: f.start, end: f.end, score: f.score });

const firstLine = (err: unknown) => String((err as Error)?.message ?? err).split('\n')[0].slice(0, 300);

function accessControl(r: RuleDefinition<'access_control'>): Evaluate {
  const g = (l?: string[]) => (l && l.length > 0 ? l.map(compileGlob) : null);
  const [allowA, denyA, allowR, denyR] = [g(r.allowActions), g(r.denyActions), g(r.allowResources), g(r.denyResources)];
  const m = (code: string, message: string): Match[] => [{ code, message }];
  return (s) => {
    const { name, resource } = s.request.action;
    if (denyA && matchesAny(denyA, name)) return m('access.denied_action', `Action "${name}" is denied`);
    if (denyR && resource !== undefined && matchesAny(denyR, resource)) return m('access.denied_resource', 'The resource is denied');
    if (allowA && !matchesAny(allowA, name)) return m('access.action_not_allowed', `Action "${name}" is not in the allowed actions`);
    if (allowR && resource !== undefined && !matchesAny(allowR, resource)) return m('access.resource_not_allowed', 'The resource is not in the allowed resources');
    return NONE;
  };
}

function dataRestriction(r: RuleDefinition<'data_restriction'>): Evaluate {
  const custom = r.patterns?.length ? compilePiiDetector({ detect: [], patterns: r.patterns }) : null;
  // What the scan-cache entry keeps its first finding under: the patterns themselves, so a recompiled
  // policy (a change of another field, a dry run) finds what the same patterns found.
  const customKey = custom ? JSON.stringify(r.patterns) : '';
  const where = roots(r.scope);
  const kinds = r.detect;
  const indexes = kinds.map(piiKindIndex);
  return (s) => {
    // Indexed loops: this runs for every data_restriction policy of every decision (no iterator objects).
    for (let w = 0; w < where.length; w++) {
      const root = where[w];
      for (let k = 0; k < indexes.length; k++) {
        const f = s.firstPii(indexes[k], root);
        if (f) return [{ code: f.code, message: `Detected ${kinds[k]} in ${f.path}`, evidence: evidence(f) }];
      }
      if (custom) {
        const f = s.firstCustom(custom, customKey, root);
        if (f) return [{ code: 'pii.custom', message: `Matched custom pattern ${f.pattern ?? 0} in ${f.path}`, evidence: evidence(f) }];
      }
    }
    return NONE;
  };
}

function actionApproval(r: RuleDefinition<'action_approval'>, def: PolicyDefinition): Evaluate {
  const actions: Glob[] = r.actions.map(compileGlob);
  return (s, ctx) => {
    const { name, resource } = s.request.action;
    if (!matchesAny(actions, name)) return NONE;
    const query = { agentId: s.agent.id, policyId: def.id, action: name, resource: resource ?? null, parametersDigest: r.bindParameters ? s.parametersDigest() : null };
    const answer = (live: boolean): Match[] =>
      live
        ? NONE
        : [{ code: 'approval.required', message: `Action "${name}" requires an approved access grant`, approval: { ...query, policyVersion: def.updatedAt, ttlSeconds: r.grantTtlSeconds ?? null } }];
    const live = ctx.liveGrant(query);
    return live instanceof Promise ? live.then(answer) : answer(live);
  };
}

function costLimit(r: RuleDefinition<'cost_limit'>, def: PolicyDefinition): Evaluate {
  // With neither threshold the policy matches every request in scope: a plain rate limit through maxRequests.
  const every = r.maxCostUsdPerRequest === undefined && r.maxTokensPerRequest === undefined && def.maxRequests !== null;
  return (s) => {
    const { estimatedCostUsd, tokens } = s.request;
    if (r.maxCostUsdPerRequest !== undefined && (estimatedCostUsd ?? 0) > r.maxCostUsdPerRequest)
      return [{ code: 'cost.per_request_exceeded', message: `Estimated cost ${estimatedCostUsd} USD is above ${r.maxCostUsdPerRequest} USD per request` }];
    if (r.maxTokensPerRequest !== undefined && (tokens ?? 0) > r.maxTokensPerRequest)
      return [{ code: 'cost.tokens_exceeded', message: `${tokens} tokens is above ${r.maxTokensPerRequest} per request` }];
    return every ? [{ code: 'cost.rate', message: 'Request counted against the policy limit' }] : NONE;
  };
}

function budgetCap(r: RuleDefinition<'budget_cap'>): Evaluate {
  const answer = (spent: number, estimate: number): Match[] => {
    const after = spent + estimate;
    // The budget is spent once the month-to-date reaches it: the next request is denied even with no estimate.
    if (spent >= r.maxMonthlyCostUsd || after > r.maxMonthlyCostUsd)
      return [{ code: 'budget.exceeded', message: `Month-to-date spend ${spent.toFixed(4)} USD plus the estimate exceeds the budget of ${r.maxMonthlyCostUsd} USD` }];
    return NONE;
  };
  return (s, ctx) => {
    const estimate = s.request.estimatedCostUsd ?? 0;
    // The spend the database holds now, not the agent's (possibly cached) copy.
    const spent = ctx.monthSpend(s.agent.id);
    // A closure only on the asynchronous path: the synchronous one allocates nothing.
    return spent instanceof Promise ? spent.then((v) => answer(v, estimate)) : answer(spent, estimate);
  };
}

function qualityThreshold(r: RuleDefinition<'quality_threshold'>): Evaluate {
  const answer = (v: number | null): Match[] =>
    v !== null && v > r.max ? [{ code: `quality.${r.metric}_exceeded`, message: `${r.metric} over the last ${r.windowMinutes} minutes is ${v}, above ${r.max}` }] : NONE;
  return (s, ctx) => {
    const v = ctx.qualityAggregate(s.agent.id, r.metric, r.windowMinutes);
    return v instanceof Promise ? v.then(answer) : answer(v);
  };
}

function injectionScan(r: RuleDefinition<'injection_scan'>): Evaluate {
  const where = roots(r.scope);
  return (s) => {
    for (const root of where) {
      if (s.request[root] === undefined) continue;
      const res = s.injection(root);
      if (res.top && res.score >= r.threshold)
        return [{ code: res.top.code, message: `Prompt injection score ${res.score.toFixed(3)} in ${root} (threshold ${r.threshold})`, evidence: { ...evidence(res.top), score: res.score } }];
    }
    return NONE;
  };
}

function outputClassifier(r: RuleDefinition<'output_classifier'>): Evaluate {
  const classifier = compileOutputClassifier(r.categories);
  const key = [...r.categories].sort().join(',');
  const blockOn = new Set(r.blockOn);
  return (s) => {
    if (s.request.output === undefined) return NONE;
    const res = s.classify(key, classifier);
    if (res.findings.length === 0) return NONE;
    const out: Match[] = [];
    const hit = blocking(res, r.blockOn)[0];
    if (hit) out.push({ code: hit.code, message: `Output contains ${hit.code.slice('output.'.length)} (${hit.kind ?? 'detector'}) in ${hit.path}`, evidence: evidence(hit) });
    for (const c of res.categories) {
      if (blockOn.has(c)) continue;
      const f = res.findings.find((x) => x.code === `output.${c}`)!;
      out.push({ code: f.code, message: `Output contains ${c} in ${f.path}`, evidence: evidence(f), note: true });
    }
    return out;
  };
}

function customExpression(expression: string, def: PolicyDefinition): Evaluate {
  const program = cel.parse(expression);
  return (s, _ctx, report) => {
    try {
      const v = program(s.cel());
      if (v === true) return [{ code: 'custom.expression', message: `Expression of policy "${def.name}" is true` }];
      if (v === false) return NONE;
      report.errors.push({ policyId: def.id, error: 'expression did not answer a boolean' });
    } catch (err) {
      // The library's message may quote request values: only the error's kind is reported.
      report.errors.push({ policyId: def.id, error: celEvaluationError(err) });
    }
    return NONE;
  };
}

function customValidator(r: { validatorUrl: string; timeoutMs: number; failurePolicy: 'fail' | 'ignore' }, def: PolicyDefinition): Evaluate {
  return async (s, ctx, { events }) => {
    const body = JSON.stringify({ policyId: def.id, request: s.request });
    events.push({ type: 'custom_validator_invoked', policyId: def.id, data: { validatorUrl: r.validatorUrl } });
    const out = await askValidator((url, text, ms) => ctx.callValidator(url, text, ms, def.id), r.validatorUrl, body, r.timeoutMs);
    if (out.ok) {
      if (out.allowed) return NONE;
      events.push({ type: 'custom_validator_denied', policyId: def.id, data: { validatorUrl: r.validatorUrl, message: out.message } });
      return [{ code: 'custom.validator_denied', message: out.message ?? 'Denied by the custom validator' }];
    }
    events.push({ type: 'custom_validator_failed', policyId: def.id, data: { validatorUrl: r.validatorUrl, reason: out.reason, failurePolicy: r.failurePolicy } });
    return r.failurePolicy === 'fail' ? [{ code: 'custom.validator_failed', message: `Custom validator failed (${out.reason})` }] : NONE;
  };
}

function evaluator(def: PolicyDefinition): Evaluate {
  const parsed = parseRuleDefinition(def.policyType, def.ruleDefinition);
  if (!parsed.ok) throw new Error(`invalid ruleDefinition: ${Object.entries(parsed.fields).map(([k, v]) => `${k} ${v}`).join('; ')}`);
  const rule = parsed.rule;
  switch (def.policyType) {
    case 'access_control':
      return accessControl(rule as RuleDefinition<'access_control'>);
    case 'data_restriction':
      return dataRestriction(rule as RuleDefinition<'data_restriction'>);
    case 'action_approval':
      return actionApproval(rule as RuleDefinition<'action_approval'>, def);
    case 'cost_limit':
      return costLimit(rule as RuleDefinition<'cost_limit'>, def);
    case 'budget_cap':
      return budgetCap(rule as RuleDefinition<'budget_cap'>);
    case 'quality_threshold':
      return qualityThreshold(rule as RuleDefinition<'quality_threshold'>);
    case 'injection_scan':
      return injectionScan(rule as RuleDefinition<'injection_scan'>);
    case 'output_classifier':
      return outputClassifier(rule as RuleDefinition<'output_classifier'>);
    case 'custom': {
      const c = rule as RuleDefinition<'custom'>;
      return 'expression' in c ? customExpression(c.expression, def) : customValidator(c, def);
    }
  }
}

/** Compiles one policy (see the file comment); a rule that does not compile gives a policy that reports policy_error and never matches. */
export function compilePolicy(def: PolicyDefinition): CompiledPolicy {
  let evaluate: Evaluate;
  let problem: string | null = null;
  try {
    evaluate = evaluator(def);
  } catch (err) {
    // A compile error quotes the definition (the author's own text), never a request.
    problem = firstLine(err);
    const error = { policyId: def.id, error: problem };
    evaluate = (_s, _c, report) => (report.errors.push(error), NONE);
  }
  return {
    def,
    agents: def.appliesToAgents.length > 0 ? new Set(def.appliesToAgents) : null,
    environments: def.appliesToEnvironments.length > 0 ? new Set(def.appliesToEnvironments) : null,
    problem,
    evaluate,
  };
}

/**
 * Compiled policies by their whole definition: two saves within one millisecond share an updatedAt
 * (src/domains/policies/cache.ts compares content for the same reason), so `id@updatedAt` could
 * serve the older compile. Keyed once per policy per snapshot version, never per request.
 */
const memo = new LRUCache<string, CompiledPolicy>({ max: 10_000 });

/** compilePolicy, memoized by the definition's content. */
export function compileCached(def: PolicyDefinition): CompiledPolicy {
  const key = JSON.stringify(def);
  let c = memo.get(key);
  if (!c) {
    c = compilePolicy(def);
    memo.set(key, c);
  }
  return c;
}

/** Every policy compiled (memoized) and sorted by ascending priority, then id for a stable order. */
export function compileAll(defs: readonly PolicyDefinition[]): CompiledPolicy[] {
  return defs.map(compileCached).sort((a, b) => a.def.priority - b.def.priority || (a.def.id < b.def.id ? -1 : a.def.id > b.def.id ? 1 : 0));
}

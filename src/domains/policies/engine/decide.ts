/**
 * The decision of `POST /policies/enforce` (contract.md, "Policies and enforcement"): the agent's
 * status first (kill switch), then every active policy in scope by ascending priority. Block
 * matches are violations (deny), warn and monitor matches warnings, an action_approval without a
 * live grant a require_approval violation with the grant for the route to create. A policy with
 * maxRequests and timeWindowSeconds may match that many times per window and agent; the match
 * beyond is the violation (`limit.exceeded`). The loop runs synchronously and only turns
 * asynchronous at the first policy whose answer is a promise (docs/decisions.md, "Enforcement engine").
 */
import type { EnforceRequest, PolicyViolation } from '../enforce-schemas.js';
import type { CompiledPolicy } from './compile.js';
import { RequestScope } from './request-scope.js';
import type { AccessGrantRequest, Decision, EngineContext, EngineEvent, EngineReport, Match, MaybePromise, PolicyError } from './types.js';

/** pausedBy of a pause by budget enforcement (src/domains/agents/accrual.ts). */
export const BUDGET_PAUSER = 'system:budget';

/** One decision in progress: what the policies share (scope, context) and what they add up to. */
interface State extends EngineReport {
  readonly policies: readonly CompiledPolicy[];
  readonly scope: RequestScope;
  readonly ctx: EngineContext;
  readonly environment: string;
  violations: PolicyViolation[];
  warnings: PolicyViolation[];
  events: EngineEvent[];
  errors: PolicyError[];
  approvals: AccessGrantRequest[];
  /** Ids of the policies evaluated so far: `shared` while they are its first `count`, else a list of this decision's own. */
  evaluated: string[] | null;
  shared: readonly string[] | null;
  count: number;
}

/**
 * Per compiled list (the route keeps one per organization and policy snapshot), the ids of its active
 * policies when none is scoped to agents or environments (null otherwise): every decision over it
 * then evaluates exactly those, in that order, and answers this one frozen list rather than building
 * its own of ~50 ids. `run` checks each id against it as it goes and falls back to its own list on
 * the first difference (a list changed in place), so the answer is the ids evaluated in any case.
 */
const UNSCOPED = new WeakMap<readonly CompiledPolicy[], readonly string[] | null>();

function unscopedIds(policies: readonly CompiledPolicy[]): readonly string[] | null {
  let ids = UNSCOPED.get(policies);
  if (ids === undefined) {
    ids = policies.every((p) => p.def.agentId === null && !p.agents && !p.environments) ? Object.freeze(policies.filter((p) => p.def.isActive).map((p) => p.def.id)) : null;
    UNSCOPED.set(policies, ids);
  }
  return ids;
}

/** Notes policy `id` as evaluated. */
function evaluated(st: State, id: string): void {
  const n = st.count++;
  if (st.evaluated) st.evaluated.push(id);
  else if (st.shared![n] !== id) {
    st.evaluated = st.shared!.slice(0, n);
    st.evaluated.push(id);
  }
}

const KILL_SWITCH = { policyId: null, policyName: 'Kill switch', policyType: 'kill_switch', enforcementMode: 'block' as const };

function killSwitch(ctx: EngineContext): Decision | null {
  const { agent } = ctx;
  if (agent.status !== 'paused' && agent.status !== 'archived') return null;
  const code = agent.status === 'archived' ? 'agent.archived' : agent.pausedBy === BUDGET_PAUSER ? 'budget.exceeded' : 'agent.paused';
  const message =
    code === 'agent.archived' ? 'The agent is archived' : code === 'budget.exceeded' ? `The agent was paused by its budget: ${agent.pauseReason ?? 'monthly budget reached'}` : `The agent is paused${agent.pauseReason ? `: ${agent.pauseReason}` : ''}`;
  const v: PolicyViolation = { ...KILL_SWITCH, code, message };
  return { decision: 'deny', allowed: false, violations: [v], warnings: [], evaluatedPolicies: 0, evaluatedPolicyIds: [], events: [{ type: 'policy_violated', policyId: null, data: { code } }], errors: [] };
}

/** Whether the policy applies to this agent and environment (contract.md: active, in scope). */
export function inScope(p: CompiledPolicy, agentId: string, environment: string): boolean {
  const d = p.def;
  return d.isActive && (d.agentId === null || d.agentId === agentId) && (!p.agents || p.agents.has(agentId)) && (!p.environments || p.environments.has(environment));
}

/**
 * Applies the window limit to a policy's enforced matches. Loops and functions at module level, no
 * closure per call but the continuation of an asynchronous count: a window policy such as a rate
 * limit matches on every request.
 */
function limit(p: CompiledPolicy, matches: Match[], st: State): MaybePromise<Match[]> {
  const { maxRequests, timeWindowSeconds, id } = p.def;
  if (matches.length === 0 || maxRequests === null || timeWindowSeconds === null || firstEnforced(matches) === undefined) return matches;
  const within = st.ctx.windowHit(id, timeWindowSeconds, maxRequests);
  return within instanceof Promise ? within.then((ok) => windowed(p, matches, ok, st)) : windowed(p, matches, within, st);
}

/** The first match that is not a note (undefined: none). */
function firstEnforced(matches: readonly Match[]): Match | undefined {
  for (let i = 0; i < matches.length; i++) if (!matches[i].note) return matches[i];
  return undefined;
}

/** The matches a window lets through: the notes only when within the limit, else limit.exceeded first (and its event). */
function windowed(p: CompiledPolicy, matches: readonly Match[], within: boolean, st: State): Match[] {
  const notes: Match[] = [];
  for (let i = 0; i < matches.length; i++) if (matches[i].note) notes.push(matches[i]);
  if (within) return notes;
  const { maxRequests, timeWindowSeconds, id, name } = p.def;
  st.events.push({ type: 'limit_exceeded', policyId: id, data: { maxRequests, timeWindowSeconds, code: firstEnforced(matches)!.code } });
  notes.unshift({ code: 'limit.exceeded', message: `Policy "${name}" matched more than ${maxRequests} times in ${timeWindowSeconds} seconds` });
  return notes;
}

/** A match as the answer lists it (the same keys in the same order, evidence only when there is some). */
function violation(p: CompiledPolicy, m: Match, enforcementMode: PolicyViolation['enforcementMode']): PolicyViolation {
  const d = p.def;
  return m.evidence
    ? { policyId: d.id, policyName: d.name, policyType: d.policyType, code: m.code, message: m.message, evidence: m.evidence, enforcementMode }
    : { policyId: d.id, policyName: d.name, policyType: d.policyType, code: m.code, message: m.message, enforcementMode };
}

function record(p: CompiledPolicy, matches: Match[], st: State): void {
  const d = p.def;
  for (let i = 0; i < matches.length; i++) {
    const m = matches[i];
    if (m.note) st.warnings.push(violation(p, m, 'monitor'));
    else if (d.enforcementMode !== 'block') st.warnings.push(violation(p, m, d.enforcementMode));
    else if (m.approval) {
      st.violations.push(violation(p, m, 'require_approval'));
      st.approvals.push(m.approval);
    } else {
      st.violations.push(violation(p, m, 'block'));
      st.events.push({ type: 'policy_violated', policyId: d.id, data: { code: m.code, severity: d.severity } });
    }
  }
}

function finish(st: State): Decision {
  const denied = st.violations.some((v) => v.enforcementMode === 'block');
  const decision = denied ? 'deny' : st.approvals.length > 0 ? 'require_approval' : 'allow';
  return {
    decision,
    allowed: decision === 'allow',
    violations: st.violations,
    warnings: st.warnings,
    evaluatedPolicies: st.count,
    evaluatedPolicyIds: st.evaluated ?? (st.count === st.shared!.length ? st.shared! : st.shared!.slice(0, st.count)),
    ...(decision === 'require_approval' ? { accessGrantRequest: st.approvals[0] } : {}),
    events: st.events,
    errors: st.errors,
  };
}

/**
 * The policies from index `from` on. Synchronous answers are recorded in the loop, without a
 * closure or a promise per policy (the hot path: docs/decisions.md, "Detector speed"); the first
 * promise (evaluation or window counter) hands the rest of the loop to its continuation.
 */
function run(st: State, from: number): MaybePromise<Decision> {
  const { policies, scope, ctx, environment } = st;
  const agentId = ctx.agent.id;
  for (let i = from; i < policies.length; i++) {
    const p = policies[i];
    if (!inScope(p, agentId, environment)) continue;
    evaluated(st, p.def.id);
    const out = p.evaluate(scope, ctx, st);
    if (out instanceof Promise) return out.then((m) => resume(st, p, i, limit(p, m, st)));
    if (out.length === 0) continue;
    const limited = limit(p, out, st);
    if (limited instanceof Promise) return resume(st, p, i, limited);
    record(p, limited, st);
  }
  return finish(st);
}

/** Records policy `i`'s matches once they are known, then runs the policies after it. */
function resume(st: State, p: CompiledPolicy, i: number, matches: MaybePromise<Match[]>): MaybePromise<Decision> {
  if (matches instanceof Promise) return matches.then((m) => resume(st, p, i, m));
  record(p, matches, st);
  return run(st, i + 1);
}

/**
 * Decides `request` against `policies` (compileAll's order). Answers synchronously when no policy
 * in scope needs I/O, else a promise; the route awaits either.
 */
export function decide(policies: readonly CompiledPolicy[], request: EnforceRequest, ctx: EngineContext): MaybePromise<Decision> {
  const killed = killSwitch(ctx);
  if (killed) return killed;
  const shared = unscopedIds(policies);
  const st: State = {
    policies,
    scope: new RequestScope(request, ctx.agent),
    ctx,
    environment: request.environment ?? ctx.agent.environment,
    violations: [],
    warnings: [],
    events: [],
    errors: [],
    approvals: [],
    evaluated: shared ? null : [],
    shared,
    count: 0,
  };
  return run(st, 0);
}

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
import type { AccessGrantRequest, Decision, EngineContext, EngineEvent, Match, MaybePromise } from './types.js';

/** pausedBy of a pause by budget enforcement (src/domains/agents/accrual.ts). */
export const BUDGET_PAUSER = 'system:budget';

interface State {
  violations: PolicyViolation[];
  warnings: PolicyViolation[];
  events: EngineEvent[];
  approvals: AccessGrantRequest[];
  evaluated: string[];
}

const KILL_SWITCH = { policyId: null, policyName: 'Kill switch', policyType: 'kill_switch', enforcementMode: 'block' as const };

function killSwitch(ctx: EngineContext): Decision | null {
  const { agent } = ctx;
  if (agent.status !== 'paused' && agent.status !== 'archived') return null;
  const code = agent.status === 'archived' ? 'agent.archived' : agent.pausedBy === BUDGET_PAUSER ? 'budget.exceeded' : 'agent.paused';
  const message =
    code === 'agent.archived' ? 'The agent is archived' : code === 'budget.exceeded' ? `The agent was paused by its budget: ${agent.pauseReason ?? 'monthly budget reached'}` : `The agent is paused${agent.pauseReason ? `: ${agent.pauseReason}` : ''}`;
  const v: PolicyViolation = { ...KILL_SWITCH, code, message };
  return { decision: 'deny', allowed: false, violations: [v], warnings: [], evaluatedPolicies: 0, evaluatedPolicyIds: [], events: [{ type: 'policy_violated', policyId: null, data: { code } }] };
}

/** Whether the policy applies to this agent and environment (contract.md: active, in scope). */
export function inScope(p: CompiledPolicy, agentId: string, environment: string): boolean {
  const d = p.def;
  return d.isActive && (d.agentId === null || d.agentId === agentId) && (!p.agents || p.agents.has(agentId)) && (!p.environments || p.environments.has(environment));
}

const then = <T, U>(x: MaybePromise<T>, f: (v: T) => MaybePromise<U>): MaybePromise<U> => (x instanceof Promise ? x.then(f) : f(x));

/** Applies the window limit to a policy's enforced matches. */
function limit(p: CompiledPolicy, matches: Match[], ctx: EngineContext, st: State): MaybePromise<Match[]> {
  const { maxRequests, timeWindowSeconds, id } = p.def;
  if (maxRequests === null || timeWindowSeconds === null || !matches.some((m) => !m.note)) return matches;
  const notes = matches.filter((m) => m.note);
  return then(ctx.windowHit(`policy:${id}:agent:${ctx.agent.id}`, timeWindowSeconds, maxRequests), (within) => {
    if (within) return notes;
    st.events.push({ type: 'limit_exceeded', policyId: id, data: { maxRequests, timeWindowSeconds, code: matches.find((m) => !m.note)!.code } });
    return [{ code: 'limit.exceeded', message: `Policy "${p.def.name}" matched more than ${maxRequests} times in ${timeWindowSeconds} seconds` }, ...notes];
  });
}

function record(p: CompiledPolicy, matches: Match[], st: State): void {
  const d = p.def;
  for (const m of matches) {
    const base = { policyId: d.id, policyName: d.name, policyType: d.policyType, code: m.code, message: m.message, ...(m.evidence ? { evidence: m.evidence } : {}) };
    if (m.note) st.warnings.push({ ...base, enforcementMode: 'monitor' });
    else if (d.enforcementMode !== 'block') st.warnings.push({ ...base, enforcementMode: d.enforcementMode });
    else if (m.approval) {
      st.violations.push({ ...base, enforcementMode: 'require_approval' });
      st.approvals.push(m.approval);
    } else {
      st.violations.push({ ...base, enforcementMode: 'block' });
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
    evaluatedPolicies: st.evaluated.length,
    evaluatedPolicyIds: st.evaluated,
    ...(decision === 'require_approval' ? { accessGrantRequest: st.approvals[0] } : {}),
    events: st.events,
  };
}

/**
 * Decides `request` against `policies` (compileAll's order). Answers synchronously when no policy
 * in scope needs I/O, else a promise; the route awaits either.
 */
export function decide(policies: readonly CompiledPolicy[], request: EnforceRequest, ctx: EngineContext): MaybePromise<Decision> {
  const killed = killSwitch(ctx);
  if (killed) return killed;
  const environment = request.environment ?? ctx.agent.environment;
  const scope = new RequestScope(request, ctx.agent);
  const st: State = { violations: [], warnings: [], events: [], approvals: [], evaluated: [] };

  const run = (from: number): MaybePromise<Decision> => {
    for (let i = from; i < policies.length; i++) {
      const p = policies[i];
      if (!inScope(p, ctx.agent.id, environment)) continue;
      st.evaluated.push(p.def.id);
      const out = then(p.evaluate(scope, ctx, st.events), (matches) => (matches.length === 0 ? matches : limit(p, matches, ctx, st)));
      if (out instanceof Promise) return out.then((m) => (record(p, m, st), run(i + 1)));
      record(p, out, st);
    }
    return finish(st);
  };
  return run(0);
}

/**
 * The enforce route's service (docs/decisions.md, "Enforce route"). Stages of one decision:
 *  1. the agent (agent cache, invalidated after every write to it) and the organization's active
 *     policies (cached snapshot), in parallel; budget_cap reads the month-to-date spend from the spend counter ingestion moves;
 *  2. the compiled policies, memoized per organization by the snapshot's version;
 *  3. `decide` with the context: the injected clock, windows on the shared state, live grants,
 *     cached quality aggregates, signed validator calls through the outbound guard;
 *  4. for require_approval, the pending access grant (one per agent, action, resource, digest);
 *  5. the decision handed to the decision log (sync, no I/O) and answered with its timings.
 * Nothing here awaits what is synchronous: a decision over policies without I/O is a plain value.
 */
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { LRUCache } from 'lru-cache';
import type { Config } from '../../config.js';
import type { Clock } from '../../core/clock.js';
import { notFound } from '../../core/errors.js';
import type { Db } from '../../db/client.js';
import { LookupCache } from '../../lib/lookup-cache.js';
import { memoryState, type MaybePromise, type SharedState } from '../../lib/shared-state.js';
import type { EnforcementAgent } from '../agents/index.js';
import { findLiveGrant, requestGrant } from '../access-grants/index.js';
import type { DecisionRecordInput } from '../policy-decisions/index.js';
import { qualityAggregate, type QualityMetric } from '../traces/index.js';
import type { PolicySnapshot } from './cache.js';
import type { EnforceDecision, EnforceRequest } from './enforce-schemas.js';
import { compileAll, compilePolicy, createHttpValidator, decide, inScope, type CompiledPolicy, type Decision, type EngineContext, type GrantQuery, type ValidatorAnswer } from './engine/index.js';
import { validatorSecretOf } from './service.js';
import { newValidatorSecret, signValidatorCall } from './validator-signing.js';

/** How long a quality aggregate is served before it is computed again. */
export const QUALITY_TTL_MS = 30_000;
/** Aggregates kept (organization × agent × metric × window). */
const QUALITY_MAX = 50_000;
/** A policy that cannot be evaluated is logged at most once per this long per instance, not per request. */
const POLICY_ERROR_LOG_EVERY_MS = 60_000;
/** Organizations whose compiled policies are kept (as many as the policy cache keeps). */
const COMPILED_MAX = 10_000;

/** Who asks: the organization and, for an agent-scoped key, its one agent. */
export interface Enforcer {
  organizationId: string;
  /** The principal's id (user or key): the requester of a pending grant. */
  userId: string;
  /** Set for an agent-scoped key: it may enforce only for this agent. */
  agentId?: string;
}

export interface EnforceOutcome {
  decision: EnforceDecision;
  /** The `Server-Timing` header value: agent load, policy evaluation, grant, total (ms). */
  serverTiming: string;
}

export interface EnforceServiceDeps {
  db: Db;
  state: SharedState;
  clock: Clock;
  config: Pick<Config, 'allowPrivateTargets'>;
  /** The organization's active policies (at once when cached). */
  snapshot(orgId: string): MaybePromise<PolicySnapshot>;
  /** The agent a request names (uuid or external agentId), from the agents module's cache (at once when cached); null when unknown. */
  agent(orgId: string, idOrExternal: string): MaybePromise<EnforcementAgent | null>;
  /** The agent's month-to-date spend as of every trace ingested so far (budget_cap; the agents module's spend counter; at once on the in-process state). */
  monthSpend(orgId: string, agentId: string): MaybePromise<number>;
  record(input: DecisionRecordInput): void;
  /** Where policy errors are reported (the app's logger). */
  log: { warn(obj: object, msg: string): void };
}

/** What a dry run changes in the context: a one-off validator secret and a throwaway window state. */
interface DryRunContext {
  secret: string;
  state: SharedState;
}
const ms = (x: number) => Math.round(x * 1000) / 1000;

/** Whether one of `policies` applies to the agent in the environment (a plain loop: no closure per request). */
function anyInScope(policies: readonly CompiledPolicy[], agentId: string, environment: string): boolean {
  for (let i = 0; i < policies.length; i++) if (inScope(policies[i], agentId, environment)) return true;
  return false;
}

/** Builds the enforce and dry-run functions over their dependencies (one per app). */
export function createEnforceService(deps: EnforceServiceDeps) {
  const { db, state, clock } = deps;

  // Compiled policies per organization, rebuilt only when the snapshot's version moves.
  // `budgetCaps`: the budget_cap policies, so that a decision one of them applies to starts the spend read at once.
  const compiled = new LRUCache<string, { version: number; policies: CompiledPolicy[]; budgetCaps: CompiledPolicy[] }>({ max: COMPILED_MAX });
  const compiledFor = (orgId: string, snap: PolicySnapshot) => {
    let c = compiled.get(orgId);
    if (!c || c.version !== snap.version) {
      const policies = compileAll(snap.policies);
      c = { version: snap.version, policies, budgetCaps: policies.filter((p) => p.def.policyType === 'budget_cap') };
      compiled.set(orgId, c);
    }
    return c;
  };

  // Policies whose error was logged lately (by organization and policy id): a broken CEL expression
  // on a busy agent fails on every request, and one line a minute says it as well as thousands.
  const errorLogged = new LRUCache<string, true>({ max: 10_000, ttl: POLICY_ERROR_LOG_EVERY_MS });
  /** Logs the decision's policy errors (fixed texts, never request values: engine/cel.ts), each at most once a minute. */
  const reportErrors = (orgId: string, d: Decision) => {
    for (const e of d.errors) {
      const k = `${orgId}|${e.policyId}`;
      if (errorLogged.has(k)) continue;
      errorLogged.set(k, true);
      deps.log.warn({ organizationId: orgId, policyId: e.policyId, error: e.error }, 'policy could not be evaluated (a non-match); fix its rule or expression');
    }
  };

  // Quality aggregates: one query per (organization, agent, metric, window) per QUALITY_TTL_MS,
  // one load for concurrent misses; a hit answers synchronously (no await on the hot path).
  const quality = new LookupCache<{ v: number | null }>(
    async (key) => {
      const [orgId, agentId, metric, minutes] = key.split('|');
      return { v: await qualityAggregate(db, orgId, agentId, metric as QualityMetric, Number(minutes), clock.now()) };
    },
    { max: QUALITY_MAX, maxMissing: 1, ttlMs: QUALITY_TTL_MS, missingTtlMs: 0 },
  );

  // Key strings of each agent view (one per cached row and month), built once: a key string built
  // per request would be hashed per lookup (~0.2 µs each here), a kept one only once. Slots: a
  // quality (metric, window) as a number, a window counter by its policy id (a string).
  const agentKeys = new WeakMap<EnforcementAgent, Map<number | string, string>>();
  const keysOf = (agent: EnforcementAgent) => {
    let keys = agentKeys.get(agent);
    if (!keys) agentKeys.set(agent, (keys = new Map()));
    return keys;
  };
  // No closure in these: tsx, which runs the service, names every function made per call (`__name`): ~1 µs a request, measured.
  const qualityKey = (orgId: string, agent: EnforcementAgent, agentId: string, metric: QualityMetric, windowMinutes: number) => {
    // The view is the requested agent's; another id (never asked by the engine) is not memoized.
    if (agentId !== agent.id || orgId !== agent.organizationId) return `${orgId}|${agentId}|${metric}|${windowMinutes}`;
    const keys = keysOf(agent);
    // (metric, window) as one small integer: windowMinutes is an integer (rules.ts), two metrics.
    const slot = windowMinutes * 2 + (metric === 'error_rate' ? 0 : 1);
    let key = keys.get(slot);
    if (key === undefined) keys.set(slot, (key = `${orgId}|${agentId}|${metric}|${windowMinutes}`));
    return key;
  };
  const windowKey = (orgId: string, agent: EnforcementAgent, policyId: string) => {
    if (orgId !== agent.organizationId) return `policy-window:${orgId}:policy:${policyId}:agent:${agent.id}`;
    const keys = keysOf(agent);
    let key = keys.get(policyId);
    if (key === undefined) keys.set(policyId, (key = `policy-window:${orgId}:policy:${policyId}:agent:${agent.id}`));
    return key;
  };

  // Validator secrets by policy version (`id@updatedAt`): rotation bumps updatedAt, so a rotated
  // secret is read at once; a policy without a secret signs with none (never happens after create).
  const secrets = new LookupCache<{ s: string | null }>(
    async (key) => {
      const [orgId, policyId] = key.split('|');
      return { s: await validatorSecretOf(db, orgId, policyId) };
    },
    { max: 10_000, maxMissing: 1, ttlMs: 5 * 60_000, missingTtlMs: 0 },
  );

  /** A signed POST through the outbound guard (the engine's createHttpValidator); failures are named by askValidator. */
  const post = (url: string, body: string, timeoutMs: number, secret: string | null): Promise<ValidatorAnswer> =>
    createHttpValidator({ allowPrivate: deps.config.allowPrivateTargets, sign: secret ? (b) => signValidatorCall(secret, b, clock.now()) : undefined })(url, body, timeoutMs);

  /** The context of one decision (docs/decisions.md, "Enforce route": where each piece comes from). */
  const context = (orgId: string, agent: EnforcementAgent, policies: readonly CompiledPolicy[], dryRun: DryRunContext | null, readsSpend: boolean): EngineContext =>
    new DecisionContext(orgId, agent, policies, dryRun, readsSpend);

  /**
   * One decision's context: a class rather than an object of closures, so a request allocates one
   * object (the hot path builds one per request). Reads the service's caches and dependencies.
   */
  class DecisionContext implements EngineContext {
    // One read per decision however many budget_cap policies ask (docs/decisions.md, "Enforce route").
    private spend: MaybePromise<number> | undefined;
    constructor(
      private readonly orgId: string,
      readonly agent: EnforcementAgent,
      private readonly policies: readonly CompiledPolicy[],
      private readonly dryRun: DryRunContext | null,
      readsSpend: boolean,
    ) {
      // Started before the policies run when a budget_cap applies to this agent and environment: on
      // Redis its GET leaves in one write with the window counters the same decision sends
      // (auto-pipelining), instead of one round trip after another.
      if (readsSpend && agent.status === 'active') this.monthSpend(agent.id);
    }

    now() {
      return clock.now();
    }

    monthSpend(agentId: string) {
      if (this.spend === undefined) {
        const spend = deps.monthSpend(this.orgId, agentId);
        this.spend = spend;
        // Once known, the next budget_cap policies read the number: one asynchronous step per decision, not one per policy.
        if (spend instanceof Promise) spend.then((v) => (this.spend = v), () => undefined);
      }
      return this.spend;
    }

    qualityAggregate(agentId: string, metric: QualityMetric, windowMinutes: number) {
      const key = qualityKey(this.orgId, this.agent, agentId, metric, windowMinutes);
      const hit = quality.peek(key);
      return hit ? hit.v : quality.get(key).then((x) => x!.v);
    }

    liveGrant(q: GrantQuery) {
      return findLiveGrant(db, this.orgId, { agentId: q.agentId, action: q.action, resource: q.resource, parametersDigest: q.parametersDigest }, clock.now()).then((g) => g !== null);
    }

    windowHit(policyId: string, windowSeconds: number, max: number) {
      // Fail open, as the rate limiter does: a shared-state outage must not deny every request.
      let estimate: MaybePromise<number>;
      try {
        estimate = (this.dryRun?.state ?? state).slidingHit(windowKey(this.orgId, this.agent, policyId), windowSeconds * 1000, clock.now().getTime());
      } catch {
        return true;
      }
      return estimate instanceof Promise ? estimate.then((e) => e <= max, () => true) : estimate <= max;
    }

    async callValidator(url: string, body: string, timeoutMs: number, policyId?: string) {
      if (this.dryRun) return post(url, body, timeoutMs, this.dryRun.secret);
      // The policy's version names its secret (rotation bumps updatedAt): looked up only on a call.
      const version = policyId ? this.policies.find((p) => p.def.id === policyId)?.def.updatedAt : undefined;
      const secret = policyId && version ? (await secrets.get(`${this.orgId}|${policyId}|${version}`))!.s : null;
      return post(url, body, timeoutMs, secret);
    }
  }

  /** The agent the request names if visible to the caller; 404 otherwise (another agent's key learns nothing). */
  function visible(who: Enforcer, agent: EnforcementAgent | null): EnforcementAgent {
    if (!agent || (who.agentId !== undefined && agent.id !== who.agentId)) throw notFound('Agent');
    return agent;
  }

  /** The agent the request names, visible to the caller (see `visible`). */
  async function agentFor(who: Enforcer, agentId: string): Promise<EnforcementAgent> {
    return visible(who, await deps.agent(who.organizationId, agentId));
  }

  const answer = (d: Decision, decisionId: string, evaluationMs: number, accessGrantId: string | null): EnforceDecision => ({
    decision: d.decision,
    allowed: d.allowed,
    violations: d.violations,
    warnings: d.warnings,
    evaluatedPolicies: d.evaluatedPolicies,
    decisionId,
    evaluationMs,
    ...(accessGrantId ? { accessGrantId } : {}),
  });

  /**
   * POST /policies/enforce: decides, creates the pending grant of a require_approval, records the
   * decision. `t0` is when the body was parsed (performance.now()).
   */
  async function enforce(who: Enforcer, req: EnforceRequest, t0: number): Promise<EnforceOutcome> {
    const orgId = who.organizationId;
    // Both come from memory on a hit (no promise, no await); a miss loads them side by side.
    let found = deps.agent(orgId, req.agentId);
    let snap = deps.snapshot(orgId);
    if (found instanceof Promise || snap instanceof Promise) [found, snap] = await Promise.all([found, snap]);
    const agent = visible(who, found);
    const t1 = performance.now();
    const c = compiledFor(orgId, snap);
    const out = decide(c.policies, req, context(orgId, agent, c.policies, null, anyInScope(c.budgetCaps, agent.id, req.environment ?? agent.environment)));
    const d = out instanceof Promise ? await out : out;
    const t2 = performance.now();
    if (d.errors.length) reportErrors(orgId, d);
    let accessGrantId: string | null = null;
    if (d.accessGrantRequest) {
      const g = d.accessGrantRequest;
      const grant = await requestGrant(db, orgId, { ...g, requestedBy: who.userId, reason: `Required by policy ${g.policyId} for action ${g.action}` }, clock.now());
      accessGrantId = grant.id;
    }
    const t3 = performance.now();
    const evaluationMs = ms(t3 - t0);
    const decisionId = randomUUID();
    const environment = req.environment ?? agent.environment;
    deps.record({
      organizationId: orgId,
      decisionId,
      agentId: agent.id,
      environment,
      action: { type: req.action.type, name: req.action.name, resource: req.action.resource ?? null },
      decision: d.decision,
      violations: d.violations,
      warnings: d.warnings,
      evaluatedPolicyIds: d.evaluatedPolicyIds,
      evaluationMs,
      accessGrantId,
      sessionId: req.sessionId ?? null,
      traceId: req.traceId ?? null,
      userId: req.userId ?? null,
      // Only outbox event types: the engine reports policy errors apart (Decision.errors).
      events: d.events,
      at: clock.now(),
    });
    const timing = `agent;dur=${ms(t1 - t0)}, policy;dur=${ms(t2 - t1)}${accessGrantId ? `, grant;dur=${ms(t3 - t2)}` : ''}, total;dur=${evaluationMs}`;
    return { decision: answer(d, decisionId, evaluationMs, accessGrantId), serverTiming: timing };
  }

  /**
   * POST /policies/test: `policy` (already checked like a create) against the request with the real
   * context, except that windows count on a throwaway in-memory state (no quota consumed), no grant
   * is created and nothing is recorded; a validator is called for real, signed with a one-off secret.
   */
  async function dryRun(who: Enforcer, policy: CompiledPolicy['def'], req: EnforceRequest, t0: number): Promise<EnforceOutcome> {
    const agent = await agentFor(who, req.agentId);
    const t1 = performance.now();
    const compiledOne = compilePolicy(policy);
    const out = decide([compiledOne], req, context(who.organizationId, agent, [compiledOne], { secret: newValidatorSecret(), state: memoryState() }, false));
    const d = out instanceof Promise ? await out : out;
    const t2 = performance.now();
    const evaluationMs = ms(t2 - t0);
    return { decision: answer(d, randomUUID(), evaluationMs, null), serverTiming: `agent;dur=${ms(t1 - t0)}, policy;dur=${ms(t2 - t1)}, total;dur=${evaluationMs}` };
  }

  return { enforce, dryRun };
}

export type EnforceService = ReturnType<typeof createEnforceService>;

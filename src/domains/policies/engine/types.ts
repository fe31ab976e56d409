/**
 * What the enforcement engine takes and answers. The engine is pure: the agent, aggregates, access
 * grants, window counters and the validator call all come through `EngineContext`, so the route
 * (and tests) decide where they live (docs/decisions.md, "Enforcement engine").
 */
import type { PolicyType } from '../rules.js';
import type { PolicyViolation } from '../enforce-schemas.js';

export type MaybePromise<T> = T | Promise<T>;

/** The fields of a Policy (spec) the engine reads; P1's Policy view is assignable to it. */
export interface PolicyDefinition {
  id: string;
  name: string;
  policyType: PolicyType;
  ruleDefinition: unknown;
  enforcementMode: 'block' | 'warn' | 'monitor';
  isActive: boolean;
  appliesToAgents: readonly string[];
  appliesToEnvironments: readonly string[];
  agentId: string | null;
  priority: number;
  maxRequests: number | null;
  timeWindowSeconds: number | null;
  severity: 'info' | 'warning' | 'critical';
  /** ISO 8601; with `id` it names the policy version (compile memo, access grants' policyVersion). */
  updatedAt: string;
}

/** The agent the request names, as the route loaded it (CEL sees every field as `request.agent`). */
export interface EngineAgent {
  id: string;
  status: string;
  environment: string;
  currentMonthCostUsd: number;
  pausedBy?: string | null;
  pauseReason?: string | null;
  [field: string]: unknown;
}

export interface GrantQuery {
  agentId: string;
  policyId: string;
  action: string;
  resource: string | null;
  /** Hex SHA-256 of the canonical JSON of `action.parameters` (bindParameters), else null. */
  parametersDigest: string | null;
}

export interface ValidatorAnswer {
  status: number;
  text: string;
}

export interface EngineContext {
  agent: EngineAgent;
  /**
   * The agent's month-to-date spend as of every trace ingested so far: budget_cap compares against it,
   * never against `agent.currentMonthCostUsd`, which may come from a cache.
   */
  monthSpend(agentId: string): MaybePromise<number>;
  /** The injected clock, for the context's own counters and caches (the engine itself reads no time). */
  now(): Date;
  /** The agent's metric over the last `windowMinutes` (cached aggregate); null when there is no data. */
  qualityAggregate(agentId: string, metric: 'error_rate' | 'p95_duration_ms', windowMinutes: number): MaybePromise<number | null>;
  /** Whether an approved, unexpired, unrevoked access grant covers this query. */
  liveGrant(query: GrantQuery): MaybePromise<boolean>;
  /** Counts one match of policy `policyId` for this decision's agent in a sliding window (shared state); true while the count is within `max`. */
  windowHit(policyId: string, windowSeconds: number, max: number): MaybePromise<boolean>;
  /**
   * POSTs `body` (JSON text) to `url`, giving up after `timeoutMs` (engine/validator.ts has the HTTP
   * one); `policyId` names the custom policy, whose validator secret signs the call.
   */
  callValidator(url: string, body: string, timeoutMs: number, policyId?: string): Promise<ValidatorAnswer>;
}

/** The events a decision emits: each is an event type of the outbox (contract.md "Events"), so the route passes them on as they are. */
export type EngineEventType = 'policy_violated' | 'limit_exceeded' | 'custom_validator_invoked' | 'custom_validator_denied' | 'custom_validator_failed';

export interface EngineEvent {
  type: EngineEventType;
  policyId: string | null;
  data: Record<string, unknown>;
}

/**
 * A policy that could not be evaluated (a ruleDefinition that does not compile, a CEL evaluation
 * that fails or answers no boolean): a non-match, reported apart from the events because it is the
 * engine's own signal, not an outbox event. `error` is a fixed text, never a request value.
 */
export interface PolicyError {
  policyId: string;
  error: string;
}

/** Where a policy's evaluation reports besides its matches. */
export interface EngineReport {
  events: EngineEvent[];
  errors: PolicyError[];
}

/** The pending access grant the route creates for a require_approval decision. */
export interface AccessGrantRequest {
  agentId: string;
  policyId: string;
  policyVersion: string;
  action: string;
  resource: string | null;
  parametersDigest: string | null;
  ttlSeconds: number | null;
}

export interface Decision {
  decision: 'allow' | 'deny' | 'require_approval';
  allowed: boolean;
  violations: PolicyViolation[];
  warnings: PolicyViolation[];
  evaluatedPolicies: number;
  /** Ids of the policies evaluated (in scope), in evaluation order: the decision log counts per policy. Read only: decisions over one policy list may share it (decide.ts). */
  evaluatedPolicyIds: readonly string[];
  accessGrantRequest?: AccessGrantRequest;
  events: EngineEvent[];
  /** Policies that could not be evaluated (never outbox events). */
  errors: PolicyError[];
}

/** One match of a policy's rule, before the mode and the window limit are applied. */
export interface Match {
  code: string;
  message: string;
  evidence?: { path: string; start: number; end: number; score: number };
  /** A finding the policy reports without enforcing (output_classifier categories outside blockOn): a monitor warning. */
  note?: boolean;
  /** action_approval without a live grant. */
  approval?: AccessGrantRequest;
}

/**
 * What the engine's tests decide with (src/domains/policies/engine/types.ts): policy definitions
 * with the fields a stored policy has, numbered by the caller, and a context without I/O.
 */
import type { EngineContext, PolicyDefinition } from '../src/domains/policies/engine/index.js';

/**
 * Policy number `seq` of `policyType`: active, for every agent and environment, no window limit,
 * monitor mode at priority `seq`; `extra` overrides any field.
 */
export function policyDefinition(seq: number, policyType: PolicyDefinition['policyType'], ruleDefinition: unknown, extra: Partial<PolicyDefinition> = {}): PolicyDefinition {
  return {
    id: `00000000-0000-4000-8000-${String(seq).padStart(12, '0')}`,
    name: `${policyType} ${seq}`,
    policyType,
    ruleDefinition,
    enforcementMode: 'monitor',
    isActive: true,
    appliesToAgents: [],
    appliesToEnvironments: [],
    agentId: null,
    priority: seq,
    maxRequests: null,
    timeWindowSeconds: null,
    severity: 'warning',
    updatedAt: '2026-11-23T00:00:00.000Z',
    ...extra,
  };
}

/**
 * A context answering at once with nothing recorded: no spend, no quality data, no grant, every
 * window open, and every validator call failing with `validatorError`.
 */
export function staticEngineContext(agentId: string, validatorError: string): EngineContext {
  return {
    agent: { id: agentId, status: 'active', environment: 'production', currentMonthCostUsd: 0 },
    now: () => new Date('2026-11-23T00:00:00Z'),
    monthSpend: () => 0,
    qualityAggregate: () => null,
    liveGrant: () => false,
    windowHit: () => true,
    callValidator: () => Promise.reject(new Error(validatorError)),
  };
}

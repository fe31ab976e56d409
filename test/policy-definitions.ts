/**
 * Engine policy definitions for the engine's tests (src/domains/policies/engine/types.ts): the
 * fields a stored policy has, with an id and name numbered by the caller.
 */
import type { PolicyDefinition } from '../src/domains/policies/engine/index.js';

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

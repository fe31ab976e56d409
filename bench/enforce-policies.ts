/**
 * The 50 mixed policies and the ~2 KB request of `npm run bench:enforce`, as API inputs: the same
 * set bench/enforce-engine.ts decides in process (12 access_control, 8 data_restriction, 5 action_approval, 6
 * cost_limit, 4 budget_cap, 4 quality_threshold, 3 injection_scan, 3 output_classifier, 5 custom),
 * all in monitor mode so every request is evaluated in full and answered `allow` with warnings.
 */
import { conversation } from './conversation.js';

type Input = { name: string; policyType: string; ruleDefinition: Record<string, unknown>; enforcementMode: 'monitor'; priority: number; maxRequests?: number; timeWindowSeconds?: number };

let n = 0;
const def = (policyType: string, ruleDefinition: Record<string, unknown>, extra: Partial<Input> = {}): Input => ({ name: `${policyType} ${++n}`, policyType, ruleDefinition, enforcementMode: 'monitor', priority: n, ...extra });
const rep = <T>(k: number, f: (i: number) => T): T[] => Array.from({ length: k }, (_, i) => f(i));

/** The policies, in priority order. */
export const POLICIES: Input[] = [
  ...rep(12, (i) => def('access_control', { allowActions: ['chat.*', 'search_*', `tool_${i}_*`], denyActions: [`admin.${i}.**`, 'delete_*'], denyResources: ['s3://private/**'] })),
  ...rep(8, (i) => def('data_restriction', { detect: i % 2 ? ['email', 'credit_card', 'ssn'] : ['iban', 'api_key', 'jwt', 'phone'], scope: 'both', ...(i === 0 ? { patterns: ['EMP-\\d{6}'] } : {}) })),
  ...rep(5, (i) => def('action_approval', { actions: [`send_${i}_*`, 'payments.**'], bindParameters: i % 2 === 0 })),
  ...rep(6, (i) => def('cost_limit', { maxCostUsdPerRequest: 1 + i, maxTokensPerRequest: 100_000 }, i === 0 ? { maxRequests: 1_000_000_000, timeWindowSeconds: 60 } : {})),
  ...rep(4, (i) => def('budget_cap', { maxMonthlyCostUsd: 100 * (i + 1) })),
  ...rep(4, (i) => def('quality_threshold', { metric: i % 2 ? 'error_rate' : 'p95_duration_ms', max: i % 2 ? 0.5 : 30_000, windowMinutes: 60 })),
  ...rep(3, (i) => def('injection_scan', { threshold: 0.4 + i * 0.1, scope: i === 2 ? 'both' : 'input' })),
  ...rep(3, (i) => def('output_classifier', { categories: i === 0 ? ['pii', 'secrets', 'url'] : ['pii', 'secrets', 'profanity', 'code', 'url'], blockOn: ['secrets'] })),
  ...rep(5, (i) => def('custom', { expression: `request.tokens > ${10_000 + i} || (request.action.name == "admin.${i}" && request.agent.environment == "production")` })),
];
if (POLICIES.length !== 50) throw new Error(`expected 50 policies, got ${POLICIES.length}`);

/** The enforce body for `agentId` (about 2 KB). */
export const enforceBody = (agentId: string) => ({
  agentId,
  environment: 'production',
  action: { type: 'llm_call', name: 'chat.completions', resource: 'openai://gpt-4o', parameters: { temperature: 0.2, maxTokens: 800 } },
  input: { messages: conversation(1500), customer: { id: 'cus_83jd92', plan: 'pro' } },
  output: 'Here is the summary you asked for: revenue grew 4% and two supplier risks need review.',
  modelName: 'gpt-4o',
  estimatedCostUsd: 0.012,
  tokens: 900,
  sessionId: 'sess-1',
  traceId: 'trace-1',
  metadata: { channel: 'web' },
});

/**
 * The OpenAPI `webhooks` section: one entry per event type, describing the delivery request a
 * receiver gets (body of contract.md "Events", signature headers of the spec). docs/events.md lists
 * the same events with when they fire.
 */
import { EVENT_TYPES, type EventType } from '../domains/events/outbox.js';

type Json = Record<string, unknown>;

const str = (description: string, extra: Json = {}): Json => ({ type: 'string', description, ...extra });
const num = (description: string): Json => ({ type: 'number', description });
const nullable = (s: Json): Json => ({ ...s, type: [s.type as string, 'null'] });
const obj = (properties: Record<string, Json>, required = Object.keys(properties)): Json => ({ type: 'object', properties, required });
const agentRef = { $ref: '#/components/schemas/Agent' };

const budgetData = (extra: Record<string, Json>) =>
  obj({
    agentId: str('The agent', { format: 'uuid' }),
    agentName: str('Its name'),
    monthlyBudgetUsd: num('The monthly budget'),
    currentMonthSpend: num('Spend so far this UTC month'),
    percentUsed: num('Spend as a percentage of the budget'),
    month: str('The UTC month, YYYY-MM'),
    ...extra,
  });

const traceData = obj({
  traceId: str('The external trace id'),
  status: str('The trace status', { enum: ['success', 'error', 'timeout', 'policy_blocked', 'limit_exceeded'] }),
  errorMessage: nullable(str('The error message, if any')),
  costUsd: nullable(num('Cost in USD')),
});

/** When each event fires and the shape of its `data` (null: emitted by a later issue; shape not fixed yet). */
export const EVENT_DOCS: Record<EventType, { when: string; data: Json | null }> = {
  agent_registered: { when: 'An agent is registered (POST /agents).', data: obj({ agent: agentRef }) },
  agent_updated: { when: 'An agent is changed (PATCH /agents/{id}).', data: obj({ agent: agentRef, changes: { type: 'array', items: { type: 'string' }, description: 'Names of the changed fields' } }) },
  agent_deleted: { when: 'An agent is archived (DELETE /agents/{id}).', data: obj({ agent: agentRef }) },
  trace_completed: { when: 'A trace is ingested with a non-error status (written only while some active webhook subscribes).', data: traceData },
  trace_error: { when: 'A trace is ingested with status error or timeout (written only while some active webhook subscribes); also on incident creation with an agentId (incidents issue).', data: traceData },
  policy_violated: { when: 'An enforcement decision has a blocking match (decision log issue).', data: null },
  kill_switch_triggered: {
    when: 'An agent is paused: manually, by the organization kill switch, or by its budget (pause_agent).',
    data: obj({ agentId: str('The agent', { format: 'uuid' }), agentName: str('Its name'), reason: nullable(str('The pause reason')), trigger: str('What paused it (e.g. manual, kill_switch, budget_exceeded)'), pausedBy: str('Who paused it') }),
  },
  limit_exceeded: { when: "A policy's maxRequests per timeWindowSeconds is exceeded (decision log issue).", data: null },
  prompt_approved: { when: 'A prompt version is approved (prompt versions issue).', data: null },
  prompt_deployed: { when: 'A prompt version is deployed (prompt versions issue).', data: null },
  budget_warning: { when: "An agent's month-to-date spend crosses warningThresholdPct (once per UTC month).", data: budgetData({ warningThresholdPct: num('The warning threshold, percent') }) },
  budget_exceeded: { when: "An agent's month-to-date spend reaches its budget (once per UTC month).", data: budgetData({ budgetAction: str('alert or pause_agent', { enum: ['alert', 'pause_agent'] }) }) },
  alert_triggered: { when: 'An alert rule fires (alerts issue).', data: null },
  custom_validator_invoked: { when: 'A custom policy calls its validator (decision log issue).', data: null },
  custom_validator_denied: { when: 'A custom validator answers allowed: false (decision log issue).', data: null },
  custom_validator_failed: { when: 'A custom validator times out, answers non-2xx or unreadable JSON (decision log issue).', data: null },
};

const HEADERS: [string, string, boolean][] = [
  ['X-Service-Signature', '`sha256=<hex>`: HMAC-SHA256 keyed with the decoded secret, over `timestamp.body` (v2) or the body (v1). During a secret rotation, one value per secret, space-separated.', true],
  ['X-Service-Signature-Version', '`v2` (default) or `v1`.', true],
  ['X-Service-Timestamp', 'Unix seconds at signing (v2 only): reject deliveries more than 300 s away from now.', false],
  ['X-Service-Idempotency-Key', 'Stable per event: identical across retries and redeliveries. Deduplicate on it.', true],
  ['webhook-id', 'Standard Webhooks: the event id.', true],
  ['webhook-timestamp', 'Standard Webhooks: Unix seconds at signing.', true],
  ['webhook-signature', 'Standard Webhooks: `v1,<base64>` HMAC over `id.timestamp.body`, one per secret, space-separated.', true],
];

/** The document's `webhooks` object (OpenAPI 3.1). */
export function webhooksSection(): Json {
  return Object.fromEntries(
    EVENT_TYPES.map((type) => {
      const doc = EVENT_DOCS[type];
      const data = doc.data ?? { type: 'object', description: 'Defined by the issue that emits this event.' };
      return [
        type,
        {
          post: {
            operationId: `webhookEvents.${type}`,
            summary: `Event ${type}`,
            description: `${doc.when} Verify the signature on the raw body before parsing (README, "Verifying webhooks"). Answer 2xx within the webhook's timeoutSeconds; any other answer is retried with backoff, 410 disables the webhook, 429 is retried after Retry-After.`,
            tags: ['Webhook events'],
            security: [],
            parameters: HEADERS.map(([name, description, required]) => ({ name, in: 'header', required, description, schema: { type: 'string' } })),
            requestBody: {
              required: true,
              content: {
                'application/json': {
                  schema: obj({
                    id: str('The event id (also `webhook-id`)', { format: 'uuid' }),
                    type: str('The event type', { const: type }),
                    createdAt: str('When the event happened', { format: 'date-time' }),
                    organizationId: str('Your organization', { format: 'uuid' }),
                    agentId: nullable(str('The agent the event is about', { format: 'uuid' })),
                    data,
                  }),
                },
              },
            },
            responses: { '200': { description: 'Any 2xx acknowledges the delivery.' } },
          },
        },
      ];
    }),
  );
}

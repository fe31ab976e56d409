/**
 * Enforcement's events end to end: a blocking decision of `POST /policies/enforce` goes through the
 * decision log's batched flush into the outbox, and the webhook that subscribes to policy_violated
 * receives it, signed; nothing is written for a type no webhook wants (docs/decisions.md, "Decision
 * log and policy stats", "Webhooks").
 */
import { and, eq } from 'drizzle-orm';
import { outboxEvents } from '../src/db/schema/index.js';
import type { JobRunner } from '../src/jobs/index.js';
import { verifyWebhook } from '../src/webhooks-verify.js';
import { afterAll, beforeAll, describe, expect, it } from './fixture.js';
import { startReceiver, startRunner } from './webhooks-support.js';

let runner: JobRunner;
beforeAll(async ({ app }) => {
  runner = await startRunner(app);
});
afterAll(async () => {
  await runner.stop(1000);
});

describe('events of enforcement', () => {
  it('a deny reaches a policy_violated webhook, with the policy and code and no matched text; unwanted types are not written', async ({ app, freshOrg: org }) => {
    const rx = await startReceiver();
    try {
      const agent = (await org.req({ method: 'POST', url: '/api/v1/agents', payload: { agentId: 'events-agent', name: 'E', type: 'chatbot', platform: 'custom', environment: 'production' } })).json().data;
      const policy = await org.req({
        method: 'POST',
        url: '/api/v1/policies',
        payload: { name: 'No cards', policyType: 'data_restriction', ruleDefinition: { detect: ['credit_card'], scope: 'input' }, enforcementMode: 'block', severity: 'critical' },
      });
      expect(policy.statusCode, policy.body).toBe(201);
      const policyId = policy.json().data.id;
      const hook = await org.req({ method: 'POST', url: '/api/v1/webhooks', payload: { name: 'sec', url: rx.url, eventTypes: ['policy_violated'] } });
      expect(hook.statusCode, hook.body).toBe(201);
      const secret = hook.json().data.secret;

      const card = '4111 1111 1111 1111';
      const res = await org.req({ method: 'POST', url: '/api/v1/policies/enforce', payload: { agentId: agent.id, action: { type: 'tool_call', name: 'send_message' }, input: `pay with ${card}` } });
      expect(res.statusCode, res.body).toBe(200);
      expect(res.json().data).toMatchObject({ decision: 'deny', violations: [{ policyId, code: 'pii.credit_card' }] });

      await app.container.services.policyDecisions.flush();
      const [got] = await rx.waitFor(1);
      const body = JSON.parse(got.body);
      expect(body).toMatchObject({ type: 'policy_violated', organizationId: org.orgId, agentId: agent.id, data: { code: 'pii.credit_card' } });
      expect(JSON.stringify(body)).not.toContain('4111');
      expect(verifyWebhook(got.body, got.headers, secret).scheme).toBe('x-service-v2');

      // limit_exceeded is wanted by nobody in this organization: the flush wrote no such event.
      const types = await app.container.db.select({ type: outboxEvents.type }).from(outboxEvents).where(and(eq(outboxEvents.organizationId, org.orgId), eq(outboxEvents.agentId, agent.id)));
      expect(types.map((t) => t.type).filter((t) => t.startsWith('policy') || t.startsWith('limit') || t.startsWith('custom'))).toEqual(['policy_violated']);
    } finally {
      await rx.close();
    }
  });
});

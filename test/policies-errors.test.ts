/**
 * A policy that cannot be evaluated (a CEL expression reading a field the request lacks) is a
 * non-match, reported in the app's log at most once a minute per policy, with a fixed text and
 * never the request's values (docs/decisions.md, "Enforcement engine" and "Enforce route").
 */
import { randomUUID } from 'node:crypto';
import { Writable } from 'node:stream';
import { describe, expect, it, test } from './fixture.js';

const lines: string[] = [];
const logStream = new Writable({
  write(chunk, _enc, done) {
    lines.push(String(chunk));
    done();
  },
});
test.override({ appEnv: { LOG_LEVEL: 'warn' }, appOptions: { logStream } });

describe('policy errors', () => {
  it('are logged once per policy (not per request), without request values, and the request is decided', async ({ org }) => {
    const agent = (await org.req({ method: 'POST', url: '/api/v1/agents', payload: { agentId: `a-${randomUUID()}`, name: 'a', type: 'chatbot', platform: 'openai', environment: 'production' } })).json().data;
    const secret = `sk-live-${randomUUID()}`;
    const policy = (await org.req({ method: 'POST', url: '/api/v1/policies', payload: { name: 'reads a missing key', policyType: 'custom', ruleDefinition: { expression: `request.metadata["${secret}"] == "x"` }, enforcementMode: 'block' } })).json().data;
    for (let i = 0; i < 3; i++) {
      const res = await org.req({ method: 'POST', url: '/api/v1/policies/enforce', payload: { agentId: agent.id, action: { type: 'tool_call', name: 'search' }, metadata: { other: secret } } });
      expect(res.statusCode, res.body).toBe(200);
      expect(res.json().data.decision).toBe('allow');
    }
    const logged = lines.map((l) => JSON.parse(l)).filter((l) => l.policyId === policy.id);
    expect(logged).toHaveLength(1);
    expect(logged[0]).toMatchObject({ organizationId: org.orgId, error: expect.stringMatching(/^CEL evaluation failed/) });
    expect(lines.join('\n')).not.toContain(secret);
  });
});

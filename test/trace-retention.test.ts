/**
 * Trace retention visits only the organizations that have expired traces, so its cap on statements
 * per run is not spent on the others (docs/decisions.md, "Trace retention and search text").
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { assemble } from '../src/container.js';
import { TestClock } from '../src/core/clock.js';
import { createOrg, createTestApp, type TestApp, type TestOrg } from './helpers.js';

const DAY_MS = 86_400_000;

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(async () => t.close());

/** Ingests one trace per day of January 2000 listed (the oldest timestamps accepted). */
async function tracesOn(org: TestOrg, days: number[]) {
  const agent = await org.req({
    method: 'POST', url: '/api/v1/agents',
    payload: { agentId: `bot-${randomUUID()}`, name: 'bot', type: 'autonomous', platform: 'custom', environment: 'staging' },
  });
  expect(agent.statusCode, agent.body).toBe(201);
  const traces = days.map((d) => ({ traceId: `day-${d}`, agentUuid: agent.json().data.id, timestamp: new Date(Date.UTC(2000, 0, d)).toISOString() }));
  const res = await org.req({ method: 'POST', url: '/api/v1/traces/ingest', payload: { traces } });
  expect(res.statusCode, res.body).toBe(202);
}

const traceIdsOf = async (o: TestOrg) =>
  ((await o.req({ method: 'GET', url: '/api/v1/traces?limit=100' })).json().data as { traceId: string }[]).map((x) => x.traceId).sort();

describe('trace retention', () => {
  it('reaches an organization that sorts after more organizations than a run has statements', async () => {
    // Organization ids are time-ordered: five without expired traces sort first, each with a recent trace.
    const others: TestOrg[] = [];
    for (let i = 0; i < 5; i++) {
      const o = await createOrg(t, `Recent ${i}`);
      await tracesOn(o, [25]);
      others.push(o);
    }
    const late = await createOrg(t, 'Late');
    await tracesOn(late, [1, 2, 3, 25]);

    // On the test clock, a retention whose cutoff is 10 January 2000.
    const clock = new TestClock('2040-01-01T00:00:00.000Z');
    const days = Math.round((clock.now().getTime() - Date.UTC(2000, 0, 10)) / DAY_MS);
    const traces = assemble({ config: { ...t.container.config, TRACE_RETENTION_DAYS: days }, database: t.database, state: t.state, clock }).services.traces;

    // Three statements of one row per run: all three spent on the organization that has expired traces.
    expect(await traces.deleteExpired({ batchSize: 1, maxBatches: 3 })).toEqual({ deleted: 3, more: true });
    expect(await traceIdsOf(late)).toEqual(['day-25']);
    expect(await traces.deleteExpired({ batchSize: 1, maxBatches: 3 })).toEqual({ deleted: 0, more: false });
    for (const o of others) expect(await traceIdsOf(o)).toEqual(['day-25']);
  });
});

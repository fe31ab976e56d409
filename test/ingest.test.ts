import { randomUUID } from 'node:crypto';
import { and, eq } from 'drizzle-orm';
import { outboxEvents, traces } from '../src/db/schema/index.js';
import { afterEach, describe, expect, it } from './fixture.js';
import { createOrg, type TestApp, type TestOrg } from './helpers.js';

// Tests that move the clock put it back to the present for the next.
afterEach(({ app }) => {
  app.clock.set(Date.now());
});

async function agent(o: TestOrg, body: Record<string, unknown> = {}) {
  const res = await o.req({
    method: 'POST', url: '/api/v1/agents',
    payload: { agentId: `bot-${randomUUID()}`, name: 'bot', type: 'autonomous', platform: 'custom', environment: 'staging', ...body },
  });
  expect(res.statusCode, res.body).toBe(201);
  return res.json().data as { id: string; agentId: string };
}

const ingest = (o: TestOrg, items: unknown[], key?: string) =>
  o.req({ method: 'POST', url: '/api/v1/traces/ingest', payload: { traces: items }, key });

const stored = async (app: TestApp, o: TestOrg, traceId: string) => {
  const [row] = await app.database.db.select().from(traces).where(and(eq(traces.organizationId, o.orgId), eq(traces.traceId, traceId)));
  return row;
};
const getAgent = async (o: TestOrg, id: string) => (await o.req({ method: 'GET', url: `/api/v1/agents/${id}` })).json().data;

describe('POST /traces/ingest', () => {
  it('accepts valid items, reports invalid ones, and writes nothing of a failed item', async ({ app, org }) => {
    const a = await agent(org);
    const ok = `t-${randomUUID()}`;
    const res = await ingest(org, [
      { traceId: ok, agentId: a.agentId, status: 'success', durationMs: 120, spanType: 'llm_call', spanName: 'answer' },
      { traceId: 'bad-status', agentId: a.agentId, status: 'exploded' },
      { traceId: 'neg-tokens', agentId: a.agentId, promptTokens: -5 },
      { traceId: 'str-input', agentId: a.agentId, input: 'not an object' },
      { traceId: 'far-future', agentId: a.agentId, timestamp: '2999-01-01T00:00:00Z' },
      { traceId: 'ghost', agentId: 'no-such-agent' },
      { traceId: 'nobody' },
      { agentId: a.agentId },
      42,
    ]);
    expect(res.statusCode).toBe(202);
    const body = res.json();
    expect(body).toMatchObject({ accepted: 1, failed: 8, traceIds: [ok] });
    expect(body.errors.map((e: { index: number }) => e.index)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    expect(body.errors[0]).toMatchObject({ traceId: 'bad-status', error: expect.stringMatching(/^status:/) });
    expect(body.errors[3].error).toMatch(/future/);
    expect(body.errors[4].error).toBe('unknown agent');
    expect(body.errors[5].error).toMatch(/agentId or agentUuid/);
    expect(body.errors[7]).toMatchObject({ traceId: null, error: 'item must be an object' });
    for (const id of ['bad-status', 'neg-tokens', 'str-input', 'far-future', 'ghost', 'nobody']) expect(await stored(app, org, id)).toBeUndefined();
    expect(await stored(app, org, ok)).toMatchObject({ status: 'success', durationMs: 120, environment: 'staging', spanName: 'answer' });
    const clean = await ingest(org, [{ traceId: `t-${randomUUID()}`, agentUuid: a.id }]);
    expect(clean.json()).toEqual({ accepted: 1, failed: 0, traceIds: [expect.any(String)] });
  });

  it('422 for the envelope: missing traces, empty, or more than 100 items', async ({ org }) => {
    for (const payload of [{}, { traces: [] }, { traces: Array(101).fill({ traceId: 'x' }) }, { traces: 'x' }]) {
      const res = await org.req({ method: 'POST', url: '/api/v1/traces/ingest', payload });
      expect(res.statusCode).toBe(422);
      expect(res.json().error.fields.traces).toBeDefined();
    }
  });

  it('a 10 MB item fails alone', async ({ org }) => {
    const a = await agent(org);
    const res = await ingest(org, [
      { traceId: `big-${randomUUID()}`, agentId: a.agentId, input: { text: 'x'.repeat(10 * 1024 * 1024) } },
      { traceId: `small-${randomUUID()}`, agentId: a.agentId },
    ]);
    expect(res.statusCode).toBe(202);
    expect(res.json()).toMatchObject({ accepted: 1, failed: 1 });
    expect(res.json().errors[0].error).toMatch(/larger than/);
  });

  it('upserts by traceId: a completion merges onto its start; within a batch the later item wins', async ({ app, org }) => {
    const a = await agent(org);
    const id = `t-${randomUUID()}`;
    await ingest(org, [{ traceId: id, agentId: a.agentId, input: { q: 'hi' }, spanName: 'run', timestamp: '2026-01-01T00:00:00Z' }]);
    await ingest(org, [{ traceId: id, agentId: a.agentId, output: { a: 'hello' }, status: 'error', errorMessage: 'boom', durationMs: 9 }]);
    expect(await stored(app, org, id)).toMatchObject({ input: { q: 'hi' }, output: { a: 'hello' }, status: 'error', errorMessage: 'boom', durationMs: 9, spanName: 'run' });
    expect((await stored(app, org, id)).timestamp.toISOString()).toBe('2026-01-01T00:00:00.000Z');

    const tok = `tok-${randomUUID()}`;
    await ingest(org, [{ traceId: tok, agentId: a.agentId, promptTokens: 100 }]);
    expect((await stored(app, org, tok)).totalTokens).toBe(100);
    await ingest(org, [{ traceId: tok, agentId: a.agentId, completionTokens: 50 }]);
    expect(await stored(app, org, tok)).toMatchObject({ promptTokens: 100, completionTokens: 50, totalTokens: 150 });

    const dup = `d-${randomUUID()}`;
    const res = await ingest(org, [
      { traceId: dup, agentId: a.agentId, status: 'error', spanName: 'first' },
      { traceId: dup, agentId: a.agentId, status: 'success' },
    ]);
    expect(res.json()).toMatchObject({ accepted: 2, failed: 0, traceIds: [dup, dup] });
    expect(await stored(app, org, dup)).toMatchObject({ status: 'success', spanName: 'first' });
  });

  it('estimates cost from the price table when costUsd is absent, and keeps a sent cost', async ({ app, org }) => {
    const a = await agent(org);
    const est = `c-${randomUUID()}`;
    const sent = `c-${randomUUID()}`;
    await ingest(org, [
      { traceId: est, agentId: a.agentId, modelName: 'gpt-4o-mini-2024-07-18', promptTokens: 1000, completionTokens: 500 },
      { traceId: sent, agentId: a.agentId, modelName: 'gpt-4o-mini', promptTokens: 1000, costUsd: 0.5 },
      { traceId: `c-${randomUUID()}`, agentId: a.agentId, modelName: 'my-private-model', promptTokens: 1000 },
    ]);
    const e = await stored(app, org, est);
    expect(e.costUsd).toBe(0.00045);
    expect(e.totalTokens).toBe(1500);
    expect((await stored(app, org, sent)).costUsd).toBe(0.5);
    expect((await getAgent(org, a.id)).currentMonthCostUsd).toBe(0.50045);
  });

  it('accrues spend atomically: 8 parallel batches of 100 lose nothing; re-sending a trace does not double-count', async ({ org }) => {
    const a = await agent(org);
    const batches = Array.from({ length: 8 }, (_, b) =>
      Array.from({ length: 100 }, (_, i) => ({ traceId: `p-${b}-${i}-${randomUUID()}`, agentId: a.agentId, costUsd: 0.01 })),
    );
    const results = await Promise.all(batches.map((items) => ingest(org, items)));
    expect(results.map((r) => r.json().accepted)).toEqual(Array(8).fill(100));
    const after = await getAgent(org, a.id);
    expect(after.currentMonthCostUsd).toBe(8);
    await ingest(org, [{ ...batches[0][0], costUsd: 0.03 }]);
    expect((await getAgent(org, a.id)).currentMonthCostUsd).toBe(8.02);
  });

  it('lastSeenAt and healthStatus follow traces', async ({ org }) => {
    const a = await agent(org);
    expect((await getAgent(org, a.id)).healthStatus).toBe('unknown');
    await ingest(org, Array.from({ length: 20 }, () => ({ traceId: randomUUID(), agentId: a.agentId, status: 'success' })));
    const healthy = await getAgent(org, a.id);
    expect(healthy).toMatchObject({ healthStatus: 'healthy', lastSeenAt: expect.any(String) });
    await ingest(org, Array.from({ length: 20 }, () => ({ traceId: randomUUID(), agentId: a.agentId, status: 'error' })));
    expect((await getAgent(org, a.id)).healthStatus).toBe('failing');
    await ingest(org, Array.from({ length: 8 }, () => ({ traceId: randomUUID(), agentId: a.agentId, status: 'success' })));
    expect((await getAgent(org, a.id)).healthStatus).toBe('degraded');
  });

  it('budget_warning and budget_exceeded fire once a month; pause_agent pauses the agent', async ({ app }) => {
    // Mid-month on the test clock: every send below lands in the same budget month.
    app.clock.set('2026-04-15T12:00:00Z');
    const o = await createOrg(app);
    const a = await agent(o);
    await o.req({ method: 'PUT', url: `/api/v1/agents/${a.id}/budget`, payload: { monthlyBudgetUsd: 1, budgetAction: 'pause_agent', warningThresholdPct: 50 } });
    const send = (cost: number) => ingest(o, [{ traceId: randomUUID(), agentId: a.agentId, costUsd: cost }]);
    const count = async (type: string) =>
      (await app.database.db.select().from(outboxEvents).where(and(eq(outboxEvents.organizationId, o.orgId), eq(outboxEvents.type, type)))).length;
    await send(0.4);
    expect(await count('budget_warning')).toBe(0);
    await send(0.2);
    expect(await count('budget_warning')).toBe(1);
    await send(0.1);
    expect(await count('budget_warning')).toBe(1);
    expect((await getAgent(o, a.id)).status).toBe('active');
    await send(0.5);
    expect(await count('budget_exceeded')).toBe(1);
    const paused = await getAgent(o, a.id);
    expect(paused).toMatchObject({ status: 'paused', pausedBy: 'system:budget' });
    expect(await count('kill_switch_triggered')).toBe(1);
    // Traces of a paused agent are still accepted; no second event this month.
    expect((await send(0.5)).json().accepted).toBe(1);
    expect(await count('budget_exceeded')).toBe(1);
    const budget = (await o.req({ method: 'GET', url: `/api/v1/agents/${a.id}/budget` })).json().data;
    expect(budget).toMatchObject({ currentMonthSpend: 1.7, percentUsed: 170, willExceedBudget: true });
  });

  it('a new month starts spend and budget events over (the budget month follows the injected clock)', async ({ app }) => {
    app.clock.set('2026-01-31T23:59:00Z');
    const o = await createOrg(app);
    const a = await agent(o);
    await o.req({ method: 'PUT', url: `/api/v1/agents/${a.id}/budget`, payload: { monthlyBudgetUsd: 1, budgetAction: 'alert', warningThresholdPct: 50 } });
    const send = (cost: number) => ingest(o, [{ traceId: randomUUID(), agentId: a.agentId, costUsd: cost }]);
    const events = async (type: string) =>
      (await app.database.db.select().from(outboxEvents).where(and(eq(outboxEvents.organizationId, o.orgId), eq(outboxEvents.type, type))))
        .map((e) => (e.data as { month: string }).month)
        .sort();
    const budget = async () => (await o.req({ method: 'GET', url: `/api/v1/agents/${a.id}/budget` })).json().data;

    await send(1.2);
    expect(await events('budget_exceeded')).toEqual(['2026-01']);
    expect(await budget()).toMatchObject({ currentMonthSpend: 1.2, daysRemainingInPeriod: 1 });

    app.clock.advance(2 * 60_000); // 2026-02-01T00:01Z
    expect(await budget()).toMatchObject({ currentMonthSpend: 0, percentUsed: 0, daysRemainingInPeriod: 28 });
    expect((await getAgent(o, a.id)).currentMonthCostUsd).toBe(0);
    await send(0.6);
    expect(await events('budget_warning')).toEqual(['2026-01', '2026-02']);
    expect(await events('budget_exceeded')).toEqual(['2026-01']);
    await send(0.5);
    expect(await events('budget_exceeded')).toEqual(['2026-01', '2026-02']);
    expect((await budget()).currentMonthSpend).toBeCloseTo(1.1, 9);
  });

  it('an agent-scoped key ingests for its own agent only', async ({ org }) => {
    const a = await agent(org);
    const b = await agent(org);
    const key = (await org.req({ method: 'POST', url: `/api/v1/agents/${a.id}/keys`, payload: { name: 'sdk' } })).json().data.key;
    const res = await ingest(org, [
      { traceId: `k-${randomUUID()}` },
      { traceId: `k-${randomUUID()}`, agentUuid: a.id },
      { traceId: `k-${randomUUID()}`, agentId: b.agentId },
    ], key);
    expect(res.statusCode).toBe(202);
    expect(res.json()).toMatchObject({ accepted: 2, failed: 1 });
    expect(res.json().errors[0]).toMatchObject({ index: 2, error: expect.stringMatching(/own agent/) });
  });

  it("traces name agents of the caller's organization only", async ({ org, freshOrg: other }) => {
    const a = await agent(org);
    const res = await ingest(other, [{ traceId: randomUUID(), agentId: a.agentId }, { traceId: randomUUID(), agentUuid: a.id }]);
    expect(res.json()).toMatchObject({ accepted: 0, failed: 2 });
  });

  it('agent stats reflect ingested traces', async ({ org }) => {
    const a = await agent(org);
    await ingest(org, [
      ...[100, 200, 300, 400].map((d) => ({ traceId: randomUUID(), agentId: a.agentId, durationMs: d, costUsd: 0.25 })),
      { traceId: randomUUID(), agentId: a.agentId, status: 'error', durationMs: 1000 },
      { traceId: randomUUID(), agentId: a.agentId, timestamp: new Date(Date.now() - 3 * 86_400_000).toISOString() },
    ]);
    const s = (await org.req({ method: 'GET', url: `/api/v1/agents/${a.id}/stats` })).json().data;
    expect(s.last24h).toMatchObject({ total: 5, success: 4, error: 1, successRate: 0.8, avgDurationMs: 400, totalCostUsd: 1 });
    expect(s.last24h.p95DurationMs).toBeCloseTo(880, 5);
    expect(s.last7d.total).toBe(6);
  });
});

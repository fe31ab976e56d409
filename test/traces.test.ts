import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from './fixture.js';
import { createKey, createOrg, withTestApp, type TestOrg } from './helpers.js';

let a: { id: string; agentId: string };
let b: { id: string; agentId: string };
const ids: Record<string, string> = {};

async function agent(o: TestOrg, env = 'production') {
  const res = await o.req({ method: 'POST', url: '/api/v1/agents', payload: { agentId: `bot-${randomUUID()}`, name: 'Bot', type: 'chatbot', platform: 'custom', environment: env } });
  return res.json().data as { id: string; agentId: string };
}

beforeAll(async ({ app, org }) => {
  a = await agent(org);
  b = await agent(org, 'staging');
  // Midday on the test clock: the traces below fall on one UTC day whatever time the suite runs.
  const now = app.clock.set('2026-03-10T12:00:00Z').now().getTime();
  const at = (minAgo: number) => new Date(now - minAgo * 60_000).toISOString();
  const res = await org.req({
    method: 'POST', url: '/api/v1/traces/ingest',
    payload: {
      traces: [
        { traceId: 'root', agentId: a.agentId, spanType: 'root', spanName: 'handle ticket', timestamp: at(10), sessionId: 's1', durationMs: 500, modelName: 'gpt-4o', input: { question: 'refund for order 66' } },
        { traceId: 'llm', agentId: a.agentId, parentTraceId: 'root', spanType: 'llm_call', spanName: 'classify', timestamp: at(9), sessionId: 's1', durationMs: 200, modelName: 'gpt-4o', promptTokens: 100, completionTokens: 20 },
        { traceId: 'tool', agentId: a.agentId, parentTraceId: 'root', spanType: 'tool_call', spanName: 'lookup order', timestamp: at(8), durationMs: 100, status: 'error', errorMessage: 'database timeout while reading orders' },
        { traceId: 'retry', agentId: a.agentId, parentTraceId: 'tool', spanType: 'tool_call', spanName: 'lookup order retry', timestamp: at(7), durationMs: 90, output: { found: 'invoice paid' } },
        { traceId: 'other', agentId: b.agentId, spanType: 'llm_call', timestamp: at(60 * 30), modelName: 'claude-3-5-haiku', promptTokens: 1000, completionTokens: 1000, environment: 'staging' },
      ],
    },
  });
  expect(res.json().accepted).toBe(5);
  const list = await org.req({ method: 'GET', url: '/api/v1/traces?limit=100' });
  for (const tr of list.json().data) ids[tr.traceId] = tr.id;
});

const get = (o: TestOrg, url: string) => o.req({ method: 'GET', url: `/api/v1${url}` });
const traceIdsOf = (res: { json(): { data: { traceId: string }[] } }) => res.json().data.map((x) => x.traceId);

describe('GET /traces', () => {
  it('lists newest first with meta, and filters by agent, status, environment, session and time', async ({ app, org }) => {
    const all = await get(org, '/traces');
    expect(all.json().meta).toEqual({ total: 5, limit: 50, offset: 0 });
    expect(traceIdsOf(all)).toEqual(['retry', 'tool', 'llm', 'root', 'other']);
    expect(traceIdsOf(await get(org, `/traces?agentId=${b.id}`))).toEqual(['other']);
    expect(traceIdsOf(await get(org, `/traces?agentId=${a.id}&status=error`))).toEqual(['tool']);
    expect(traceIdsOf(await get(org, '/traces?environment=staging'))).toEqual(['other']);
    expect(traceIdsOf(await get(org, '/traces?sessionId=s1'))).toEqual(['llm', 'root']);
    const since = new Date(app.clock.now().getTime() - 60 * 60_000).toISOString();
    expect((await get(org, `/traces?startTime=${encodeURIComponent(since)}`)).json().meta.total).toBe(4);
    expect(traceIdsOf(await get(org, `/traces?endTime=${encodeURIComponent(since)}`))).toEqual(['other']);
    expect(traceIdsOf(await get(org, '/traces?limit=2&offset=1'))).toEqual(['tool', 'llm']);
  });

  it('full-text search covers span names, error messages and input/output text', async ({ org }) => {
    expect(traceIdsOf(await get(org, '/traces?search=timeout'))).toEqual(['tool']);
    expect(traceIdsOf(await get(org, '/traces?search=refund'))).toEqual(['root']);
    expect(traceIdsOf(await get(org, '/traces?search=invoice'))).toEqual(['retry']);
    expect(traceIdsOf(await get(org, `/traces?search=${encodeURIComponent('lookup -retry')}`))).toEqual(['tool']);
    expect((await get(org, `/traces?search=${encodeURIComponent('"unbalanced ( & |')}`)).statusCode).toBe(200);
  });

  it('422 for bad filters; other organizations see nothing', async ({ app, org }) => {
    expect((await get(org, '/traces?status=exploded')).statusCode).toBe(422);
    expect((await get(org, '/traces?agentId=nope')).statusCode).toBe(422);
    const other = await createOrg(app);
    expect((await get(other, '/traces')).json().meta.total).toBe(0);
    for (const url of [`/traces/${ids.root}`, `/traces/${ids.root}/tree`, `/traces/${ids.root}/children`, `/traces/similar/${ids.root}`]) {
      expect((await get(other, url)).statusCode, url).toBe(404);
    }
    expect((await other.req({ method: 'PATCH', url: `/api/v1/traces/${ids.root}/flag`, payload: {} })).statusCode).toBe(404);
  });
});

describe('one trace', () => {
  it('GET /traces/{id} includes relatedTraces by parent or session', async ({ org }) => {
    const res = await get(org, `/traces/${ids.llm}`);
    expect(res.statusCode).toBe(200);
    expect(res.json().data.traceId).toBe('llm');
    expect(res.json().data.relatedTraces.map((x: { traceId: string }) => x.traceId).sort()).toEqual(['root', 'tool']);
    expect((await get(org, `/traces/${randomUUID()}`)).statusCode).toBe(404);
    expect((await get(org, '/traces/not-a-uuid')).statusCode).toBe(404);
  });

  it('tree is the recursive hierarchy; children are the direct ones', async ({ org }) => {
    const tree = (await get(org, `/traces/${ids.root}/tree`)).json().data;
    expect(tree.root.traceId).toBe('root');
    expect(tree.children.map((c: { traceId: string }) => c.traceId)).toEqual(['llm', 'tool']);
    expect(tree.children[1].children.map((c: { traceId: string }) => c.traceId)).toEqual(['retry']);
    expect(tree.children[1].children[0].children).toEqual([]);
    expect(traceIdsOf(await get(org, `/traces/${ids.root}/children`))).toEqual(['llm', 'tool']);
  });

  it('a cyclic parent chain still answers', async ({ freshOrg: o }) => {
    const c = await agent(o);
    await o.req({ method: 'POST', url: '/api/v1/traces/ingest', payload: { traces: [
      { traceId: 'cy-a', agentId: c.agentId, parentTraceId: 'cy-b' }, { traceId: 'cy-b', agentId: c.agentId, parentTraceId: 'cy-a' },
    ] } });
    const list = await get(o, '/traces?limit=100');
    const cyA = list.json().data.find((x: { traceId: string }) => x.traceId === 'cy-a').id;
    const res = await get(o, `/traces/${cyA}/tree`);
    expect(res.statusCode).toBe(200);
    expect(res.json().data.children.map((x: { traceId: string }) => x.traceId)).toEqual(['cy-b']);
  });

  it('flag and unflag are audited', async ({ org }) => {
    const res = await org.req({ method: 'PATCH', url: `/api/v1/traces/${ids.tool}/flag`, payload: { reason: 'looks wrong' } });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ message: expect.any(String), data: { id: ids.tool } });
    expect((await get(org, `/traces/${ids.tool}`)).json().data).toMatchObject({ flagged: true, flagReason: 'looks wrong' });
    await org.req({ method: 'PATCH', url: `/api/v1/traces/${ids.tool}/flag`, payload: { flagged: false } });
    expect((await get(org, `/traces/${ids.tool}`)).json().data).toMatchObject({ flagged: false, flagReason: null });
    const audit = await get(org, `/audit-logs?resourceType=trace&resourceId=${ids.tool}`);
    expect(audit.json().data.map((e: { action: string }) => e.action)).toEqual(['trace.unflag', 'trace.flag']);
  });

  it('similar traces are scored by shared agent, model, status, environment and span type', async ({ org }) => {
    const res = await get(org, `/traces/similar/${ids.llm}?limit=3`);
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body.meta).toEqual({ referenceTraceId: ids.llm, total: 3 });
    expect(body.data[0]).toMatchObject({ traceId: 'root', similarityScore: 0.85 });
    expect(body.data.every((x: { traceId: string }) => x.traceId !== 'llm')).toBe(true);
    expect((await get(org, `/traces/similar/${ids.llm}?limit=51`)).statusCode).toBe(422);
  });
});

describe('stats and export', () => {
  it('GET /traces/stats answers the aggregate object', async ({ org }) => {
    const s = (await get(org, '/traces/stats?hours=1')).json().data;
    expect(s).toMatchObject({ hours: 1, total: 4, byStatus: { success: 3, error: 1 }, errorRate: 0.25 });
    expect(s.p50DurationMs).toBe(150);
    expect(s.byAgent).toEqual([{ agentId: a.id, agentName: 'Bot', total: 4, errors: 1, costUsd: expect.any(Number) }]);
    expect(s.byModel.map((m: { modelName: string }) => m.modelName)).toEqual(['gpt-4o']);
    expect(s.timeseries.reduce((n: number, x: { total: number }) => n + x.total, 0)).toBe(4);
    expect((await get(org, '/traces/stats')).json().data.total).toBe(4);
    const day = (await get(org, '/traces/stats?hours=48')).json().data;
    expect(day.total).toBe(5);
    expect(day.totalTokens).toBe(2120);
  });

  it('exports JSON and CSV, honouring filters', async ({ app, org }) => {
    const json = await get(org, `/traces/export?agentId=${b.id}`);
    expect(json.headers['content-type']).toMatch(/application\/json/);
    expect(json.json().data.map((x: { traceId: string }) => x.traceId)).toEqual(['other']);
    const csv = await get(org, '/traces/export?format=csv&status=error');
    expect(csv.headers['content-type']).toMatch(/text\/csv/);
    const lines = csv.body.trim().split('\n');
    expect(lines[0].startsWith('id,traceId,agentId,parentTraceId,timestamp')).toBe(true);
    expect(lines).toHaveLength(2);
    expect(lines[1]).toContain('database timeout while reading orders');
    const today = app.clock.now().toISOString().slice(0, 10);
    expect((await get(org, `/traces/export?startDate=${today}&endDate=${today}`)).json().data.length).toBeGreaterThanOrEqual(4);
    expect((await get(org, '/traces/export?format=xml')).statusCode).toBe(422);
  });

  it('needs trace:read', async ({ org }) => {
    const k = await createKey(org, { scopes: ['agent:read'] });
    expect((await org.req({ key: k.key, method: 'GET', url: '/api/v1/traces' })).statusCode).toBe(403);
  });
});

describe('totals over large results', () => {
  it('are exact for small results and estimated, flagged, beyond TRACE_COUNT_EXACT_LIMIT', async () => {
    await withTestApp({ TRACE_COUNT_EXACT_LIMIT: '0' }, async (_small, o) => {
      const res = await o.req({ method: 'POST', url: '/api/v1/agents', payload: { agentId: 'b', name: 'B', type: 'chatbot', platform: 'custom', environment: 'production' } });
      expect(res.statusCode).toBe(201);
      await o.req({ method: 'POST', url: '/api/v1/traces/ingest', payload: { traces: Array.from({ length: 6 }, (_, i) => ({ traceId: `e-${i}`, agentId: 'b' })) } });
      const notFull = (await o.req({ method: 'GET', url: '/api/v1/traces?limit=10' })).json().meta;
      expect(notFull).toEqual({ total: 6, limit: 10, offset: 0 });
      const full = (await o.req({ method: 'GET', url: '/api/v1/traces?limit=3' })).json().meta;
      expect(full).toMatchObject({ limit: 3, offset: 0, totalEstimated: true });
      expect(full.total).toBeGreaterThanOrEqual(3);
    });
  });
});

describe('full-text search over many matches', () => {
  it('pages a common term newest first with an estimated total, and a rare one exactly', async ({ freshOrg: o }) => {
    await o.req({ method: 'POST', url: '/api/v1/agents', payload: { agentId: 'c', name: 'C', type: 'chatbot', platform: 'custom', environment: 'production' } });
    const start = Date.UTC(2026, 0, 1);
    for (let b = 0; b < 11; b++) {
      const res = await o.req({
        method: 'POST', url: '/api/v1/traces/ingest',
        payload: { traces: Array.from({ length: 100 }, (_, i) => ({
          traceId: `m-${b * 100 + i}`, agentId: 'c', spanName: `frequent word ${b * 100 + i === 77 ? 'needle' : ''}`,
          timestamp: new Date(start + (b * 100 + i) * 1000).toISOString(),
        })) },
      });
      expect(res.json().accepted).toBe(100);
    }
    const common = (await o.req({ method: 'GET', url: '/api/v1/traces?search=frequent&limit=3' })).json();
    expect(common.data.map((x: { traceId: string }) => x.traceId)).toEqual(['m-1099', 'm-1098', 'm-1097']);
    expect(common.meta).toMatchObject({ limit: 3, offset: 0, totalEstimated: true });
    expect(common.meta.total).toBeGreaterThan(1000);
    const rare = (await o.req({ method: 'GET', url: `/api/v1/traces?search=${encodeURIComponent('frequent needle')}` })).json();
    expect(rare.data.map((x: { traceId: string }) => x.traceId)).toEqual(['m-77']);
    expect(rare.meta).toEqual({ total: 1, limit: 50, offset: 0 });
  });
});

/**
 * The spend counter budget_cap reads (docs/decisions.md, "Spend counter"): versioned values on the
 * shared state keep the newest whatever order writers land in; the counter reads the row once and
 * then follows ingest; parallel batches leave it equal to the row.
 */
import { randomUUID } from 'node:crypto';
import { SpendCounter, type SpendVersion } from '../src/domains/agents/spend-counter.js';
import { memoryState, redisState, type SharedState } from '../src/lib/shared-state.js';
import { describe, expect, it } from './fixture.js';
import type { TestOrg } from './helpers.js';

const states: [string, () => Promise<SharedState>][] = [['memory', async () => memoryState()]];
if (process.env.REDIS_URL) states.push(['redis', () => redisState(process.env.REDIS_URL!)]);

describe.each(states)('putVersioned on the %s state', (_name, make) => {
  it('keeps the newest version whichever write lands last; absent keys read null', async () => {
    const s = await make();
    try {
      const k = `t:${randomUUID()}`;
      expect(await s.getVersioned(k)).toBeNull();
      await s.putVersioned(k, 5, '2026-03 1.5', 60_000);
      await s.putVersioned(k, 3, '2026-03 0.5', 60_000); // a fill that read the row before version 5 committed
      expect(await s.getVersioned(k)).toEqual({ version: 5, value: '2026-03 1.5' });
      await s.putVersioned(k, 6, '2026-03 2', 60_000);
      expect(await s.getVersioned(k)).toEqual({ version: 6, value: '2026-03 2' });
    } finally {
      await s.close();
    }
  });

  it('an entry expires after its TTL, and an older version may then be stored again', async () => {
    const s = await make();
    try {
      const k = `t:${randomUUID()}`;
      await s.putVersioned(k, 9, 'x', 30);
      await new Promise((r) => setTimeout(r, 80));
      expect(await s.getVersioned(k)).toBeNull();
      await s.putVersioned(k, 2, 'y', 60_000);
      expect(await s.getVersioned(k)).toEqual({ version: 2, value: 'y' });
    } finally {
      await s.close();
    }
  });
});

describe('SpendCounter', () => {
  const NOW = new Date('2026-03-10T12:00:00Z');
  const row = (spend: number, seq: number, month = '2026-03'): SpendVersion => ({ agentId: 'a1', month, spend, seq });
  const counting = (current: () => SpendVersion | null) => {
    const calls = { n: 0 };
    return { calls, reader: async () => (calls.n++, current()) };
  };

  it('reads the row once, then the counter that ingest moves; an older fill never hides a newer accrual', async () => {
    let r: SpendVersion | null = row(1, 1);
    const { calls, reader } = counting(() => r);
    const c = new SpendCounter(memoryState(), reader, true);
    expect(await c.read('o', 'a1', NOW)).toBe(1);
    expect(await c.read('o', 'a1', NOW)).toBe(1);
    expect(calls.n).toBe(1);
    r = row(3, 2);
    await c.store('o', [row(3, 2)]);
    await c.store('o', [row(1, 1)]); // a late write of the older version
    expect(await c.read('o', 'a1', NOW)).toBe(3);
    expect(calls.n).toBe(1);
  });

  it("spend of another month reads as 0, as the row's does", async () => {
    const c = new SpendCounter(memoryState(), async () => row(7, 4, '2026-02'), true);
    expect(await c.read('o', 'a1', NOW)).toBe(0);
    expect(await c.read('o', 'a1', new Date('2026-02-27T00:00:00Z'))).toBe(7);
  });

  it('without a state every writer shares, every read goes to the row', async () => {
    let r = row(1, 1);
    const { calls, reader } = counting(() => r);
    const c = new SpendCounter(memoryState(), reader, false);
    await c.read('o', 'a1', NOW);
    r = row(2, 2); // another instance's accrual: this one never hears of it
    expect(await c.read('o', 'a1', NOW)).toBe(2);
    expect(calls.n).toBe(2);
  });

  it('a stored value that is not a spend is ignored: the row is read', async () => {
    const state = memoryState();
    await state.putVersioned('spend:o:a1', 99, 'garbage', 60_000);
    const c = new SpendCounter(state, async () => row(6, 1), true);
    expect(await c.read('o', 'a1', NOW)).toBe(6);
  });

  it('reads the row when the shared state fails (budgets never turn off)', async () => {
    const broken: SharedState = { ...memoryState(), getVersioned: async () => Promise.reject(new Error('down')), putVersioned: async () => Promise.reject(new Error('down')) };
    const c = new SpendCounter(broken, async () => row(4, 1), true);
    expect(await c.read('o', 'a1', NOW)).toBe(4);
  });
});

describe('the counter through ingest', () => {
  const agent = async (o: TestOrg) => {
    const res = await o.req({ method: 'POST', url: '/api/v1/agents', payload: { agentId: `a-${randomUUID()}`, name: 'a', type: 'chatbot', platform: 'openai', environment: 'production' } });
    return res.json().data as { id: string; agentId: string };
  };

  it('8 parallel batches leave the counter equal to the row; a re-sent trace moves both by its difference', async ({ app, freshOrg: o }) => {
    app.clock.set('2026-03-10T12:00:00Z');
    const a = await agent(o);
    const spend = () => app.container.services.agents.monthSpend(o.orgId, a.id);
    expect(await spend()).toBe(0); // fills the counter from the row
    const batches = Array.from({ length: 8 }, (_, b) => Array.from({ length: 25 }, (_, i) => ({ traceId: `p-${b}-${i}`, agentId: a.agentId, costUsd: 0.01 })));
    const results = await Promise.all(batches.map((traces) => o.req({ method: 'POST', url: '/api/v1/traces/ingest', payload: { traces } })));
    expect(results.map((r) => r.statusCode)).toEqual(Array(8).fill(202));
    const row = async () => (await o.req({ method: 'GET', url: `/api/v1/agents/${a.id}` })).json().data.currentMonthCostUsd as number;
    expect(await row()).toBe(2);
    expect(await spend()).toBe(2);
    await o.req({ method: 'POST', url: '/api/v1/traces/ingest', payload: { traces: [{ traceId: 'p-0-0', agentId: a.agentId, costUsd: 0.26 }] } });
    expect(await row()).toBe(2.25);
    expect(await spend()).toBe(2.25);
  });
});

/**
 * GET /traces latency over 1,000,000 traces on PostgreSQL: filtered by agent and status, and a
 * full-text search. p50/p95 through HTTP next to the same SQL run directly through the same driver
 * in the same run. Needs DATABASE_URL (a database it may fill). Usage: npm run bench:traces
 */
import pg from 'pg';
import { startChild, pct } from './child.js';

const N = Number(process.env.BENCH_TRACES ?? 1_000_000);
const RUNS = 100;
const url = process.env.DATABASE_URL;
if (!url) {
  console.log('bench:traces needs DATABASE_URL (PostgreSQL); skipped.');
  process.exit(0);
}

const app = await startChild('app', {});
const base = `http://127.0.0.1:${app.info.port}/api/v1`;
const headers = { 'content-type': 'application/json', 'x-api-key': app.info.key! };
const client = new pg.Client({ connectionString: url });
await client.connect();
try {
  const agentIds: string[] = [];
  for (let i = 0; i < 10; i++) {
    const res = await fetch(`${base}/agents`, {
      method: 'POST', headers,
      body: JSON.stringify({ agentId: `q-bot-${i}`, name: `Bot ${i}`, type: 'chatbot', platform: 'custom', environment: 'production' }),
    });
    agentIds.push(((await res.json()) as { data: { id: string } }).data.id);
  }
  const orgId = app.info.orgId!;
  const t0 = performance.now();
  const CHUNK = 100_000;
  for (let from = 0; from < N; from += CHUNK) {
    await client.query(
      // Ids have no column default (docs/decisions.md): bench seed rows take random ones.
      `insert into traces (id, organization_id, trace_id, agent_id, timestamp, duration_ms, status, model_name, prompt_tokens,
         completion_tokens, total_tokens, cost_usd, environment, span_type, span_name, session_id, error_message, input, output)
       select gen_random_uuid(), $1, 'q-' || g, ($2::uuid[])[1 + (g % 11) % 10], now() - (g % 2592000) * interval '1 second', 50 + g % 950,
         (array['success','success','success','success','success','success','success','error','timeout','success'])[1 + g % 10],
         (array['gpt-4o-mini','gpt-4o','claude-3-5-haiku','gemini-2.0-flash'])[1 + g % 4], 200 + g % 800, 50 + g % 300, 250 + g % 1100, 0.001,
         'production', 'llm_call', 'answer ' || (array['refund','order','invoice','shipping','password','reset','billing','account','delivery','complaint','upgrade','cancel'])[1 + g % 12],
         's-' || (g / 10), case when g % 10 = 7 then 'upstream ' || (array['timeout','overloaded','quota'])[1 + g % 3] || ' from provider' end,
         jsonb_build_object('question', 'customer asks about ' || (array['refund','order','invoice','shipping','password','reset','billing','account','delivery','complaint','upgrade','cancel'])[1 + (g * 7) % 12] || ' ticket ' || g),
         jsonb_build_object('answer', 'resolved')
       from generate_series($3::int, $4::int) g`,
      [orgId, agentIds, from + 1, Math.min(from + CHUNK, N)],
    );
  }
  // Steady state: autovacuum keeps the visibility map current on an insert-mostly table.
  await client.query('vacuum analyze traces');
  console.log(`seeded ${N.toLocaleString('en')} traces in ${((performance.now() - t0) / 1000).toFixed(1)} s\n`);

  // The baseline runs the statements the API runs for a full first page, directly on the driver:
  // the page, the planner's estimate, and an exact count when the estimate is small.
  const shapes: Array<{ name: string; qs: string; where: string; params: unknown[] }> = [
    { name: 'agentId + status', qs: `agentId=${agentIds[3]}&status=error`, where: `organization_id = $1 and agent_id = $2 and status = 'error'`, params: [orgId, agentIds[3]] },
    { name: 'agentId', qs: `agentId=${agentIds[5]}`, where: `organization_id = $1 and agent_id = $2`, params: [orgId, agentIds[5]] },
    { name: 'full-text "overloaded"', qs: 'search=overloaded', where: `organization_id = $1 and search_vector @@ websearch_to_tsquery('simple', 'overloaded')`, params: [orgId] },
    { name: 'full-text "ticket 4242"', qs: `search=${encodeURIComponent('ticket 4242')}`, where: `organization_id = $1 and search_vector @@ websearch_to_tsquery('simple', 'ticket 4242')`, params: [orgId] },
  ];
  const direct = async (where: string, params: unknown[]) => {
    if (where.includes('search_vector')) {
      await client.query('begin');
      await client.query('set local enable_seqscan = off');
      await client.query('set local enable_indexscan = off');
      const n = (await client.query(`select count(*)::int as n from (select 1 from traces where ${where} limit 1001) s`, params)).rows[0].n;
      if (n <= 1000) await client.query(`select * from traces where ${where} order by timestamp desc, id desc limit 50`, params);
      await client.query('commit');
      if (n <= 1000) return;
      await client.query(`select * from traces where ${where} order by timestamp desc, id desc limit 50`, params);
      await client.query(`explain (format json) select 1 from traces where ${where}`, params);
      return;
    }
    const rows = await client.query(`select * from traces where ${where} order by timestamp desc, id desc limit 50`, params);
    if (rows.rowCount! < 50) return;
    const plan = await client.query(`explain (format json) select 1 from traces where ${where}`, params);
    if (plan.rows[0]['QUERY PLAN'][0].Plan['Plan Rows'] <= 10_000) await client.query(`select count(*) from traces where ${where}`, params);
  };
  console.log('shape                      matches (~ estimate)    API p50 / p95 ms     SQL p50 / p95 ms   p95 ratio API/SQL');
  for (const s of shapes) {
    const api: number[] = [];
    const raw: number[] = [];
    let total = 0;
    let estimated = false;
    for (let i = 0; i < RUNS + 10; i++) {
      const t = performance.now();
      const res = await fetch(`${base}/traces?${s.qs}`, { headers });
      const body = (await res.json()) as { meta: { total: number; totalEstimated?: boolean } };
      if (i >= 10) api.push(performance.now() - t);
      total = body.meta.total;
      estimated = body.meta.totalEstimated === true;
      const r = performance.now();
      await direct(s.where, s.params);
      if (i >= 10) raw.push(performance.now() - r);
    }
    api.sort((a, b) => a - b);
    raw.sort((a, b) => a - b);
    console.log(
      `${s.name.padEnd(26)} ${(estimated ? '~' : '') + String(total)}`.padEnd(36) + `   ${pct(api, 50).toFixed(1).padStart(7)} / ${pct(api, 95).toFixed(1).padStart(6)}     ${pct(raw, 50).toFixed(1).padStart(6)} / ${pct(raw, 95).toFixed(1).padStart(6)}   ${(pct(api, 95) / pct(raw, 95)).toFixed(2)}`,
    );
  }
  console.log('\ntarget: API p95 < 50 ms on PostgreSQL');

  // Export: an agent's ~90,000 traces, then all of them, streamed while the server's memory is
  // sampled: flat memory means the peak does not grow with the size of the export.
  console.log('\nexport                     rows      MB   seconds   server heap before -> peak MB   rss before -> peak MB');
  for (const [format, filter] of [['csv', `&agentId=${agentIds[5]}`], ['json', `&agentId=${agentIds[5]}`], ['csv', '']]) {
    const mem = () => app.ask<{ rss: number; heapUsed: number }>({ cmd: 'mem' });
    const before = await mem();
    let peak = before;
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        const m = await mem();
        peak = { rss: Math.max(peak.rss, m.rss), heapUsed: Math.max(peak.heapUsed, m.heapUsed) };
        await new Promise((r) => setTimeout(r, 50));
      }
    })();
    const started = performance.now();
    const res = await fetch(`${base}/traces/export?format=${format}${filter}`, { headers });
    let bytes = 0;
    let newlines = 0;
    for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
      bytes += chunk.length;
      for (const b of chunk) if (b === 10) newlines++;
    }
    sampling = false;
    await sampler;
    const mb = (n: number) => (n / 1024 / 1024).toFixed(0);
    const rows = format === 'csv' ? newlines - 1 : NaN;
    console.log(
      `${(format + (filter ? ' agent' : ' all')).padEnd(10)} ${String(Number.isNaN(rows) ? '(one line)' : rows).padStart(16)} ${mb(bytes).padStart(7)} ${((performance.now() - started) / 1000).toFixed(1).padStart(9)}   ${mb(before.heapUsed).padStart(10)} -> ${mb(peak.heapUsed).padEnd(12)} ${mb(before.rss).padStart(10)} -> ${mb(peak.rss)}`,
    );
  }

} finally {
  await client.end();
  await app.stop();
}

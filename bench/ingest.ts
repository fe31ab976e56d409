/**
 * Ingest throughput: 100-item batches from 4 concurrent clients against POST /traces/ingest, next to
 * a raw multi-row INSERT of the same rows through the same driver in the same run (the ratio).
 * Runs on PGlite, and on PostgreSQL when DATABASE_URL is set. Usage: npm run bench:ingest
 */
import { itemBatches } from './data.js';
import { startChild } from './child.js';

const BATCH = 100;
const CONCURRENCY = 4;
const BATCHES = Number(process.env.BENCH_BATCHES ?? 300);
const WARMUP = 10;

async function run(label: string, env: Record<string, string | undefined>) {
  const app = await startChild('app', env);
  const base = `http://127.0.0.1:${app.info.port}/api/v1`;
  const headers = { 'content-type': 'application/json', 'x-api-key': app.info.key! };
  try {
    const reg = await fetch(`${base}/agents`, {
      method: 'POST', headers,
      body: JSON.stringify({ agentId: 'bench-bot', name: 'Bench bot', type: 'autonomous', platform: 'custom', environment: 'production' }),
    });
    const agent = (await reg.json()) as { data: { id: string } };
    const send = async (bodies: string[]) => {
      let next = 0;
      let failed = 0;
      const started = performance.now();
      await Promise.all(
        Array.from({ length: CONCURRENCY }, async () => {
          while (next < bodies.length) {
            const res = await fetch(`${base}/traces/ingest`, { method: 'POST', headers, body: bodies[next++] });
            const out = (await res.json()) as { accepted?: number; failed?: number };
            if (res.status !== 202 || out.failed) failed += 1;
          }
        }),
      );
      if (failed) throw new Error(`${failed} ingest requests failed`);
      return performance.now() - started;
    };
    const bodies = (prefix: string, n: number) => itemBatches(prefix, n, BATCH, 'bench-bot').map((traces) => JSON.stringify({ traces }));
    await send(bodies('warm', WARMUP));
    const apiMs = await send(bodies('api', BATCHES));
    const raw = await app.ask<{ ms: number }>({ cmd: 'raw-insert', agentUuid: agent.data.id, prefix: 'raw', batches: BATCHES, batchSize: BATCH, concurrency: CONCURRENCY });
    const n = BATCHES * BATCH;
    const apiRate = n / (apiMs / 1000);
    const rawRate = n / (raw.ms / 1000);
    console.log(
      `${label.padEnd(11)} ingest API ${Math.round(apiRate).toLocaleString('en').padStart(8)} traces/s   raw INSERT ${Math.round(rawRate).toLocaleString('en').padStart(8)} rows/s   ratio ${(apiRate / rawRate).toFixed(2)}   (${n.toLocaleString('en')} traces, ${BATCH}/batch, ${CONCURRENCY} clients)`,
    );
    return { apiRate, ratio: apiRate / rawRate };
  } finally {
    await app.stop();
  }
}

console.log('POST /traces/ingest throughput vs a raw multi-row INSERT of the same rows (same driver, same run)\n');
await run('PGlite', { DATABASE_URL: '', REDIS_URL: '' });
if (process.env.DATABASE_URL) {
  const pg = await run('PostgreSQL', {});
  console.log(`\nPostgreSQL: ${Math.round(pg.apiRate).toLocaleString('en')} traces/s (target >= 10,000), ratio ${pg.ratio.toFixed(2)} (target >= 0.5)`);
} else {
  console.log('\n(set DATABASE_URL to also measure PostgreSQL)');
}

/**
 * Webhook delivery: events per second delivered to a local receiver with 1, 10 and 100 active
 * webhooks, and the latency from an API change (PATCH /agents/{id}) to the receiver getting its event
 * at a paced 100 events/s (p50/p99). The real app with its job runner (as `npm start` runs it), PGlite
 * in memory or DATABASE_URL. Baseline in the same run: the same receiver and agent, the body POSTed
 * straight after each PATCH (what a synchronous, unqueued, unsigned sender would cost).
 * Usage: npm run bench:webhooks [-- EVENTS]. Figures in docs/decisions.md ("Webhooks").
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { startBenchApp } from './start-app.js';

const EVENTS = Number(process.argv[2] ?? 300);
const RATE = Number(process.env.BENCH_RATE ?? 100);
const LATENCY_SECONDS = Number(process.env.BENCH_LATENCY_SECONDS ?? 10);
const MAX_IN_FLIGHT = 10;
let inFlight = 0;

/**
 * Calls `send` n times paced at RATE per second, with at most MAX_IN_FLIGHT outstanding: beyond what
 * the API sustains the pace drops, which the callers report as the rate achieved.
 */
async function paced(n: number, send: () => Promise<unknown>): Promise<void> {
  const start = performance.now();
  const pending: Promise<unknown>[] = [];
  for (let i = 0; i < n; i++) {
    const wait = start + (i * 1000) / RATE - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    while (inFlight >= MAX_IN_FLIGHT) await new Promise((r) => setTimeout(r, 1));
    inFlight++;
    pending.push(send().finally(() => inFlight--));
  }
  await Promise.all(pending);
}

const bench = await startBenchApp({
  jobs: true,
  env: {
    LOG_LEVEL: 'silent',
    RATE_LIMIT_CONTROL_PER_MINUTE: '100000000',
    ALLOW_PRIVATE_TARGETS: 'true',
    JOBS_CONCURRENCY: process.env.JOBS_CONCURRENCY ?? '20',
  },
});
const { app, key } = bench;
const headers = { 'x-api-key': key };

// The receiver: counts deliveries and notes when each sequence number first arrived.
let received = 0;
const firstSeen = new Map<number, number>();
let onCount: (() => void) | undefined;
const server = http.createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    received++;
    const seq = Number(JSON.parse(Buffer.concat(chunks).toString()).data?.agent?.description ?? NaN);
    if (!firstSeen.has(seq)) firstSeen.set(seq, performance.now());
    res.end('ok');
    onCount?.();
  });
});
server.keepAliveTimeout = 60_000;
await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
const waitReceived = (n: number) =>
  new Promise<void>((resolve) => {
    if (received >= n) return resolve();
    onCount = () => received >= n && resolve();
  });

const inject = async (method: 'POST' | 'PATCH' | 'DELETE', path: string, payload?: object) => {
  const r = await app.inject({ method, url: `/api/v1${path}`, headers, payload });
  if (r.statusCode >= 300) throw new Error(`${method} ${path}: ${r.statusCode} ${r.body}`);
  return r.statusCode === 204 ? null : r.json().data;
};
const agent = await inject('POST', '/agents', { agentId: 'bench-agent', name: 'Bench agent', type: 'chatbot', platform: 'custom', environment: 'development' });
let seq = 0;
const change = () => inject('PATCH', `/agents/${agent.id}`, { description: String(++seq) });

async function withHooks<T>(n: number, fn: () => Promise<T>): Promise<T> {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) ids.push((await inject('POST', '/webhooks', { name: `bench-${i}`, url, eventTypes: ['agent_updated'] })).id);
  try {
    return await fn();
  } finally {
    for (const id of ids) await inject('DELETE', `/webhooks/${id}`);
  }
}

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
};
const r1 = (x: number) => Math.round(x * 10) / 10;

const engine = process.env.DATABASE_URL ? 'postgres' : 'pglite';
console.log(`engine=${engine} events=${EVENTS}`);

// Throughput: EVENTS changes (10 at a time), timed until every webhook has received every event.
for (const hooks of process.env.BENCH_LATENCY_ONLY ? [] : [1, 10, 100]) {
  const events = hooks === 100 ? Math.max(20, Math.floor(EVENTS / 5)) : EVENTS;
  await withHooks(hooks, async () => {
    received = 0;
    const t0 = performance.now();
    let issued = 0;
    await Promise.all(Array.from({ length: 10 }, async () => {
      while (issued < events) {
        issued++;
        await change();
      }
    }));
    const apiMs = performance.now() - t0;
    await waitReceived(events * hooks);
    const ms = performance.now() - t0;
    console.log(`webhooks=${hooks} events=${events} deliveries=${events * hooks} api=${r1(apiMs)}ms total=${r1(ms)}ms events/s=${r1((events * 1000) / ms)} deliveries/s=${r1((events * hooks * 1000) / ms)}`);
  });
}

// Baseline throughput: the same changes, each followed by one raw POST of a body to the receiver.
{
  received = 0;
  const agentHttp = new http.Agent({ keepAlive: true, maxSockets: 10 });
  const post = (body: string) =>
    new Promise<void>((resolve, reject) => {
      const req = http.request(url, { method: 'POST', agent: agentHttp, headers: { 'content-type': 'application/json' } }, (res) => {
        res.resume();
        res.on('end', () => resolve());
      });
      req.on('error', reject);
      req.end(body);
    });
  const t0 = performance.now();
  let issued = 0;
  await Promise.all(Array.from({ length: 10 }, async () => {
    while (issued < EVENTS) {
      issued++;
      const a = await change();
      await post(JSON.stringify({ type: 'agent_updated', data: { agent: a } }));
    }
  }));
  const ms = performance.now() - t0;
  console.log(`baseline raw POST after each change: events=${EVENTS} total=${r1(ms)}ms events/s=${r1((EVENTS * 1000) / ms)}`);

  // Baseline latency at the same pace: change, then POST at once.
  const lat: number[] = [];
  const n = RATE * LATENCY_SECONDS;
  const start = performance.now();
  await paced(n, async () => {
    const t = performance.now();
    const a = await change();
    await post(JSON.stringify({ type: 'agent_updated', data: { agent: a } }));
    lat.push(performance.now() - t);
  });
  console.log(`baseline latency at ${RATE}/s: p50=${r1(pct(lat, 50))}ms p99=${r1(pct(lat, 99))}ms (achieved ${r1((n * 1000) / (performance.now() - start))} changes/s)`);
  agentHttp.destroy();
}

// Latency: one webhook, changes paced at RATE per second; from just before the PATCH to the receiver.
await withHooks(1, async () => {
  received = 0;
  firstSeen.clear();
  const sentAt = new Map<number, number>();
  const committedAt = new Map<number, number>();
  const n = RATE * LATENCY_SECONDS;
  const start = performance.now();
  await paced(n, () => {
    const s = seq + 1;
    sentAt.set(s, performance.now());
    return change().then(() => committedAt.set(s, performance.now()));
  });
  await waitReceived(n);
  const lat = [...sentAt].map(([s, t]) => firstSeen.get(s)! - t).filter((x) => Number.isFinite(x));
  const afterCommit = [...committedAt].map(([s, t]) => firstSeen.get(s)! - t).filter((x) => Number.isFinite(x));
  const achieved = (n * 1000) / (performance.now() - start);
  console.log(`latency at ${RATE}/s (1 webhook, ${n} events): from the PATCH p50=${r1(pct(lat, 50))}ms p99=${r1(pct(lat, 99))}ms max=${r1(Math.max(...lat))}ms; from its response (commit) p50=${r1(pct(afterCommit, 50))}ms p99=${r1(pct(afterCommit, 99))}ms (achieved ${r1(achieved)} events/s end to end)`);
});

server.closeAllConnections();
server.close();
await bench.close();
process.exit(0);

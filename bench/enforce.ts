/**
 * `npm run bench:enforce`: POST /policies/enforce over HTTP against one organization with 50 active
 * policies of mixed types (bench/enforce-policies.ts) and a ~2 KB request, next to a bare
 * authenticated route of the same server (same auth, rate limiting and body parsing, a constant
 * answer), in the same run, with autocannon:
 *  1. saturation: requests/s and p50/p99 of each, and their ratio (target >= 0.5);
 *  2. a fixed rate of BENCH_RATE (1,000) requests/s on enforce (autocannon `overallRate`): p99 (target < 10 ms),
 *     then on the bare route at the same rate: the tail the machine itself adds (autocannon, the
 *     server, PostgreSQL and Redis share its cores);
 *  3. the route's own Server-Timing split (agent read, policy evaluation) over sequential requests;
 *  and what stalled the server during the fixed-rate run (event-loop delay, GC pauses).
 * On PGlite, then on PostgreSQL when DATABASE_URL is set (with Redis when REDIS_URL is set).
 * Env: BENCH_DURATION (s, default 10), BENCH_WARMUP (s, 3), BENCH_CONNECTIONS (10), BENCH_RATE (1000).
 * The server runs in a child process (bench/enforce-server.ts). Figures: docs/decisions.md, "Enforce route".
 */
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { enforceBody, POLICIES } from './enforce-policies.js';

const env = process.env;
const DURATION = Number(env.BENCH_DURATION ?? 10);
const WARMUP = Number(env.BENCH_WARMUP ?? 3);
const CONNECTIONS = Number(env.BENCH_CONNECTIONS ?? 10);
const RATE = Number(env.BENCH_RATE ?? 1000);

interface Server {
  port: number;
  key: string;
  db: string;
  cpu(): Promise<number>;
  /** Event-loop delay and GC pauses in the server since the last call. */
  stalls(): Promise<Record<string, number>>;
  stop(): Promise<void>;
}

async function startServer(extraEnv: Record<string, string>): Promise<Server> {
  const entry = fileURLToPath(new URL('./enforce-server.ts', import.meta.url));
  const prof = env.BENCH_PROF ? ['--cpu-prof', `--cpu-prof-dir=${env.BENCH_PROF}`] : [];
  const proc = fork(entry, [], { execArgv: ['--import', 'tsx', ...prof], env: { ...env, ...extraEnv }, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const next = <T>() =>
    new Promise<T>((resolve, reject) => {
      const onExit = (code: number | null) => reject(new Error(`bench server exited with ${code}`));
      proc.once('exit', onExit);
      proc.once('message', (m) => {
        proc.off('exit', onExit);
        resolve(m as T);
      });
    });
  const info = await next<{ port: number; key: string; db: string }>();
  return {
    ...info,
    cpu: async () => {
      const a = next<{ cpu: { user: number; system: number } }>();
      proc.send({ cmd: 'cpu' });
      const { cpu } = await a;
      return (cpu.user + cpu.system) / 1000;
    },
    stalls: async () => {
      const a = next<{ stalls: Record<string, number> }>();
      proc.send({ cmd: 'stalls' });
      return (await a).stalls;
    },
    stop: async () => {
      proc.kill(env.BENCH_PROF ? 'SIGINT' : 'SIGKILL');
      await new Promise((r) => proc.once('exit', r));
    },
  };
}

async function seed(base: string, key: string) {
  const headers = { 'x-api-key': key, 'content-type': 'application/json' };
  const post = async (path: string, body: unknown) => {
    const res = await fetch(`${base}${path}`, { method: 'POST', headers, body: JSON.stringify(body) });
    if (res.status >= 300) throw new Error(`POST ${path}: ${res.status} ${await res.text()}`);
    return (await res.json()) as { data: Record<string, unknown> };
  };
  const agent = (await post('/api/v1/agents', { agentId: 'bench-agent', name: 'bench', type: 'chatbot', platform: 'openai', environment: 'production' })).data;
  for (const p of POLICIES) await post('/api/v1/policies', p);
  const body = JSON.stringify(enforceBody(String(agent.id)));
  const check = await post('/api/v1/policies/enforce', JSON.parse(body));
  if (check.data.evaluatedPolicies !== 50) throw new Error(`expected 50 evaluated policies, got ${JSON.stringify(check.data).slice(0, 300)}`);
  return { body, headers };
}

interface Row {
  name: string;
  rps: number;
  p50: number;
  p99: number;
  non2xx: number;
  cpuPerReq: number;
}

async function run(name: string, server: Server, url: string, body: string, headers: Record<string, string>, extra: Partial<autocannon.Options> = {}): Promise<Row> {
  const opts = { url, method: 'POST' as const, body, headers, connections: CONNECTIONS, ...extra };
  if (WARMUP > 0) await autocannon({ ...opts, duration: WARMUP });
  const cpu0 = await server.cpu();
  const r = await autocannon({ ...opts, duration: DURATION });
  const cpu = (await server.cpu()) - cpu0;
  return { name, rps: r.requests.average, p50: r.latency.p50, p99: r.latency.p99, non2xx: r.non2xx, cpuPerReq: cpu / Math.max(1, r.requests.total) };
}

/** Averages the Server-Timing entries of `n` sequential enforce requests. */
async function timings(url: string, body: string, headers: Record<string, string>, n = 300) {
  const sums = new Map<string, number[]>();
  for (let i = 0; i < n; i++) {
    const res = await fetch(url, { method: 'POST', headers, body });
    await res.arrayBuffer();
    for (const part of (res.headers.get('server-timing') ?? '').split(',')) {
      const [k, d] = part.trim().split(';dur=');
      if (k && d) (sums.get(k) ?? sums.set(k, []).get(k)!).push(Number(d));
    }
  }
  return [...sums].map(([k, v]) => {
    v.sort((a, b) => a - b);
    return `${k} p50 ${v[Math.floor(v.length / 2)].toFixed(3)} ms, p99 ${v[Math.floor(v.length * 0.99)].toFixed(3)} ms`;
  });
}

async function bench(label: string, extraEnv: Record<string, string>) {
  const server = await startServer(extraEnv);
  try {
    const base = `http://127.0.0.1:${server.port}`;
    const { body, headers } = await seed(base, server.key);
    console.log(`\n${label} (${server.db}): 50 policies, request ${body.length} bytes, ${CONNECTIONS} connections, ${WARMUP} s warm-up + ${DURATION} s`);
    const split = await timings(`${base}/api/v1/policies/enforce`, body, headers);
    const enforce = await run('enforce', server, `${base}/api/v1/policies/enforce`, body, headers);
    const bare = await run('bare route', server, `${base}/api/v1/bench/bare`, body, headers);
    await server.stalls();
    const fixed = await run(`enforce at ${RATE}/s`, server, `${base}/api/v1/policies/enforce`, body, headers, { overallRate: RATE });
    const stalls = await server.stalls();
    const fixedBare = await run(`bare at ${RATE}/s`, server, `${base}/api/v1/bench/bare`, body, headers, { overallRate: RATE });
    console.log('  route'.padEnd(26) + 'req/s'.padStart(9) + 'p50 ms'.padStart(9) + 'p99 ms'.padStart(9) + 'CPU ms/req'.padStart(12) + 'non-2xx'.padStart(9));
    for (const r of [enforce, bare, fixed, fixedBare]) console.log(`  ${r.name.padEnd(24)}${r.rps.toFixed(0).padStart(9)}${String(r.p50).padStart(9)}${String(r.p99).padStart(9)}${r.cpuPerReq.toFixed(3).padStart(12)}${String(r.non2xx).padStart(9)}`);
    const ratio = enforce.rps / bare.rps;
    console.log(`  ratio enforce / bare: ${ratio.toFixed(2)} (target >= 0.5)${ratio >= 0.5 ? '' : '  MISSED'}`);
    console.log(`  p99 at ${RATE}/s: ${fixed.p99} ms (target < 10 ms)${fixed.p99 < 10 ? '' : '  MISSED'}; achieved ${fixed.rps.toFixed(0)}/s; the bare route at the same rate: p99 ${fixedBare.p99} ms`);
    console.log(`  server during the ${RATE}/s run (warm-up included): event-loop delay p99 ${stalls.loopP99Ms} ms, max ${stalls.loopMaxMs} ms; ${stalls.gcCount} GC pauses, ${stalls.gcTotalMs} ms in all, longest ${stalls.gcMaxMs} ms (${stalls.gcMajor} full, longest ${stalls.gcMajorMaxMs} ms); heap ${stalls.heapMb} MB`);
    console.log(`  Server-Timing over 300 sequential requests: ${split.join('; ')}`);
  } finally {
    await server.stop();
  }
}

// BENCH_SKIP_PGLITE=1: only the DATABASE_URL run.
if (!env.BENCH_SKIP_PGLITE) await bench('PGlite', { DATABASE_URL: '', REDIS_URL: '' });
if (env.DATABASE_URL) await bench(env.REDIS_URL ? 'PostgreSQL + Redis' : 'PostgreSQL', {});

/**
 * `npm run bench`: requests/second and p99 latency of an authenticated list route of the application
 * (GET /api/v1/teams by default, with ~20 rows seeded through the API) against a bare Fastify route
 * answering the same JSON, on the same machine in the same run, with autocannon.
 *
 * Each server runs alone in a child process (bench/server.ts) on a random loopback port; autocannon
 * runs here. The application runs on PGlite (in memory), and also on PostgreSQL (+ Redis when
 * REDIS_URL is set) when DATABASE_URL is set. See bench/README.md for the knobs.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';

const env = process.env;
const num = (v: string | undefined, def: number) => (v && Number.isFinite(Number(v)) ? Number(v) : def);
const PATH = env.BENCH_PATH ?? '/api/v1/teams';
const SEED = num(env.BENCH_SEED_COUNT, 20);
const CONNECTIONS = num(env.BENCH_CONNECTIONS, 10);
const DURATION = num(env.BENCH_DURATION, 8);
const WARMUP = num(env.BENCH_WARMUP, 2);
const TARGET = 0.5;
const RESOURCE = PATH.split('?')[0].split('/').filter(Boolean).pop() ?? 'route';
const SERVER_ENTRY = fileURLToPath(new URL('./server.ts', import.meta.url));

/** A failure worth a one-line message rather than a stack trace. */
class BenchError extends Error {}

interface Server {
  port: number;
  info: Record<string, unknown>;
  /** CPU time (user + system, microseconds) the server process has used so far. */
  cpu(): Promise<number>;
  stop(): Promise<void>;
}

interface Row {
  name: string;
  rps: number;
  p50: number;
  p99: number;
  max: number;
  non2xx: number;
  errors: number;
  /** Server process CPU per request (µs): robust to other load on the machine, unlike req/s. */
  cpuPerReq: number;
}

/** Starts bench/server.ts in a child process and waits for its `{ port, ... }` line. */
async function startServer(mode: 'app' | 'bare', extraEnv: Record<string, string>): Promise<Server> {
  const child: ChildProcess = spawn(process.execPath, ['--import', 'tsx', SERVER_ENTRY], {
    env: { ...env, ...extraEnv, BENCH_MODE: mode, BENCH_PATH: PATH },
    stdio: ['ignore', 'pipe', 'inherit', 'ipc'],
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const line = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${mode} server did not start within 120 s`)), 120_000);
    const rl = createInterface({ input: child.stdout! });
    rl.once('line', (l) => {
      clearTimeout(timer);
      resolve(l);
    });
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`${mode} server exited with code ${code} before listening`));
    });
  });
  child.stdout!.resume();
  const info = JSON.parse(line) as Record<string, unknown> & { port: number };
  return {
    port: info.port,
    info,
    cpu: () =>
      new Promise<number>((resolve) => {
        child.once('message', (m) => {
          const c = (m as { cpu: NodeJS.CpuUsage }).cpu;
          resolve(c.user + c.system);
        });
        child.send('cpu');
      }),
    async stop() {
      if (child.exitCode === null) child.kill('SIGTERM');
      const killer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(killer);
    },
  };
}

type Schema = { $ref?: string; type?: string | string[]; enum?: unknown[]; anyOf?: Schema[]; properties?: Record<string, Schema>; required?: string[]; minimum?: number; maxLength?: number };

/** A body for POST on the benchmarked path, built from the OpenAPI document (BENCH_SEED_BODY overrides; {i} is the index). */
function seedBodies(doc: { paths: Record<string, Record<string, { requestBody?: { content?: Record<string, { schema?: Schema }> } }>>; components?: { schemas?: Record<string, Schema> } }): ((i: number) => unknown) | null {
  if (env.BENCH_SEED_BODY) {
    const template = env.BENCH_SEED_BODY;
    return (i) => JSON.parse(template.replaceAll('{i}', String(i)));
  }
  const resolve = (s: Schema | undefined): Schema => {
    let r = s ?? {};
    while (r.$ref) r = doc.components?.schemas?.[r.$ref.replace('#/components/schemas/', '')] ?? {};
    return r;
  };
  const root = resolve(doc.paths[PATH]?.post?.requestBody?.content?.['application/json']?.schema);
  if (!root.properties) return null;
  const value = (name: string, s0: Schema, i: number): unknown => {
    const s = resolve(s0.anyOf?.find((b) => resolve(b).type !== 'null') ?? s0);
    if (s.enum) return s.enum[0];
    const type = Array.isArray(s.type) ? s.type[0] : s.type;
    if (type === 'integer' || type === 'number') return s.minimum ?? 1;
    if (type === 'boolean') return false;
    if (type === 'array') return [];
    if (type === 'object') return {};
    return `bench ${name} ${i}`.slice(0, s.maxLength ?? 100);
  };
  return (i) => {
    const body: Record<string, unknown> = {};
    for (const r of root.required ?? []) body[r] = value(r, root.properties![r] ?? {}, i);
    if (root.properties!.description && body.description === undefined) body.description = `Seeded by npm run bench (${i})`;
    return body;
  };
}

/** Seeds rows through the API with the admin key and answers the body of one GET of the benchmarked path. */
async function prepare(base: string, key: string): Promise<{ seeded: number; body: string; items: number | null }> {
  const headers = { 'x-api-key': key, 'content-type': 'application/json' };
  const doc = (await (await fetch(`${base}/api-docs.json`)).json()) as Parameters<typeof seedBodies>[0];
  const make = seedBodies(doc);
  let seeded = 0;
  if (make && SEED > 0) {
    for (let i = 0; i < SEED; i++) {
      const res = await fetch(`${base}${PATH}`, { method: 'POST', headers, body: JSON.stringify(make(i)) });
      if (res.status >= 300) throw new BenchError(`seeding POST ${PATH} answered ${res.status}: ${await res.text()} (set BENCH_SEED_BODY)`);
      seeded += 1;
    }
  } else console.warn(`no POST ${PATH} in /api-docs.json: nothing seeded (set BENCH_SEED_BODY to seed)`);
  const res = await fetch(`${base}${PATH}`, { headers: { 'x-api-key': key } });
  const body = await res.text();
  if (res.status === 404 && !make) {
    throw new BenchError(`GET ${PATH} answered 404: the route does not exist in this build. Try BENCH_PATH=/api/v1/api-keys.`);
  }
  if (res.status !== 200) throw new BenchError(`GET ${PATH} answered ${res.status}: ${body.slice(0, 300)}`);
  const data = (JSON.parse(body) as { data?: unknown }).data;
  return { seeded, body, items: Array.isArray(data) ? data.length : null };
}

/** A warm-up run (discarded), then the measured run, with the server's CPU time over it. */
async function measure(name: string, server: Server, url: string, headers: Record<string, string>): Promise<Row> {
  if (WARMUP > 0) await autocannon({ url, connections: CONNECTIONS, duration: WARMUP, headers });
  const cpu0 = await server.cpu();
  const r = await autocannon({ url, connections: CONNECTIONS, duration: DURATION, headers });
  const cpu = (await server.cpu()) - cpu0;
  return {
    name,
    rps: r.requests.average,
    p50: r.latency.p50,
    p99: r.latency.p99,
    max: r.latency.max,
    non2xx: r.non2xx,
    errors: r.errors,
    cpuPerReq: cpu / Math.max(1, r.requests.total),
  };
}

/** Benchmarks the application on one database; answers its row and the recorded response body. */
async function benchApp(name: string, extraEnv: Record<string, string>): Promise<{ row: Row; body: string; note: string }> {
  const server = await startServer('app', {
    LOG_LEVEL: 'silent',
    RATE_LIMIT_CONTROL_PER_MINUTE: '100000000',
    HOST: '127.0.0.1',
    ...extraEnv,
  });
  try {
    const base = `http://127.0.0.1:${server.port}`;
    const key = String(server.info.key);
    const { seeded, body, items } = await prepare(base, key);
    const note = `${name}: ${String(server.info.database)}, cache ${String(server.info.cache)}; seeded ${seeded}, GET answers ${items ?? '?'} items in ${body.length} bytes`;
    console.log(`  ${note}`);
    const row = await measure(name, server, `${base}${PATH}`, { 'x-api-key': key });
    return { row, body, note };
  } finally {
    await server.stop();
  }
}

/** Benchmarks the bare Fastify route answering `body`. */
async function benchBare(body: string): Promise<Row> {
  const dir = mkdtempSync(join(tmpdir(), 'agov-bench-'));
  const file = join(dir, 'body.json');
  writeFileSync(file, body);
  const server = await startServer('bare', { BENCH_BARE_BODY_FILE: file });
  try {
    return await measure('bare Fastify', server, `http://127.0.0.1:${server.port}${PATH}`, {});
  } finally {
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

const f = (n: number, d = 0) => n.toFixed(d);
// autocannon records latency in whole milliseconds.
const ms = (n: number) => (n < 1 ? '<1' : n.toFixed(0));

async function main() {
  console.log(`bench: GET ${PATH}, ${CONNECTIONS} connections, ${WARMUP} s warm-up + ${DURATION} s measured per server, ${SEED} rows seeded`);
  const apps: Row[] = [];
  let pgliteDir: string | undefined;
  if (env.BENCH_PGLITE === 'disk') pgliteDir = mkdtempSync(join(tmpdir(), 'agov-bench-pglite-'));
  let pglite: Awaited<ReturnType<typeof benchApp>>;
  try {
    pglite = await benchApp(pgliteDir ? 'app (PGlite on disk)' : 'app (PGlite)', { DATABASE_URL: '', REDIS_URL: '', ...(pgliteDir ? { BENCH_PGLITE_DIR: pgliteDir } : {}) });
  } finally {
    if (pgliteDir) rmSync(pgliteDir, { recursive: true, force: true });
  }
  apps.push(pglite.row);
  const bare = await benchBare(pglite.body);
  if (env.DATABASE_URL) {
    const name = env.REDIS_URL ? 'app (PostgreSQL + Redis)' : 'app (PostgreSQL)';
    apps.push((await benchApp(name, { DATABASE_URL: env.DATABASE_URL, REDIS_URL: env.REDIS_URL ?? '' })).row);
  }

  const rows = [bare, ...apps];
  const w = Math.max(...rows.map((r) => r.name.length));
  console.log('');
  console.log(
    `${'server'.padEnd(w)}  ${'req/s'.padStart(8)}  ${'vs bare'.padStart(7)}  ${'p50 ms'.padStart(6)}  ${'p99 ms'.padStart(6)}  ${'max ms'.padStart(6)}  ${'CPU µs/req'.padStart(10)}  ${'non-2xx'.padStart(7)}  ${'errors'.padStart(6)}`,
  );
  for (const r of rows) {
    console.log(
      `${r.name.padEnd(w)}  ${f(r.rps).padStart(8)}  ${f(r.rps / bare.rps, 2).padStart(7)}  ${ms(r.p50).padStart(6)}  ${ms(r.p99).padStart(6)}  ${ms(r.max).padStart(6)}  ${f(r.cpuPerReq).padStart(10)}  ${String(r.non2xx).padStart(7)}  ${String(r.errors).padStart(6)}`,
    );
  }
  console.log('(latencies have 1 ms resolution; CPU µs/req is the server process only: PostgreSQL and Redis run elsewhere)');
  console.log('');
  for (const r of rows) if (r.non2xx || r.errors) console.log(`warning: ${r.name} had ${r.non2xx} non-2xx responses and ${r.errors} errors`);
  // The PGlite line comes last: the default deployment, and the figure the target is about.
  for (const r of [...apps.slice(1), apps[0]]) {
    const tag = r === apps[0] ? '' : ` [${r.name}]`;
    console.log(`${RESOURCE}/bare p99${tag}: ${ms(r.p99)} ms vs ${ms(bare.p99)} ms`);
    console.log(`${RESOURCE}/bare throughput ratio${tag}: ${f(r.rps / bare.rps, 2)} (target >= ${TARGET})`);
  }
}

main().catch((err) => {
  console.error(err instanceof BenchError ? `bench: ${err.message}` : err instanceof Error ? (err.stack ?? err.message) : err);
  process.exit(1);
});

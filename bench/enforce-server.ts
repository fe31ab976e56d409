/**
 * Child process of `npm run bench:enforce`: the real application (as the server runs it, jobs
 * included) plus one bare route beside it, `POST /api/v1/bench/bare`, with enforce's own auth
 * config (scope policy:read, the enforce rate-limit class) and body schema, answering a constant:
 * the same authentication, rate limiting, body parsing and validation, no policy work. Reports `{ port, key, orgId }`
 * over IPC; answers `cpu` with its CPU time and `stalls` with its event-loop delay and GC pauses since the last ask.
 */
import { monitorEventLoopDelay, PerformanceObserver } from 'node:perf_hooks';
import { enforceRequestSchema } from '../src/domains/policies/enforce-schemas.js';
import { startBenchApp } from './start-app.js';

const send = (m: unknown) => process.send!(m);
const CONSTANT = { data: { decision: 'allow', allowed: true, violations: [], warnings: [], evaluatedPolicies: 0, decisionId: '00000000-0000-4000-8000-000000000000', evaluationMs: 0 } };

const b = await startBenchApp({
  jobs: true,
  dataDir: null,
  env: { LOG_LEVEL: 'silent', RATE_LIMIT_CONTROL_PER_MINUTE: '100000000', ENFORCEMENT_RATE_LIMIT_PER_MINUTE: '100000000' },
  // The same body schema as enforce (strict inputs refuse a body where none is declared), no response schema.
  routes: (app) => app.post('/api/v1/bench/bare', { config: { auth: { scope: 'policy:read', role: 'viewer', agentKeys: true, rateLimit: 'enforce' } }, schema: { body: enforceRequestSchema } }, async () => CONSTANT),
});
await b.app.listen({ port: 0, host: '127.0.0.1' });
// Stalls behind a p99: event-loop delay (1 ms resolution) and GC pauses, since the last 'stalls'.
const loop = monitorEventLoopDelay({ resolution: 1 });
loop.enable();
let gc = { count: 0, totalMs: 0, maxMs: 0, majorCount: 0, majorMaxMs: 0 };
new PerformanceObserver((list) => {
  for (const e of list.getEntries()) {
    gc.count++;
    gc.totalMs += e.duration;
    gc.maxMs = Math.max(gc.maxMs, e.duration);
    // detail.kind 2 is a full mark-compact (constants.NODE_PERFORMANCE_GC_MAJOR).
    if ((e as unknown as { detail?: { kind?: number } }).detail?.kind === 2) {
      gc.majorCount++;
      gc.majorMaxMs = Math.max(gc.majorMaxMs, e.duration);
    }
  }
}).observe({ entryTypes: ['gc'] });
process.on('message', (m: { cmd: string }) => {
  if (m.cmd === 'cpu') send({ cpu: process.cpuUsage() });
  if (m.cmd === 'stalls') {
    const ms = (ns: number) => Math.round(ns / 1e4) / 100;
    send({ stalls: { loopP99Ms: ms(loop.percentile(99)), loopMaxMs: ms(loop.max), gcCount: gc.count, gcTotalMs: Math.round(gc.totalMs), gcMaxMs: Math.round(gc.maxMs * 10) / 10, gcMajor: gc.majorCount, gcMajorMaxMs: Math.round(gc.majorMaxMs * 10) / 10, heapMb: Math.round(process.memoryUsage().heapUsed / 1e6) } });
    loop.reset();
    gc = { count: 0, totalMs: 0, maxMs: 0, majorCount: 0, majorMaxMs: 0 };
  }
});
process.on('SIGINT', () => void b.close().finally(() => process.exit(0)));
process.on('SIGTERM', () => void b.close().finally(() => process.exit(0)));
send({ port: (b.app.server.address() as { port: number }).port, key: b.key, orgId: b.organizationId, db: b.database.kind });

/**
 * In-process cost of the enforcement decision (src/domains/policies/engine): 50 active policies of
 * mixed types against a ~2 KB enforce request, `decide` timed call by call (p50/p99 in µs over
 * BENCH_ITERATIONS calls after a warm-up), next to a baseline in the same process: the zod parse of
 * the same request (enforceRequestSchema), which the route does anyway. Then the same decision per
 * policy type alone, to show where the time goes. The context answers synchronously (aggregates,
 * grants and window counters from memory), as the route's caches do on a hit. The decision is timed
 * twice: on new text at every call (the scan cache misses: the target is for this path) and on the
 * same request again and again (the cache hits, as an agent resending its conversation).
 * Usage: npm run bench:enforce-engine. Figures in bench/README.md.
 */
import { availableParallelism, loadavg } from 'node:os';
import { getHeapStatistics } from 'node:v8';
import { enforceRequestSchema, type EnforceRequest } from '../src/domains/policies/enforce-schemas.js';
import { compileAll, createHttpValidator, decide, type EngineContext, type PolicyDefinition } from '../src/domains/policies/engine/index.js';
import type { PolicyType } from '../src/domains/policies/rules.js';
import { resetScanCache, scanCacheStats } from '../src/domains/policies/detectors/scan-cache.js';
import { enforceBody, POLICIES } from './enforce-policies.js';

const ITERATIONS = Number(process.env.BENCH_ITERATIONS ?? 20_000);
const WARMUP = Number(process.env.BENCH_WARMUP ?? 10_000);
const AGENT = '11111111-1111-4111-8111-111111111111';

const body = enforceBody(AGENT);
const request: EnforceRequest = enforceRequestSchema.parse(body);

/**
 * The same request with one identifier changed in `input` and in `output` per call: every call is a
 * miss of the scan cache (scan-cache.ts), as a request the service has not seen before. The
 * variants are built before timing.
 */
const variants: EnforceRequest[] = Array.from({ length: ITERATIONS + WARMUP }, (_, i) => ({
  ...request,
  input: { ...(request.input as Record<string, unknown>), customer: { id: `cus_${i}`, plan: 'pro' } },
  output: `${request.output as string} Ref ${i}.`,
}));
const miss = (i: number) => variants[i % variants.length];

/** The API inputs of bench/enforce-policies.ts (the set bench:enforce creates) as the engine's definitions, by type. */
const definitions: PolicyDefinition[] = POLICIES.map((p, i) => ({
  id: `00000000-0000-4000-8000-${String(i + 1).padStart(12, '0')}`,
  name: p.name,
  policyType: p.policyType as PolicyType,
  ruleDefinition: p.ruleDefinition,
  enforcementMode: p.enforcementMode,
  isActive: true,
  appliesToAgents: [],
  appliesToEnvironments: [],
  agentId: null,
  priority: p.priority,
  maxRequests: p.maxRequests ?? null,
  timeWindowSeconds: p.timeWindowSeconds ?? null,
  severity: 'warning',
  updatedAt: '2026-11-23T00:00:00.000Z',
}));
const MIX: Array<[PolicyType, PolicyDefinition[]]> = [...new Set(definitions.map((d) => d.policyType))].map((t) => [t, definitions.filter((d) => d.policyType === t)]);
const ALL = MIX.flatMap(([, l]) => l);
if (ALL.length !== 50) throw new Error(`expected 50 policies, got ${ALL.length}`);

const counts = new Map<string, number>();
const ctx: EngineContext = {
  agent: { id: AGENT, status: 'active', environment: 'production', currentMonthCostUsd: 42.5, name: 'support-bot' },
  now: () => new Date(),
  monthSpend: () => 42.5,
  qualityAggregate: (_a, metric) => (metric === 'error_rate' ? 0.02 : 1800),
  liveGrant: () => false,
  windowHit: (key, _w, max) => {
    const c = (counts.get(key) ?? 0) + 1;
    counts.set(key, c);
    return c <= max;
  },
  callValidator: createHttpValidator({ allowPrivate: true }),
};

interface Figures {
  p50: number;
  p99: number;
  cpu50: number;
  cpu99: number;
}

const pct = (a: Float64Array, q: number) => a[Math.min(a.length - 1, Math.floor(a.length * q))];

/**
 * p50/p99 µs of `fn` timed call by call: wall time (performance.now) and the process's CPU time
 * (process.cpuUsage, which excludes the time the process waits for a core on a loaded machine).
 */
function measure(fn: (i: number) => unknown, iterations = ITERATIONS): Figures {
  const warm = Math.min(WARMUP, iterations); // long enough for the optimizing compiler to finish (its threads count in process CPU time)
  for (let i = 0; i < warm; i++) fn(iterations + i);
  const wall = new Float64Array(iterations);
  const cpu = new Float64Array(iterations);
  for (let i = 0; i < iterations; i++) {
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    fn(i);
    wall[i] = (performance.now() - t0) * 1000;
    const c = process.cpuUsage(c0);
    cpu[i] = c.user + c.system;
  }
  wall.sort();
  cpu.sort();
  return { p50: pct(wall, 0.5), p99: pct(wall, 0.99), cpu50: pct(cpu, 0.5), cpu99: pct(cpu, 0.99) };
}

/**
 * Bytes allocated per call of `fn`: the growth of the used heap over batches of 100 calls, a batch
 * during which a garbage collection ran (the heap shrank) left out; the median batch. A figure of
 * the JavaScript heap only (strings, objects, arrays), which is what the collector has to sweep.
 */
function allocated(fn: (i: number) => unknown): number {
  const BATCH = 100;
  const per: number[] = [];
  for (let b = 0; b < 200; b++) {
    const before = getHeapStatistics().used_heap_size;
    for (let i = 0; i < BATCH; i++) fn(b * BATCH + i);
    const grown = getHeapStatistics().used_heap_size - before;
    if (grown > 0) per.push(grown / BATCH);
  }
  per.sort((a, b) => a - b);
  return per[Math.floor(per.length / 2)] ?? NaN;
}

const compiled = compileAll(ALL);
const sample = decide(compiled, request, ctx);
if (sample instanceof Promise) throw new Error('the bench context is synchronous: decide must not answer a promise');

const size = JSON.stringify(body).length;
console.log(`enforce-engine: ${ALL.length} policies, request ${(size / 1024).toFixed(1)} KB, ${ITERATIONS} calls; µs per call; decision=${sample.decision}, warnings=${sample.warnings.length}`);
const baseline = measure(() => enforceRequestSchema.parse(body));
resetScanCache();
const full = measure((i) => decide(compiled, miss(i), ctx));
const missStats = scanCacheStats();
resetScanCache();
const hit = measure(() => decide(compiled, request, ctx));
const hitStats = scanCacheStats();
const hitBytes = allocated(() => decide(compiled, request, ctx));
resetScanCache();
const missBytes = allocated((i) => decide(compiled, miss(i), ctx));
resetScanCache();
const f = (x: number) => x.toFixed(1).padStart(9);
const row = (name: string, m: Figures) => console.log(`${name.padEnd(40)}${f(m.p50)}${f(m.p99)}${f(m.cpu50)}${f(m.cpu99)}   ${(m.p50 / baseline.p50).toFixed(2).padStart(6)}`);
console.log(`${'case'.padEnd(40)}${'wall p50'.padStart(9)}${'wall p99'.padStart(9)}${'cpu p50'.padStart(9)}${'cpu p99'.padStart(9)}   × baseline (wall p50)`);
row('baseline: zod parse of the request', baseline);
row('decide: 50 policies, cache miss', full);
row('decide: 50 policies, cache hit', hit);
for (const [type, list] of MIX) {
  const c = compileAll(list);
  row(`  ${type} alone (${list.length}), miss`, measure((i) => decide(c, miss(i), ctx), Math.min(ITERATIONS, 5000)));
}
const noScans = ALL.filter((p) => !['injection_scan', 'output_classifier', 'data_restriction'].includes(p.policyType));
const noScansCompiled = compileAll(noScans);
row(`decide: without scanning types (${noScans.length})`, measure(() => decide(noScansCompiled, request, ctx)));
const rate = (st: { hits: number; misses: number }) => `${st.hits} hits, ${st.misses} misses`;
console.log(`scan cache: miss run ${rate(missStats)}; hit run ${rate(hitStats)} (one entry per root text of 512+ characters: its PII kinds and its injection analysis)`);
console.log(`load average ${loadavg().map((x) => x.toFixed(1)).join(' ')} on ${availableParallelism()} cores (a p99 far above p50 is mostly the process being descheduled)`);
console.log(`enforce-engine p99 (cache miss): ${full.p99.toFixed(0)} µs wall, ${full.cpu99.toFixed(0)} µs CPU (target < 250); p50 ${full.p50.toFixed(0)} µs, ratio to baseline ${(full.p50 / baseline.p50).toFixed(1)}`);
console.log(`enforce-engine p99 (cache hit): ${hit.p99.toFixed(0)} µs wall, ${hit.cpu99.toFixed(0)} µs CPU; p50 ${hit.p50.toFixed(0)} µs`);
console.log(`allocated per decision (JS heap, median of batches of 100): cache hit ${(hitBytes / 1024).toFixed(1)} KB, cache miss ${(missBytes / 1024).toFixed(1)} KB`);

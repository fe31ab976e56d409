/**
 * In-process cost of the enforcement decision (src/domains/policies/engine): 50 active policies of
 * mixed types against a ~2 KB enforce request, `decide` timed call by call (p50/p99 in µs over
 * BENCH_ITERATIONS calls after a warm-up), next to a baseline in the same process: the zod parse of
 * the same request (enforceRequestSchema), which the route does anyway. Then the same decision per
 * policy type alone, to show where the time goes. The context answers synchronously (aggregates,
 * grants and window counters from memory), as the route's caches do on a hit. The decision is timed
 * twice: on new text at every call (the scan cache misses: the target is for this path) and on the
 * same request again and again (the cache hits, as an agent resending its conversation).
 * With BENCH_CROSSOVER=1, then the scan cache's crossover by text length (see `crossover`).
 * Usage: npm run bench:enforce-engine. Figures in bench/README.md.
 */
import { availableParallelism, loadavg } from 'node:os';
import { getHeapStatistics } from 'node:v8';
import { enforceRequestSchema, type EnforceRequest } from '../src/domains/policies/enforce-schemas.js';
import { compileAll, createHttpValidator, decide, type EngineContext, type PolicyDefinition } from '../src/domains/policies/engine/index.js';
import type { PolicyType } from '../src/domains/policies/rules.js';
import { resetScanCache, SCAN_CACHE_MIN_CHARS, scanCacheStats } from '../src/domains/policies/detectors/scan-cache.js';
import { conversation } from './conversation.js';
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
  windowHit: (policyId, _w, max) => {
    const c = (counts.get(policyId) ?? 0) + 1;
    counts.set(policyId, c);
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
console.log(`scan cache: miss run ${rate(missStats)}; hit run ${rate(hitStats)} (one entry per root text of ${SCAN_CACHE_MIN_CHARS}+ characters: its PII kinds, injection analysis and output categories)`);
console.log(`load average ${loadavg().map((x) => x.toFixed(1)).join(' ')} on ${availableParallelism()} cores (a p99 far above p50 is mostly the process being descheduled)`);
console.log(`enforce-engine p99 (cache miss): ${full.p99.toFixed(0)} µs wall, ${full.cpu99.toFixed(0)} µs CPU (target < 250); p50 ${full.p50.toFixed(0)} µs, ratio to baseline ${(full.p50 / baseline.p50).toFixed(1)}`);
console.log(`enforce-engine p99 (cache hit): ${hit.p99.toFixed(0)} µs wall, ${hit.cpu99.toFixed(0)} µs CPU; p50 ${hit.p50.toFixed(0)} µs`);
console.log(`allocated per decision (JS heap, median of batches of 100): cache hit ${(hitBytes / 1024).toFixed(1)} KB, cache miss ${(missBytes / 1024).toFixed(1)} KB`);

/**
 * The scan cache's crossover (SCAN_CACHE_MIN_CHARS, scan-cache.ts): the 14 scanning policies (and
 * the 8 data_restriction ones alone) deciding a request whose only text is an `output` of L
 * characters, in CPU µs per decision (least of three batches of BENCH_ITERATIONS): with the cache
 * off (every text scanned), on a hit (the same text again), on a miss (new text of the same length:
 * the scans plus the digest, the entry and its insert). Caching texts of that length pays when the
 * share of repeated texts is above miss overhead / (hit saving + miss overhead).
 */
function crossover(): void {
  const prose = conversation(4000).map((m) => m.content).join(' ');
  const batches = (fn: (i: number) => unknown): number => {
    for (let i = 0; i < WARMUP; i++) fn(ITERATIONS + i);
    let best = Infinity;
    for (let b = 0; b < 3; b++) {
      const c0 = process.cpuUsage();
      for (let i = 0; i < ITERATIONS; i++) fn(i);
      const c = process.cpuUsage(c0);
      best = Math.min(best, (c.user + c.system) / ITERATIONS);
    }
    return best;
  };
  const sets: Array<[string, PolicyDefinition[]]> = [
    ['scanning types (14)', ALL.filter((p) => ['data_restriction', 'injection_scan', 'output_classifier'].includes(p.policyType))],
    ['data_restriction alone (8)', ALL.filter((p) => p.policyType === 'data_restriction')],
  ];
  console.log(`scan cache crossover (CPU µs per decision, output of L characters only; SCAN_CACHE_MIN_CHARS ${SCAN_CACHE_MIN_CHARS}):`);
  console.log(`${'policies'.padEnd(28)}${'L'.padStart(5)}${'off'.padStart(8)}${'hit'.padStart(8)}${'miss'.padStart(8)}   break-even share of repeats`);
  for (const [name, defs] of sets) {
    const c = compileAll(defs);
    for (const L of [16, 32, 64, 128, 256, 512]) {
      const text = prose.slice(0, L);
      // New text of the same length at every call: a counter in front.
      const fresh = Array.from({ length: ITERATIONS + WARMUP }, (_, i) => ({ ...request, input: undefined, output: `${i} ${text}`.slice(0, L) }));
      const same = { ...request, input: undefined, output: text };
      resetScanCache(false);
      const off = batches((i) => decide(c, fresh[i], ctx));
      resetScanCache(true, 1); // every length cached, whatever SCAN_CACHE_MIN_CHARS says
      const miss = batches((i) => decide(c, fresh[i], ctx));
      resetScanCache(true, 1);
      const hitCost = batches(() => decide(c, same, ctx));
      const saving = off - hitCost;
      const overhead = miss - off;
      const share = saving <= 0 ? 'never' : `${Math.round((100 * Math.max(0, overhead)) / (saving + Math.max(0, overhead)))} %`;
      console.log(`${name.padEnd(28)}${String(L).padStart(5)}${off.toFixed(2).padStart(8)}${hitCost.toFixed(2).padStart(8)}${miss.toFixed(2).padStart(8)}   ${share}`);
    }
  }
  resetScanCache();
}
if (process.env.BENCH_CROSSOVER === '1') crossover();

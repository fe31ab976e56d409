/**
 * Time per call of each policy detector on typical enforce payloads (1 KB and 10 KB of JSON with
 * prose, a few identifiers and one email), next to a baseline run in the same process: one
 * JSON.stringify of the payload plus one simple regex test over it (the least any scan must do).
 * Printed as µs per call (median of BENCH_ROUNDS rounds) and as a ratio to the baseline. Every row
 * scans (no scan cache) except "scan cache hit", which repeats one text for one scope
 * (docs/decisions.md, "Detector speed").
 * Usage: npm run bench:detectors. Figures in bench/README.md.
 */
import { compileGlob, matchesAny } from '../src/domains/policies/glob.js';
import { INJECTION_CAPS, scanInjection } from '../src/domains/policies/detectors/injection.js';
import { compileOutputClassifier } from '../src/domains/policies/detectors/output-classifier.js';
import { compilePiiDetector } from '../src/domains/policies/detectors/pii.js';
import { PII_KINDS } from '../src/domains/policies/rules.js';
import { conversation } from './conversation.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 7);
const MIN_ROUND_MS = Number(process.env.BENCH_ROUND_MS ?? 200);


/** A JSON payload of about `bytes`: a conversation of messages plus some metadata. */
function payload(bytes: number): unknown {
  return { messages: conversation(bytes - 200), customer: { id: 'cus_83jd92', plan: 'pro', region: 'eu-west-1' }, requestId: '3f1c9e2a-77b4-4d1e-9a0b-2c6f5e8d1b3a' };
}

/** Median µs per call of `fn` over ROUNDS rounds of at least MIN_ROUND_MS each. */
function measure(fn: () => unknown): number {
  for (let i = 0; i < 200; i++) fn(); // warm-up
  const rounds: number[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    let n = 0;
    const t0 = performance.now();
    let t = t0;
    while (t - t0 < MIN_ROUND_MS) {
      for (let i = 0; i < 50; i++) fn();
      n += 50;
      t = performance.now();
    }
    rounds.push(((t - t0) * 1000) / n);
  }
  return rounds.sort((a, b) => a - b)[Math.floor(rounds.length / 2)];
}

const pii = compilePiiDetector({ detect: PII_KINDS });
const piiCustom = compilePiiDetector({ detect: PII_KINDS, patterns: ['EMP-\\d{6}', 'PRJ-[A-Z]{3}-\\d{4}'] });
const classifier = compileOutputClassifier(['pii', 'secrets', 'profanity', 'code', 'url']);
const classifierInj = compileOutputClassifier(['pii', 'secrets', 'profanity', 'code', 'url', 'injection']);
const globs = ['search_*', 'read_*', 'list_*', 'get_*', 'db.query', 'http.get', 's3://public/**', 'send_*', 'delete_*', 'admin.**'].map(compileGlob);
const SIMPLE = /ignore (?:all )?previous instructions/i;

console.log(`detectors: µs per call, median of ${ROUNDS} rounds; baseline = JSON.stringify(payload) + one regex test`);
console.log('payload   detector                                 µs/call   × baseline');
for (const kb of [1, 10]) {
  const p = payload(kb * 1024);
  const actual = JSON.stringify(p).length;
  const baseline = measure(() => SIMPLE.test(JSON.stringify(p)));
  const rows: Array<[string, () => unknown]> = [
    ['baseline (stringify + 1 regex)', () => SIMPLE.test(JSON.stringify(p))],
    ['pii: all 8 kinds', () => pii.scan(p, 'input')],
    ['pii: all 8 kinds + 2 custom patterns', () => piiCustom.scan(p, 'input')],
    ['injection_scan', () => scanInjection(p, 'input')],
    ['injection_scan, scan cache hit', () => scanInjection(p, 'input', INJECTION_CAPS, 'bench-agent')],
    ['output_classifier (5 categories)', () => classifier.classify(p)],
    ['output_classifier (+ injection)', () => classifierInj.classify(p)],
    ['access_control: 10 globs × action', () => matchesAny(globs, 'send_email') || matchesAny(globs, 's3://public/reports/q3.pdf')],
  ];
  for (const [name, fn] of rows) {
    const us = name.startsWith('baseline') ? baseline : measure(fn);
    console.log(`${`${(actual / 1024).toFixed(1)} KB`.padEnd(10)}${name.padEnd(41)}${us.toFixed(1).padStart(8)}   ${(us / baseline).toFixed(2).padStart(6)}`);
  }
}

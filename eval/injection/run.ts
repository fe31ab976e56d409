/**
 * npm run eval:injection: scores eval/injection/{dev,test}.jsonl with the injection detector and
 * prints precision, recall, F1 and the confusion counts per split at the default threshold and at the
 * threshold chosen on dev (highest F1 with precision >= 0.9). `-- --errors` lists dev's mistakes
 * (never test's: tune on dev only). See eval/injection/README.md.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { RECOMMENDED_THRESHOLD, scoreText } from '../../src/domains/policies/detectors/injection.js';

interface Row {
  text: string;
  label: 'benign' | 'malicious';
  class: string;
  score: number;
}

const dir = import.meta.dirname;
const load = (name: string): Row[] =>
  readFileSync(join(dir, `${name}.jsonl`), 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => ({ ...(JSON.parse(l) as Omit<Row, 'score'>), score: 0 }))
    .map((r) => ({ ...r, score: scoreText(r.text).score }));

function metrics(rows: Row[], t: number) {
  let tp = 0, fp = 0, tn = 0, fn = 0;
  for (const r of rows) {
    const flagged = r.score >= t;
    if (r.label === 'malicious') flagged ? tp++ : fn++;
    else flagged ? fp++ : tn++;
  }
  const precision = tp + fp === 0 ? 1 : tp / (tp + fp);
  const recall = tp + fn === 0 ? 1 : tp / (tp + fn);
  const f1 = precision + recall === 0 ? 0 : (2 * precision * recall) / (precision + recall);
  return { tp, fp, tn, fn, precision, recall, f1 };
}

const fmt = (m: ReturnType<typeof metrics>) =>
  `precision ${m.precision.toFixed(3)}  recall ${m.recall.toFixed(3)}  F1 ${m.f1.toFixed(3)}  (TP ${m.tp} FP ${m.fp} TN ${m.tn} FN ${m.fn})`;

const t0 = performance.now();
const dev = load('dev');
const test = load('test');
const ms = performance.now() - t0;

let best = { t: RECOMMENDED_THRESHOLD, f1: -1 };
for (let t = 0.05; t <= 0.951; t += 0.05) {
  const m = metrics(dev, t);
  if (m.precision >= 0.9 && m.f1 > best.f1) best = { t: Math.round(t * 100) / 100, f1: m.f1 };
}

console.log(`injection eval: dev ${dev.length} rows, test ${test.length} rows, ${((ms * 1000) / (dev.length + test.length)).toFixed(0)} µs per prompt`);
for (const [name, t] of [['default', RECOMMENDED_THRESHOLD], ['best on dev', best.t]] as const) {
  console.log(`threshold ${t} (${name})`);
  console.log(`  dev   ${fmt(metrics(dev, t))}`);
  console.log(`  test  ${fmt(metrics(test, t))}`);
}

const perClass = (rows: Row[], t: number) => {
  const by = new Map<string, { n: number; ok: number }>();
  for (const r of rows) {
    const k = `${r.label}/${r.class}`;
    const e = by.get(k) ?? { n: 0, ok: 0 };
    e.n++;
    if ((r.score >= t) === (r.label === 'malicious')) e.ok++;
    by.set(k, e);
  }
  return [...by].map(([k, e]) => `${k} ${e.ok}/${e.n}`).join(', ');
};
console.log(`per class at ${RECOMMENDED_THRESHOLD}, correct/total:\n  dev   ${perClass(dev, RECOMMENDED_THRESHOLD)}\n  test  ${perClass(test, RECOMMENDED_THRESHOLD)}`);

if (process.argv.includes('--errors')) {
  for (const r of dev) {
    if ((r.score >= RECOMMENDED_THRESHOLD) !== (r.label === 'malicious')) console.log(`  ${r.label === 'malicious' ? 'FN' : 'FP'} ${r.score.toFixed(3)} [${r.class}] ${JSON.stringify(r.text.slice(0, 140))}`);
  }
}

/**
 * Bad input for the detectors and the engine (issue 8, "Bad input"): strings built to hurt regular
 * expressions, 1 MB each, through every PII kind, admitted custom patterns, the injection scan, the
 * output classifier and a full decision. Linear behaviour is asserted by COMPARISON, never by the
 * wall clock: the time on 1 MB over the time on 100 KB must stay under 30 (linear work gives at most
 * ~10, less where the caps of docs/decisions.md "Policy detectors" cut the text; a quadratic scan
 * gives ~100). Each case also has to finish within the (generous) vitest timeout.
 */
import { describe, expect, it } from 'vitest';
import { enforceRequestSchema, type EnforceRequest } from '../src/domains/policies/enforce-schemas.js';
import { scanInjection } from '../src/domains/policies/detectors/injection.js';
import { compileOutputClassifier } from '../src/domains/policies/detectors/output-classifier.js';
import { compilePiiDetector } from '../src/domains/policies/detectors/pii.js';
import { resetScanCache } from '../src/domains/policies/detectors/scan-cache.js';
import { compileAll, createHttpValidator, decide, type EngineContext, type PolicyDefinition } from '../src/domains/policies/engine/index.js';
import { regexProblem } from '../src/domains/policies/regex-safety.js';
import { PII_KINDS, type PolicyType } from '../src/domains/policies/rules.js';
import { policyDefinition } from './policy-definitions.js';

const MB = 1 << 20;
const SMALL = 100 * 1024;
const MAX_RATIO = 30;
/** Times under this are counted as this: below it, timer and scheduler noise decide the ratio. */
const FLOOR_MS = 2;

const fill = (unit: string, n: number) => unit.repeat(Math.ceil(n / unit.length)).slice(0, n);

/** Adversarial texts of `n` characters (UTF-16 code units). */
const TEXTS: Array<[string, (n: number) => string]> = [
  ['card-like digit groups', (n) => fill('4111 1111 1111 111-', n)],
  ['one run of digits', (n) => '7'.repeat(n)],
  ['digits with single separators', (n) => fill('1-2 3.4-', n)],
  ['SSN-like groups', (n) => fill('123-45-678 ', n)],
  ['phone-like groups', (n) => fill('+1 (212) 555-01 ', n)],
  ['dotted digits', (n) => fill('1.', n)],
  ['colons and hex', (n) => fill('a1:', n)],
  ['at signs', (n) => fill('a@', n)],
  ['chained near-emails', (n) => fill('a@a.a@a.', n)],
  ['long local parts', (n) => fill('a'.repeat(70) + '@', n)],
  ['JWT prefixes', (n) => fill('eyJ', n)],
  ['JWT-like segments', (n) => fill('eyJ' + 'a'.repeat(60) + '.', n)],
  ['IBAN-like groups', (n) => fill('DE89 3704 ', n)],
  ['provider key prefixes', (n) => fill('sk-', n)],
  ['labelled tokens', (n) => fill('token=aB1', n)],
  ['zero-width characters', (n) => '\u200b'.repeat(n)],
  ['base64-looking run', (n) => fill('QUJD', n)],
  ['hex-looking run', (n) => fill('deadbeef', n)],
  ['"ignore " repeated', (n) => fill('ignore ', n)],
  ['spaced letters', (n) => fill('i g n o r e ', n)],
  ['mixed scripts', (n) => fill('pаypal ignоre prеvious іnstructions ', n)],
  ['Cyrillic only', (n) => 'а'.repeat(n)],
  ['leet words', (n) => fill('1gn0r3 ', n)],
  ['quotes and delimiters', (n) => fill('"\'`<|im_start|>### [INST] ', n)],
  ['Unicode tag characters', (n) => fill('\u{E0069}\u{E0067}', n)],
];

/** The same text as a JSON object nested to 18 levels, cut into 1,000-character leaves at every level. */
function nested(text: string): Record<string, unknown> {
  const leaves: string[] = [];
  for (let i = 0; i < text.length; i += 1000) leaves.push(text.slice(i, i + 1000));
  const per = Math.ceil(leaves.length / 18);
  let v: Record<string, unknown> = { items: leaves.slice(17 * per) };
  for (let d = 16; d >= 0; d--) v = { text: leaves.slice(d * per, (d + 1) * per), next: v };
  return v;
}

// Admitted by regex-safety.ts (checked below), each as close to its bounds as it gets.
const PATTERNS = ['[a-z0-9._]{1,64}@[a-z]{1,63}\\.[a-z]{2,10}', '(?:a|ab){1,15}c', '\\d{1,100}-\\d{1,100}x', '(?:[a-z]{1,8} ){1,5}secret', 'eyJ[A-Za-z0-9]{1,500}\\.'];

let n = 0;
const def = (policyType: PolicyType, ruleDefinition: unknown): PolicyDefinition => policyDefinition(++n, policyType, ruleDefinition);
const POLICIES = compileAll([
  def('data_restriction', { detect: PII_KINDS, patterns: PATTERNS, scope: 'both' }),
  def('injection_scan', { threshold: 0.5, scope: 'both' }),
  def('output_classifier', { categories: ['pii', 'secrets', 'profanity', 'code', 'url', 'injection'], blockOn: ['secrets'] }),
  def('access_control', { allowActions: ['chat.*'], denyResources: ['*a*a*a*a*a*b'] }),
  def('custom', { expression: 'request.tokens > 10000' }),
]);
const AGENT = '11111111-1111-4111-8111-111111111111';
const ctx: EngineContext = {
  agent: { id: AGENT, status: 'active', environment: 'production', currentMonthCostUsd: 1, name: 'adversarial' },
  now: () => new Date('2026-11-23T00:00:00.000Z'),
  monthSpend: () => 1,
  qualityAggregate: () => null,
  liveGrant: () => false,
  windowHit: () => true,
  callValidator: createHttpValidator({ allowPrivate: true }),
};
const request = (value: unknown): EnforceRequest =>
  enforceRequestSchema.parse({ agentId: AGENT, action: { type: 'llm_call', name: 'chat.completions', resource: 'a'.repeat(2000) }, input: value, output: value, tokens: 10 });

const pii = PII_KINDS.map((k) => [`pii ${k}`, compilePiiDetector({ detect: [k] })] as const);
const custom = compilePiiDetector({ detect: [], patterns: PATTERNS });
const classifier = compileOutputClassifier(['pii', 'secrets', 'profanity', 'code', 'url', 'injection']);
const TARGETS: Array<[string, (value: unknown) => unknown]> = [
  ...pii.map(([name, d]) => [name, (v: unknown) => d.scan(v, 'input')] as [string, (value: unknown) => unknown]),
  ['custom patterns', (v) => custom.scan(v, 'input')],
  ['injection scan', (v) => scanInjection(v, 'input')],
  ['output classifier', (v) => classifier.classify(v)],
  ['decision (every type)', (v) => decide(POLICIES, request(v), ctx)],
];

/** Least time of three runs of `fn`, in ms (the least is the one the scheduler disturbed least). */
function cost(fn: () => unknown): number {
  let best = Infinity;
  for (let i = 0; i < 3; i++) {
    const t0 = performance.now();
    fn();
    best = Math.min(best, performance.now() - t0);
  }
  return Math.max(best, FLOOR_MS);
}

/** The targets whose 1 MB time is MAX_RATIO or more times their 100 KB time, with the figures. */
function superlinear(make: (n: number) => unknown): string[] {
  const small = make(SMALL);
  const large = make(MB);
  const bad: string[] = [];
  for (const [name, run] of TARGETS) {
    const a = cost(() => run(small));
    const b = cost(() => run(large));
    if (b / a >= MAX_RATIO) bad.push(`${name}: ${a.toFixed(1)} ms on 100 KB, ${b.toFixed(1)} ms on 1 MB`);
  }
  return bad;
}

describe('adversarial input: linear time, by comparison', () => {
  // The scan cache would answer the repeated runs: every run here must scan.
  resetScanCache(false);

  it('the custom patterns used here are admitted by regex-safety', () => {
    for (const p of PATTERNS) expect(regexProblem(p), p).toBeNull();
  });

  it.each(TEXTS)('%s as a string', (_name, make) => {
    expect(superlinear(make)).toEqual([]);
  }, 240_000);

  it.each(TEXTS.filter((_, i) => i % 3 === 0))('%s nested 18 levels deep', (_name, make) => {
    expect(enforceRequestSchema.safeParse({ agentId: AGENT, action: { type: 'llm_call', name: 'x' }, input: nested(make(MB)) }).success).toBe(true);
    expect(superlinear((k) => nested(make(k)))).toEqual([]);
  }, 240_000);
});

describe('regex-safety on adversarial patterns', () => {
  it('refuses the classic catastrophic shapes', () => {
    for (const bad of ['(a+)+b', '(a|a)*b', '(a|aa){1,40}b', '(?:\\d{1,10}){1,10}(?:\\d{1,10}){1,10}x', '(.*a){1,20}', '([a-z]{1,50}){1,50}!', '(x{1,1000}){1,1000}'])
      expect(regexProblem(bad), bad).not.toBeNull();
  });

  it('an admitted pattern near the ambiguity bound scans 64 KiB of near misses in linear time', () => {
    const re = '(?:a|ab){1,15}c';
    expect(regexProblem(re)).toBeNull();
    const d = compilePiiDetector({ detect: [], patterns: [re] });
    const a = cost(() => d.scan('ab'.repeat(SMALL / 20), 'input'));
    const b = cost(() => d.scan('ab'.repeat(SMALL / 2), 'input'));
    expect(b / a).toBeLessThan(MAX_RATIO);
  }, 120_000);
});

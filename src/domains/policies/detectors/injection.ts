/**
 * Offline, scored prompt-injection detector (injection_scan, and the output classifier's injection
 * category). Stages, per string field:
 *  1. fold the text (normalize.ts): compatibility forms, accents, case, invisible characters out;
 *  2. run the cues of injection-rules.ts on the folded view, then on derived views when the text
 *     shows the trick (homoglyphs mixed into Latin words, leet digits, letter-by-letter spelling,
 *     a rot13 or reverse request), a cue found only in a derived view counting as `injection.encoding`;
 *  3. decode suspicious base64 and hex runs (bounded in number and size) and Unicode tag characters,
 *     and score the decoded text with the same cues (one level deep);
 *  4. combine: score = 1 − Π(1 − weight) over distinct cues (a noisy-or), times 0.45 when the text
 *     discusses injection (META) and every cue sits inside quotes, or 0.8 when it discusses it at all.
 * The answer is the score and the strongest finding (code, field path, offsets into the original
 * string). Caps and known gaps: docs/decisions.md ("Policy detectors").
 */
import { deconfuse, despace, fold, hasLeet, hasMixedScript, hasSpacedLetters, mapChars, originalOffset, unleet, type View } from './normalize.js';
import { GateIndex, gateOf, type Gate } from './rule-gate.js';
import { META, QUOTED, RULES, type Rule } from './injection-rules.js';
import type { Finding } from './types.js';
import { cachedScan, textDigest, worthCaching } from './scan-cache.js';
import { collectStrings, leafAt, leafStarts, type Leaves, type WalkCaps } from './walk.js';

/** Characters scanned per request (input or output) by the injection detector. */
export const INJECTION_CAPS: WalkCaps = { maxChars: 64 * 1024, maxDepth: 32, maxNodes: 10_000 };
/** The threshold recommended for injection_scan policies (eval/injection, docs/decisions.md). */
export const RECOMMENDED_THRESHOLD = 0.5;

const MAX_DECODED_SEGMENTS = 8;
const MAX_SEGMENT_CHARS = 8 * 1024;

interface Cues {
  rules: Rule[];
  index: GateIndex;
}
const gate = (r: Rule): Gate | null => {
  const g = r.needs ? { words: [], stems: r.needs } : gateOf(r.re.source);
  return r.also ? { ...(g ?? { words: [], stems: [] }), also: r.also } : g;
};
const cues = (rules: Rule[]): Cues => ({ rules, index: new GateIndex(rules.map(gate)) });
const CUES = cues(RULES);
const leet = (s: string) => s.replace(/l/g, 'i');
const LEET_CUES = cues(RULES.map((r) => ({ ...r, re: new RegExp(leet(r.re.source), 'g'), needs: r.needs?.map(leet), also: r.also?.map((g) => g.map(leet)) })));

export interface InjectionResult {
  /** 0..1; compare with the policy's threshold. */
  score: number;
  /** The strongest finding, or null when nothing was found. */
  top: Finding | null;
  /** Every cue found (one per rule and field), strongest first. */
  findings: Finding[];
  truncated: boolean;
}

interface Hit {
  code: string;
  weight: number;
  start: number; // offsets in the original string
  end: number;
  key: string; // one count per rule
  quoted: boolean;
}

function quotedRanges(text: string): Array<[number, number]> {
  const out: Array<[number, number]> = [];
  QUOTED.lastIndex = 0;
  for (let m = QUOTED.exec(text); m; m = QUOTED.exec(text)) out.push([m.index, m.index + m[0].length]);
  return out;
}

const SELF = /\b(?:my|our|i|we)\b/;

/** `seen` marks the rules already found in an earlier view of the same text (by index: every cue set lists RULES in order). */
/**
 * The quoted ranges of a folded text, found on its first cue. An object rather than a closure per
 * analysed text: under tsx (how the service runs) every named closure costs a defineProperty call.
 */
interface Quotes {
  readonly text: string;
  ranges: Array<[number, number]> | null;
}

/** `quotes` null: the view's offsets are not the folded text's, its cues are never counted as quoted. */
function runRules(view: View, cueSet: Cues, tag: string, hits: Hit[], seen: Uint8Array, quotes: Quotes | null, asCode?: string): void {
  const t = view.text;
  const open = cueSet.index.open(t, view.map === null);
  const rules = cueSet.rules;
  for (let k = 0; k < rules.length; k++) {
    const rule = rules[k];
    if (!open[k] || seen[k]) continue;
    rule.re.lastIndex = 0;
    const m = rule.re.exec(t);
    if (!m) continue;
    seen[k] = 1;
    let weight = rule.weight;
    if (rule.selfAware && SELF.test(m[0])) weight = 0.25;
    // The same cue twice (never refuse, never apologise) is more evidence than once.
    else if (rule.re.exec(t)) weight = 1 - (1 - weight) ** 2;
    const s = m.index;
    const e = m.index + m[0].length;
    const start = originalOffset(view, s);
    const end = originalOffset(view, e - 1) + 1;
    const quoted = quotes !== null && (quotes.ranges ??= quotedRanges(quotes.text)).some(([a, b]) => s >= a && e <= b);
    hits.push({ code: asCode ?? rule.code, weight: asCode ? Math.max(weight, 0.8) : weight, start, end, key: `${tag}${k}`, quoted });
  }
}

/** Runs of base64 (or base64url) characters of at least 24, found by one loop over the string. */
function encodedRuns(src: string): Array<[number, number]> {
  const runs: Array<[number, number]> = [];
  let start = -1;
  for (let i = 0; i <= src.length; i++) {
    const c = i < src.length ? src.charCodeAt(i) : 32;
    const b64 = (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || (c >= 48 && c <= 57) || c === 43 || c === 47 || c === 45 || c === 95;
    if (b64) {
      if (start < 0) start = i;
    } else if (start >= 0) {
      let end = i;
      while (end < src.length && end - i < 2 && src.charCodeAt(end) === 61) end++; // '=' padding
      if (end - start >= 24) runs.push([start, end]);
      start = -1;
    }
  }
  return runs;
}

// Classes of ASCII characters for asciiSignals: base64(url) character, \w, letter, leet digit.
const B64 = 1;
const WORD = 2;
const LETTER = 4;
const LEET_DIGIT = 8;
const CLASS = new Uint8Array(128);
for (let c = 0; c < 128; c++) {
  const ch = String.fromCharCode(c);
  CLASS[c] = (/[A-Za-z0-9+/_-]/.test(ch) ? B64 : 0) | (/\w/.test(ch) ? WORD : 0) | (/[A-Za-z]/.test(ch) ? LETTER : 0) | (/[013457]/.test(ch) ? LEET_DIGIT : 0);
}

interface Signals {
  /** What encodedRuns answers. */
  runs: Array<[number, number]>;
  /** `\w` runs holding a leet digit next to a letter: the only places hasLeet's pattern can match. */
  leet: Array<[number, number]>;
}

/**
 * For ASCII text (whose folded view is its lower case, same offsets): the base64 runs and the words
 * that may be leet, in one pass instead of a loop for the runs plus hasLeet's regex over the whole
 * text, which tried a lookahead at every word (docs/decisions.md, "Detector speed").
 */
function asciiSignals(src: string): Signals {
  const runs: Array<[number, number]> = [];
  const leet: Array<[number, number]> = [];
  let b64 = -1;
  let word = -1;
  let cand = false;
  let prev = 0;
  const n = src.length;
  for (let i = 0; i <= n; i++) {
    const k = i < n ? CLASS[src.charCodeAt(i)] : 0;
    if (k & B64) {
      if (b64 < 0) b64 = i;
    } else if (b64 >= 0) {
      let end = i;
      while (end < n && end - i < 2 && src.charCodeAt(end) === 61) end++; // '=' padding
      if (end - b64 >= 24) runs.push([b64, end]);
      b64 = -1;
    }
    if (k & WORD) {
      if (word < 0) (word = i), (cand = false);
      else if (((k & LEET_DIGIT) !== 0 && (prev & LETTER) !== 0) || ((k & LETTER) !== 0 && (prev & LEET_DIGIT) !== 0)) cand = true;
    } else if (word >= 0) {
      if (cand) leet.push([word, i]);
      word = -1;
    }
    prev = k;
  }
  return { runs, leet };
}

function printable(s: string): boolean {
  if (s.length < 8) return false;
  let ok = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if ((c >= 32 && c < 127) || c === 10 || c === 13 || c === 9 || (c >= 0xa0 && c !== 0xfffd)) ok++;
  }
  return ok / s.length >= 0.9;
}

/** Scores one string; `depth` 1 for decoded payloads (no further decoding). */
function analyse(src: string, depth = 0): { score: number; hits: Hit[] } {
  const f = fold(src);
  const sig = f.map === null ? asciiSignals(src) : null;
  const hits: Hit[] = [];
  const seen = new Uint8Array(RULES.length);
  const quotes: Quotes = { text: f.text, ranges: null };
  runRules(f, CUES, 'r', hits, seen, quotes);
  const plain = hits.length;

  // Derived views: only when the text shows the trick; a cue found only there is an encoding trick.
  if (hasMixedScript(f.text)) {
    runRules(deconfuse(f), CUES, 'h', hits, seen, quotes, 'injection.encoding');
    hits.push({ code: 'injection.encoding', weight: 0.3, start: 0, end: 0, key: 'mixed', quoted: false });
  }
  if (sig ? sig.leet.some(([a, b]) => hasLeet(f.text.slice(a, b))) : hasLeet(f.text)) runRules(unleet(f), LEET_CUES, 'l', hits, seen, null, 'injection.encoding');
  if (hasSpacedLetters(f.text)) runRules(despace(f), CUES, 's', hits, seen, null, 'injection.encoding');
  if (/\brot-?13\b/.test(f.text)) runRules(mapChars(f, rot13), CUES, 'o', hits, seen, null, 'injection.encoding');
  if (/\b(?:reverse|backwards?|reversed|right to left)\b/.test(f.text)) {
    const rev = { text: f.text.split('').reverse().join(''), map: Int32Array.from({ length: f.text.length }, (_, i) => originalOffset(f, i)).reverse() };
    runRules(rev, CUES, 'v', hits, seen, null, 'injection.encoding');
  }
  if (f.invisibles > 0) {
    // Invisible characters inside a cue: hiding it from keyword filters is the point.
    const inside = hits.slice(0, plain).some((h) => /[\u200b-\u200f\u2060-\u206f\ufeff\u00ad]|[\udb40][\udc00-\udc7f]/.test(src.slice(h.start, h.end)));
    hits.push({ code: 'injection.encoding', weight: inside ? 0.85 : f.invisibles >= 3 ? 0.4 : 0.2, start: 0, end: 0, key: 'zw', quoted: false });
  }
  if (f.tags.length > 0) {
    const inner = analyse(f.tags, 1);
    hits.push({ code: 'injection.encoding', weight: Math.max(0.8, inner.score), start: 0, end: src.length, key: 'tags', quoted: false });
  }

  if (depth === 0) {
    let decoded = 0;
    for (const [a, b] of sig ? sig.runs : encodedRuns(src)) {
      if (decoded >= MAX_DECODED_SEGMENTS) break;
      const seg = src.slice(a, Math.min(b, a + MAX_SEGMENT_CHARS));
      const hex = /^(?:[0-9a-fA-F]{2}){16,}$/.test(seg);
      if (!hex && !(/[A-Z]/.test(seg) && /[a-z]/.test(seg))) continue;
      const text = hex ? Buffer.from(seg, 'hex').toString('utf8') : Buffer.from(seg, 'base64').toString('utf8');
      if (!printable(text)) continue;
      decoded++;
      const inner = analyse(text, 1);
      if (inner.score >= 0.3) {
        hits.push({ code: 'injection.encoding', weight: Math.max(0.85, inner.score), start: a, end: b, key: `b${a}`, quoted: false });
      } else if (/[a-z]{3,} [a-z]{3,}/i.test(text)) {
        hits.push({ code: 'injection.encoding', weight: 0.25, start: a, end: b, key: `t${a}`, quoted: false });
      }
    }
  }

  let keep = 1;
  for (const h of hits) keep *= 1 - h.weight;
  let score = 1 - keep;
  if (hits.length > 0 && META.test(f.text)) score *= hits.every((h) => h.quoted) ? 0.45 : 0.8;
  return { score: Math.round(score * 1000) / 1000, hits };
}

function rot13(c: string): string {
  const x = c.charCodeAt(0);
  return x >= 97 && x <= 122 ? String.fromCharCode(((x - 97 + 13) % 26) + 97) : c;
}

/** Scores one string (the evaluation set and tests call this directly). */
export function scoreText(text: string, path = 'input'): InjectionResult {
  const { score, hits } = analyse(text);
  const findings = hits
    .slice()
    .sort((a, b) => b.weight - a.weight)
    .map((h) => ({ code: h.code, path, start: h.start, end: h.end, score: Math.round(h.weight * 1000) / 1000 }));
  return { score, top: findings[0] ?? null, findings, truncated: false };
}

/** What `analyse` answers for a joined text (offsets in that text): what the scan cache keeps. */
export type InjectionAnalysis = ReturnType<typeof analyse>;

/** Answers the analysis of the joined text `join()` answers: `analyseJoined` of it, or a copy kept for the same text (scan-cache.ts). */
export type CachedAnalysis = (join: () => string) => InjectionAnalysis;

/** The analysis of a text with no cue: one shared object, so that the scan-cache entries of most texts hold no analysis of their own. */
const NO_CUES: InjectionAnalysis = Object.freeze({ score: 0, hits: Object.freeze([]) as unknown as Hit[] });

/** The analysis of a joined text (what scanInjectionLeaves maps back to the leaves). */
export function analyseJoined(joined: string): InjectionAnalysis {
  const a = analyse(joined);
  return a.hits.length === 0 && a.score === 0 ? NO_CUES : a;
}

/**
 * Scores string leaves (collectStrings within INJECTION_CAPS). They are joined with blank lines and
 * scored as one text (one pass instead of one per field; no cue crosses a line break, so none spans
 * two fields, but cues in different fields add up); each finding is then mapped back to its field's
 * path and offsets. `cached`, when given, may answer the analysis of a joined text seen before.
 */
export function scanInjectionLeaves(leaves: Leaves, cached?: CachedAnalysis): InjectionResult {
  const { texts, truncated } = leaves;
  if (texts.length === 0) return { score: 0, top: null, findings: [], truncated };
  // The score depends on the joined text alone, so a repeated text may be scored once (scan-cache.ts);
  // the text is joined only when the caller's key needs it or the analysis runs.
  return leavesResult(leaves, cached ? cached(() => texts.join(LEAF_GAP)) : analyse(texts.join(LEAF_GAP)));
}

/** What joins the leaves into the one text the analysis reads (a blank line: no cue crosses it). */
export const LEAF_GAP = '\n\n';

/** The result for `leaves` (at least one) of the analysis of their texts joined by LEAF_GAP: each finding mapped back to its leaf's path and offsets. */
export function leavesResult(leaves: Leaves, analysis: InjectionAnalysis): InjectionResult {
  const { texts, truncated } = leaves;
  const { score, hits } = analysis;
  // Most texts hold no cue: the leaves' offsets are computed only to map findings back.
  if (hits.length === 0) return { score, top: null, findings: [], truncated };
  const starts = leafStarts(texts, LEAF_GAP.length);
  const findings = hits
    .slice()
    .sort((a, b) => b.weight - a.weight)
    .slice(0, 100)
    .map((h) => {
      const lo = leafAt(starts, h.start);
      const base = starts[lo];
      const len = texts[lo].length;
      return { code: h.code, path: leaves.path(lo), start: Math.min(h.start - base, len), end: Math.min(h.end - base, len), score: Math.round(h.weight * 1000) / 1000 };
    });
  return { score, top: findings[0] ?? null, findings, truncated };
}

/**
 * Scans `input` or `output` (string or JSON): its leaves within `caps`, scored by
 * scanInjectionLeaves. With `cacheScope` (an agent id) the analysis of a joined text of cacheable
 * size is kept in scan-cache.ts.
 */
export function scanInjection(value: unknown, root: string, caps: WalkCaps = INJECTION_CAPS, cacheScope?: string): InjectionResult {
  return scanInjectionLeaves(collectStrings(value, root, caps), cacheScope === undefined ? undefined : (join) => cachedByText(cacheScope, join()));
}

/** The analysis of `joined` through the scan cache under `scope` (an agent id) and the text's digest, when the text is of cacheable size. */
export function cachedByText(scope: string, joined: string): InjectionAnalysis {
  return worthCaching(joined.length) ? cachedScan(`${scope}:injection:${textDigest(joined)}`, () => analyseJoined(joined)) : analyse(joined);
}

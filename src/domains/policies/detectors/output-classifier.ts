/**
 * Output classifier (output_classifier policies): labels an agent's output with the categories of
 * contract.md and one more, each finding carrying `output.<category>`:
 *  - pii: email, phone, card, SSN, IBAN, IP address (the detectors of pii.ts; `kind` names which);
 *  - secrets: provider API keys, generic labelled secrets, JWTs, private keys (pii.ts);
 *  - profanity: whole words of a short list in English, French, Spanish and German, leet folded;
 *  - code: a fenced block, or two or more lines that read as source code or SQL;
 *  - url: http(s) and www. addresses;
 *  - injection: the output carries an injection (score >= RECOMMENDED_THRESHOLD), which would reach
 *    the next agent or tool that reads it.
 * blockOn is the caller's rule: `blocking(result, blockOn)` answers the findings that block.
 * Findings are listed leaf by leaf, and within a leaf by category in LEAF_CATEGORIES order; each
 * category's findings in a leaf depend on that leaf alone (`leafFindings`), so the engine computes
 * them once per request for all its classifiers and takes pii and secrets from its own per-kind
 * scans (`classifyLeaves` with its source; docs/decisions.md, "Detector speed").
 */
import type { OutputCategory, PiiKind } from '../rules.js';
import { RECOMMENDED_THRESHOLD, scanInjection, type InjectionResult } from './injection.js';
import { compilePiiDetector, MAX_FINDINGS } from './pii.js';
import type { Finding, ScanResult } from './types.js';
import { collectStrings, DEFAULT_CAPS, type Leaves, type WalkCaps } from './walk.js';

const PROFANITY = new RegExp(
  '(?<![\\p{L}\\p{N}])(?:' +
    [
      'f+u+c+k+(?:s|ed|er|ers|ing|in|face|head|wit)?',
      'motherf+u+c+k+(?:er|ers|ing)?',
      'shit(?:s|ty|head|hole|ting)?',
      'bullshit',
      'bitch(?:es|y)?',
      'bastards?',
      'ass(?:hole|holes|wipe)',
      'cunts?',
      'dick(?:head|heads)',
      'cocksuckers?',
      'pricks?',
      'twats?',
      'wankers?',
      'douche(?:bag|bags)?',
      'sluts?',
      'whores?',
      'fag(?:got|gots)?',
      'retard(?:ed|s)?',
      'nigg(?:er|ers|a|as)',
      'merde',
      'putain',
      'connard(?:e|s)?',
      'encul[eé]s?',
      'mierda',
      'put[ao]s?',
      'cabr[oó]n(?:es)?',
      'gilipollas',
      'schei(?:ß|ss)e',
      'arschl[oö]ch(?:er)?',
      'wichser',
    ].join('|') +
    ')(?![\\p{L}\\p{N}])',
  'giu',
);
const LEET: Record<string, string> = { '0': 'o', '1': 'i', '3': 'e', '4': 'a', '5': 's', '7': 't', '@': 'a', $: 's', '*': 'u' };
const unleet = (t: string) => (/[013457@$*]/.test(t) ? t.replace(/(?<=\p{L})[013457@$*]+(?=\p{L})|(?<=\p{L})[@$]|[@$](?=\p{L})/gu, (m) => [...m].map((c) => LEET[c] ?? c).join('')) : t);

const URL = /\bhttps?:\/\/[^\s<>"'`)\]]{1,2048}|(?<![\w./])www\.[a-z0-9-]{1,63}\.[^\s<>"'`)\]]{1,2048}/gi;
const FENCE = /```|~~~/g;
const CODE_LINE =
  /^[ \t]*(?:(?:def|class|import|from \S+ import|function|const|let|var|public|private|protected|package|fn|func|return|if|for|while|elif|else|try|catch|except|#include|using|namespace)\b.{0,400}|(?:select|insert|update|delete|create|alter|drop)\s.{0,400}\b(?:from|into|set|table|where)\b.{0,400}|.{0,400}(?:;|\{|\}|=>|\):)[ \t]*)$/gim;

export interface OutputClassification extends ScanResult {
  /** Categories with at least one finding. */
  categories: OutputCategory[];
}

/** The categories found leaf by leaf, in the order a leaf's findings are listed (injection is scored over the whole output). */
export const LEAF_CATEGORIES = ['pii', 'secrets', 'profanity', 'url', 'code'] as const;
export type LeafCategory = (typeof LEAF_CATEGORIES)[number];

/** The PII kinds behind the pii and secrets categories, in the order their detector runs them. */
export const CATEGORY_KINDS: Readonly<Record<'pii' | 'secrets', readonly PiiKind[]>> = {
  pii: ['email', 'phone', 'credit_card', 'ssn', 'iban', 'ip_address'],
  secrets: ['api_key', 'jwt'],
};

/** A finding of one category in one leaf, without its code (`output.<category>`). */
export type LeafFinding = Omit<Finding, 'code'>;

/** Where a classifier takes its findings: leafFindings and its own injection scan, or the engine's copies (an object, not closures made per call). */
export interface LeafSource {
  /** The findings of `category` in leaf number `leaf`. */
  leafCategory(category: LeafCategory, leaf: number): readonly LeafFinding[];
  /** The injection scan of the whole output (the injection category). */
  outputInjection(): InjectionResult;
}

export interface OutputClassifier {
  /** `injection` scans for the injection category; the engine passes its per-request memo so one scan serves every policy. */
  classify(value: unknown, root?: string, injection?: (value: unknown, root: string) => InjectionResult): OutputClassification;
  /** The same over leaves already collected (collectStrings, DEFAULT_CAPS), each category's findings per leaf and the injection scan from `source`. */
  classifyLeaves(leaves: Leaves, source: LeafSource): OutputClassification;
}

// Shared by every call and cache entry: frozen, so a write by mistake throws.
const NONE: readonly LeafFinding[] = Object.freeze([]);
const CODES: Readonly<Record<OutputCategory, string>> = { pii: 'output.pii', secrets: 'output.secrets', profanity: 'output.profanity', url: 'output.url', code: 'output.code', injection: 'output.injection' };
const KIND_DETECTORS = { pii: compilePiiDetector({ detect: CATEGORY_KINDS.pii }), secrets: compilePiiDetector({ detect: CATEGORY_KINDS.secrets }) };

/** A leaf finding before its path is set: what depends on the leaf's text alone (the engine's scan cache keeps these). */
export type RawLeafFinding = Omit<LeafFinding, 'path'>;

/** The findings of `category` in the text of one leaf, in the order the classifier lists them, without their path. */
export function rawLeafFindings(category: LeafCategory, text: string): readonly RawLeafFinding[] {
  const out: RawLeafFinding[] = [];
  switch (category) {
    case 'pii':
    case 'secrets': {
      const found: Finding[] = [];
      KIND_DETECTORS[category].scanText(text, '', found);
      for (const f of found) out.push({ start: f.start, end: f.end, score: f.score, kind: f.code });
      break;
    }
    case 'profanity': {
      PROFANITY.lastIndex = 0;
      const t = unleet(text); // same length: leet characters are replaced one for one
      for (let m = PROFANITY.exec(t); m; m = PROFANITY.exec(t)) out.push({ start: m.index, end: m.index + m[0].length, score: 0.9, kind: 'profanity' });
      break;
    }
    case 'url': {
      URL.lastIndex = 0;
      for (let m = URL.exec(text); m; m = URL.exec(text)) {
        let end = m.index + m[0].length;
        while (end > m.index && '.,;:!?'.includes(text[end - 1])) end--; // sentence punctuation is not part of the address
        out.push({ start: m.index, end, score: 1, kind: 'url' });
      }
      break;
    }
    case 'code': {
      FENCE.lastIndex = 0;
      const fence = FENCE.exec(text);
      if (fence) out.push({ start: fence.index, end: text.length, score: 0.9, kind: 'fenced' });
      else {
        CODE_LINE.lastIndex = 0;
        const lines: RegExpExecArray[] = [];
        for (let m = CODE_LINE.exec(text); m && lines.length < 3; m = CODE_LINE.exec(text)) {
          if (m[0].length === 0) CODE_LINE.lastIndex++;
          else lines.push(m);
        }
        if (lines.length >= 2) out.push({ start: lines[0].index, end: lines[lines.length - 1].index + lines[lines.length - 1][0].length, score: lines.length >= 3 ? 0.8 : 0.6, kind: 'lines' });
      }
      break;
    }
  }
  return out.length === 0 ? NONE : out;
}

/** Raw leaf findings with the path of the leaf they lie in (the same keys in the same order as a finding scanned with its path). */
export function withPath(raw: readonly RawLeafFinding[], path: string): LeafFinding[] {
  const out: LeafFinding[] = new Array(raw.length);
  for (let k = 0; k < raw.length; k++) {
    const x = raw[k];
    out[k] = { path, start: x.start, end: x.end, score: x.score, kind: x.kind };
  }
  return out;
}

/** The findings of `category` in leaf `i` of `leaves`, in the order the classifier lists them (the leaf's path built only for a finding). */
export function leafFindings(category: LeafCategory, leaves: Leaves, i: number): readonly LeafFinding[] {
  const raw = rawLeafFindings(category, leaves.texts[i]);
  return raw.length === 0 ? NONE : withPath(raw, leaves.path(i));
}

const nothing = (truncated: boolean): OutputClassification => Object.freeze({ findings: Object.freeze([]) as unknown as Finding[], categories: Object.freeze([]) as unknown as OutputCategory[], truncated });
const NOTHING = nothing(false);
const NOTHING_TRUNCATED = nothing(true);

/** Compiles a classifier for the chosen categories (once per policy version). */
export function compileOutputClassifier(categories: readonly OutputCategory[], caps: WalkCaps = DEFAULT_CAPS): OutputClassifier {
  const want = new Set(categories);
  const perLeaf = LEAF_CATEGORIES.filter((c) => want.has(c));

  const classifyLeaves = (leaves: Leaves, source: LeafSource): OutputClassification => {
    const findings: Finding[] = [];
    // Past MAX_FINDINGS nothing more is listed, so the remaining leaves need not be asked.
    for (let i = 0; i < leaves.texts.length && findings.length < MAX_FINDINGS; i++) {
      for (const c of perLeaf) {
        const found = source.leafCategory(c, i);
        for (let k = 0; k < found.length && findings.length < MAX_FINDINGS; k++) findings.push({ code: CODES[c], ...found[k] });
      }
    }
    if (want.has('injection')) {
      const r = source.outputInjection();
      if (r.top && r.score >= RECOMMENDED_THRESHOLD && findings.length < MAX_FINDINGS)
        findings.push({ code: CODES.injection, path: r.top.path, start: r.top.start, end: r.top.end, score: r.score, kind: r.top.code });
    }
    // The usual answer, nothing found: one shared (frozen) answer, without the set of categories.
    if (findings.length === 0) return leaves.truncated ? NOTHING_TRUNCATED : NOTHING;
    const found = new Set(findings.map((f) => f.code.slice('output.'.length) as OutputCategory));
    return { findings, categories: categories.filter((c) => found.has(c)), truncated: leaves.truncated || findings.length >= MAX_FINDINGS };
  };

  return {
    classifyLeaves,
    classify(value, root = 'output', injection = scanInjection) {
      const leaves = collectStrings(value, root, caps);
      return classifyLeaves(leaves, { leafCategory: (c, i) => leafFindings(c, leaves, i), outputInjection: () => injection(value, root) });
    },
  };
}

/** The findings of `result` whose category is in the policy's blockOn. */
export const blocking = (result: OutputClassification, blockOn: readonly OutputCategory[]): Finding[] =>
  result.findings.filter((f) => blockOn.includes(f.code.slice('output.'.length) as OutputCategory));

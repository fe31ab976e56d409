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
 */
import type { OutputCategory } from '../rules.js';
import { RECOMMENDED_THRESHOLD, scanInjection, type InjectionResult } from './injection.js';
import { compilePiiDetector, MAX_FINDINGS } from './pii.js';
import type { Finding, ScanResult } from './types.js';
import { DEFAULT_CAPS, walkStrings, type WalkCaps } from './walk.js';

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

export interface OutputClassifier {
  /** `injection` scans for the injection category; the engine passes its per-request memo so one scan serves every policy. */
  classify(value: unknown, root?: string, injection?: (value: unknown, root: string) => InjectionResult): OutputClassification;
}

/** Compiles a classifier for the chosen categories (once per policy version). */
export function compileOutputClassifier(categories: readonly OutputCategory[], caps: WalkCaps = DEFAULT_CAPS): OutputClassifier {
  const want = new Set(categories);
  const pii = want.has('pii') ? compilePiiDetector({ detect: ['email', 'phone', 'credit_card', 'ssn', 'iban', 'ip_address'] }) : null;
  const secrets = want.has('secrets') ? compilePiiDetector({ detect: ['api_key', 'jwt'] }) : null;

  const classify = (value: unknown, root = 'output', injection = scanInjection): OutputClassification => {
    const findings: Finding[] = [];
    const add = (category: OutputCategory, f: Omit<Finding, 'code'>) => {
      if (findings.length < MAX_FINDINGS) findings.push({ code: `output.${category}`, ...f });
    };
    const { truncated } = walkStrings(value, root, (text, path) => {
      for (const [category, detector] of [['pii', pii], ['secrets', secrets]] as const) {
        if (!detector) continue;
        const found: Finding[] = [];
        detector.scanText(text, path, found);
        for (const f of found) add(category, { path, start: f.start, end: f.end, score: f.score, kind: f.code });
      }
      if (want.has('profanity')) {
        PROFANITY.lastIndex = 0;
        const t = unleet(text); // same length: leet characters are replaced one for one
        for (let m = PROFANITY.exec(t); m; m = PROFANITY.exec(t)) add('profanity', { path, start: m.index, end: m.index + m[0].length, score: 0.9, kind: 'profanity' });
      }
      if (want.has('url')) {
        URL.lastIndex = 0;
        for (let m = URL.exec(text); m; m = URL.exec(text)) {
          let end = m.index + m[0].length;
          while (end > m.index && '.,;:!?'.includes(text[end - 1])) end--; // sentence punctuation is not part of the address
          add('url', { path, start: m.index, end, score: 1, kind: 'url' });
        }
      }
      if (want.has('code')) {
        FENCE.lastIndex = 0;
        const fence = FENCE.exec(text);
        if (fence) add('code', { path, start: fence.index, end: text.length, score: 0.9, kind: 'fenced' });
        else {
          CODE_LINE.lastIndex = 0;
          const lines: RegExpExecArray[] = [];
          for (let m = CODE_LINE.exec(text); m && lines.length < 3; m = CODE_LINE.exec(text)) {
            if (m[0].length === 0) CODE_LINE.lastIndex++;
            else lines.push(m);
          }
          if (lines.length >= 2) add('code', { path, start: lines[0].index, end: lines[lines.length - 1].index + lines[lines.length - 1][0].length, score: lines.length >= 3 ? 0.8 : 0.6, kind: 'lines' });
        }
      }
    }, caps);
    if (want.has('injection')) {
      const r = injection(value, root);
      if (r.top && r.score >= RECOMMENDED_THRESHOLD) add('injection', { path: r.top.path, start: r.top.start, end: r.top.end, score: r.score, kind: r.top.code });
    }
    const found = new Set(findings.map((f) => f.code.slice('output.'.length) as OutputCategory));
    return { findings, categories: categories.filter((c) => found.has(c)), truncated: truncated || findings.length >= MAX_FINDINGS };
  };
  return { classify };
}

/** The findings of `result` whose category is in the policy's blockOn. */
export const blocking = (result: OutputClassification, blockOn: readonly OutputCategory[]): Finding[] =>
  result.findings.filter((f) => blockOn.includes(f.code.slice('output.'.length) as OutputCategory));

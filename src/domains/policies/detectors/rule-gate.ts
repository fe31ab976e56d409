/**
 * A cheap pre-test for each injection cue, derived from its own source: when the regex starts with
 * a group of alternatives (`\b(?:ignore|disregard|...)`), the cue can only match if the text holds
 * one of their literal beginnings. Whole words are looked up in the text's word set, partial ones
 * (`ignore[zr]?`, `pretend(?: to be...)`, Cyrillic and CJK stems) with `includes`. A regex that does
 * not start that way always runs. This keeps the detector's cost per call near one pass over the
 * words instead of one pass per cue (bench/README.md, "bench:detectors").
 */

export interface Gate {
  words: string[];
  stems: string[];
}

const META_CHARS = new Set(['\\', '(', ')', '[', ']', '{', '}', '?', '*', '+', '|', '.', '^', '$']);

/** Splits the top-level alternatives of the group that opens at `open` (its `(`); null if unbalanced. */
function alternatives(src: string, open: number): string[] | null {
  let depth = 0;
  let start = src.startsWith('(?:', open) ? open + 3 : open + 1;
  const out: string[] = [];
  for (let i = open; i < src.length; i++) {
    const c = src[i];
    if (c === '\\') {
      i++;
      continue;
    }
    if (c === '[') {
      while (i < src.length && src[i] !== ']') i += src[i] === '\\' ? 2 : 1;
      continue;
    }
    if (c === '(') depth++;
    else if (c === ')') {
      depth--;
      if (depth === 0) {
        out.push(src.slice(start, i));
        return out;
      }
    } else if (c === '|' && depth === 1) {
      out.push(src.slice(start, i));
      start = i + 1;
    }
  }
  return null;
}

/** The gate of a cue's source, or null when the cue must always run. */
export function gateOf(source: string): Gate | null {
  const body = source.startsWith('\\b') ? source.slice(2) : source;
  if (body[0] !== '(' && !META_CHARS.has(body[0])) {
    // A literal opening (`\bfrom now on\b`, `システムプロンプトを`): its longest literal prefix.
    let lit = '';
    for (let i = 0; i < body.length && !META_CHARS.has(body[i]); i++) lit += body[i];
    if (/[?*{]/.test(body[lit.length] ?? '')) lit = lit.slice(0, -1);
    return lit.length >= 3 ? { words: [], stems: [lit] } : null;
  }
  const open = source.startsWith('\\b(') ? 2 : source.startsWith('(?:') && !source.startsWith('(?:^') ? 0 : -1;
  if (open < 0) return null;
  const alts = alternatives(source, open);
  if (!alts) return null;
  const words: string[] = [];
  const stems: string[] = [];
  for (const alt of alts) {
    let lit = '';
    let whole = true;
    for (let i = 0; i < alt.length; i++) {
      const c = alt[i];
      if (c === ' ' && /^[a-z']+$/.test(lit)) break; // first word of a phrase
      if (META_CHARS.has(c)) {
        if (c === '?' || c === '*' || c === '{') lit = lit.slice(0, -1);
        whole = false;
        break;
      }
      lit += c;
    }
    if (lit.length < (/^[\x00-\x7f]*$/.test(lit) ? 2 : 1)) return null;
    if (whole && /^[a-z']+$/.test(lit)) words.push(lit);
    else stems.push(lit);
  }
  return { words, stems };
}

/**
 * All cues' gates indexed for one pass over a text: gate word → cues, stems tested with
 * `includes`, and the cues without a gate.
 */
export class GateIndex {
  private readonly byWord = new Map<string, number[]>();
  private readonly stems: Array<[string, number]> = [];
  private readonly wideStems: Array<[string, number]> = []; // non-ASCII: only tested on non-ASCII text
  private readonly always: number[] = [];
  private readonly size: number;

  constructor(gates: ReadonlyArray<Gate | null>) {
    this.size = gates.length;
    gates.forEach((g, i) => {
      if (!g) return void this.always.push(i);
      for (const w of g.words) {
        const list = this.byWord.get(w) ?? [];
        list.push(i);
        this.byWord.set(w, list);
      }
      for (const st of g.stems) (/^[\x00-\x7f]*$/.test(st) ? this.stems : this.wideStems).push([st, i]);
    });
  }

  /** Marks (1) the cues that may match `text`; `ascii` when the text has no other characters. */
  open(text: string, ascii = false): Uint8Array {
    const out = new Uint8Array(this.size);
    for (const i of this.always) out[i] = 1;
    for (const [st, i] of this.stems) if (!out[i] && text.includes(st)) out[i] = 1;
    if (!ascii) for (const [st, i] of this.wideStems) if (!out[i] && text.includes(st)) out[i] = 1;
    let start = -1;
    for (let k = 0; k <= text.length; k++) {
      const c = k < text.length ? text.charCodeAt(k) : 32;
      const inWord = (c >= 97 && c <= 122) || c === 39;
      if (inWord) {
        if (start < 0) start = k;
      } else if (start >= 0) {
        if (k - start <= 20) {
          const list = this.byWord.get(text.slice(start, k));
          if (list) for (const i of list) out[i] = 1;
        }
        start = -1;
      }
    }
    return out;
  }
}

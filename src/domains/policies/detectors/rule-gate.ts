/**
 * A cheap pre-test for each injection cue, derived from its own source: when the regex starts with
 * a group of alternatives (`\b(?:ignore|disregard|...)`), the cue can only match if the text holds
 * one of their literal beginnings. Whole words are looked up in the text's word set, partial ones
 * (`ignore[zr]?`, `pretend(?: to be...)`, Cyrillic and CJK stems) with `includes`. A regex that does
 * not start that way always runs. All gates are matched together in one pass over the text
 * (GateIndex), so the detector's cost per call does not grow with the number of cues
 * (bench/README.md, "bench:detectors"; docs/decisions.md, "Detector speed").
 */

export interface Gate {
  /** Whole words, one of which (or one of `stems`) must be in the text; none of either: no such condition. */
  words: string[];
  stems: string[];
  /** And, for each group, one of its substrings (a second condition for cues whose opening words are common). */
  also?: string[][];
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

/** Characters of a gate word: a word is a maximal run of them in the folded text. */
const isWordChar = (c: number) => (c >= 97 && c <= 122) || c === 39;

/**
 * All cues' gates indexed for one pass over a text: every ASCII word and stem goes into one
 * Aho-Corasick automaton, compiled to a dense transition table over the characters the gates use
 * (docs/decisions.md, "Detector speed"), so the cost per call is one table lookup per character
 * whatever the number of cues. A word counts only as a whole word (a maximal run of `a-z` and `'`),
 * a stem anywhere. Non-ASCII stems (Cyrillic, CJK) are few and tested with `includes`, on
 * non-ASCII text only; cues without a gate are always open.
 */
export class GateIndex {
  private readonly wideStems: Array<[string, number]> = []; // non-ASCII: only tested on non-ASCII text
  private readonly always: number[] = [];
  private readonly size: number;
  /** Cues with `also` groups, with the slots (after `size`) that mark each group found. */
  private readonly conditional: Array<[number, number[]]> = [];
  private readonly slots: number;
  /** Character code (< 128) → column of the table; 0 for characters no gate uses. */
  private readonly column = new Uint8Array(128);
  private readonly width: number;
  /** Next state by (state × width + column). */
  private readonly next: Int32Array;
  /** Per state, the gates ending there (own and through failure links): [cue, length, whole (1/0)] triples. */
  private readonly outputs: Int32Array[];
  /** 1 for the states with outputs (the scan reads this byte per character, the list only on a hit). */
  private readonly final: Uint8Array;

  constructor(gates: ReadonlyArray<Gate | null>) {
    this.size = gates.length;
    const patterns: Array<[string, number, boolean]> = [];
    const stem = (st: string, slot: number) => (/^[\x00-\x7f]*$/.test(st) ? patterns.push([st, slot, false]) : this.wideStems.push([st, slot]));
    let slot = gates.length;
    gates.forEach((g, i) => {
      if (!g || (g.words.length === 0 && g.stems.length === 0)) this.always.push(i);
      if (!g) return;
      for (const w of g.words) patterns.push([w, i, true]);
      for (const st of g.stems) stem(st, i);
      if (g.also?.length) {
        const groups: number[] = [];
        for (const group of g.also) {
          for (const st of group) stem(st, slot);
          groups.push(slot++);
        }
        this.conditional.push([i, groups]);
      }
    });
    this.slots = slot;
    let width = 1;
    for (const [p] of patterns) for (let k = 0; k < p.length; k++) if (this.column[p.charCodeAt(k)] === 0) this.column[p.charCodeAt(k)] = width++;
    this.width = width;
    // The trie, then failure links breadth first, then the dense table (a DFA: no failure walk at scan time).
    const trie: Array<Map<number, number>> = [new Map()];
    const own: number[][] = [[]];
    for (const [p, cue, whole] of patterns) {
      let s = 0;
      for (let k = 0; k < p.length; k++) {
        const col = this.column[p.charCodeAt(k)];
        let t = trie[s].get(col);
        if (t === undefined) {
          t = trie.length;
          trie.push(new Map());
          own.push([]);
          trie[s].set(col, t);
        }
        s = t;
      }
      own[s].push(cue, p.length, whole ? 1 : 0);
    }
    const n = trie.length;
    const next = new Int32Array(n * width);
    const fail = new Int32Array(n);
    const outs: number[][] = own.map((o) => o.slice());
    const queue: number[] = [];
    for (let col = 0; col < width; col++) {
      const t = trie[0].get(col);
      next[col] = t ?? 0;
      if (t !== undefined) queue.push(t);
    }
    for (let qi = 0; qi < queue.length; qi++) {
      const s = queue[qi];
      outs[s].push(...outs[fail[s]]);
      for (let col = 0; col < width; col++) {
        const t = trie[s].get(col);
        if (t === undefined) next[s * width + col] = next[fail[s] * width + col];
        else {
          fail[t] = next[fail[s] * width + col];
          next[s * width + col] = t;
          queue.push(t);
        }
      }
    }
    this.next = next;
    this.outputs = outs.map((o) => Int32Array.from(o));
    this.final = Uint8Array.from(outs, (o) => (o.length > 0 ? 1 : 0));
  }

  /** Marks (1) the cues that may match `text` (indexes past the cues are internal); `ascii` when the text has no other characters. */
  open(text: string, ascii = false): Uint8Array {
    const out = new Uint8Array(this.slots);
    for (const i of this.always) out[i] = 1;
    if (!ascii) for (const [st, i] of this.wideStems) if (!out[i] && text.includes(st)) out[i] = 1;
    const { column, next, outputs, width, final } = this;
    const n = text.length;
    let s = 0;
    for (let k = 0; k < n; k++) {
      const c = text.charCodeAt(k);
      // No ASCII gate spans a non-ASCII character: back to the root.
      s = c < 128 ? next[s * width + column[c]] : 0;
      if (final[s] === 0) continue;
      const o = outputs[s];
      for (let j = 0; j < o.length; j += 3) {
        const cue = o[j];
        if (out[cue]) continue;
        if (o[j + 2] === 1) {
          const start = k + 1 - o[j + 1];
          if ((start > 0 && isWordChar(text.charCodeAt(start - 1))) || (k + 1 < n && isWordChar(text.charCodeAt(k + 1)))) continue;
        }
        out[cue] = 1;
      }
    }
    for (const [cue, groups] of this.conditional) if (out[cue] && !groups.every((g) => out[g] === 1)) out[cue] = 0;
    return out;
  }
}

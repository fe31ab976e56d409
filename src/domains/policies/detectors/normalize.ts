/**
 * Text normalisation for the injection detector: one folded view (NFKD compatibility forms so
 * full-width and styled letters become plain ones, combining marks dropped, lower case, curly quotes
 * straightened, invisible characters removed) that keeps, for each of its characters, the offset of
 * the original character, so findings point into the caller's string. Derived views (homoglyphs,
 * leet, spaced letters) are built from it with the same mapping.
 */

export interface View {
  text: string;
  /** Original offset of each character of `text`; null when it is the identity (ASCII input). */
  map: Int32Array | null;
}

export interface Folded extends View {
  /** Invisible characters removed (zero-width, joiners, bidi controls, variation selectors). */
  invisibles: number;
  /** Unicode tag characters decoded to ASCII (the "ASCII smuggling" trick), or ''. */
  tags: string;
}

// Zero-width and format characters that render as nothing.
const INVISIBLE = /[\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0]/;
const PUNCT: Record<string, string> = { '\u2018': "'", '\u2019': "'", '\u201a': "'", '\u201b': "'", '\u201c': '"', '\u201d': '"', '\u201e': '"', '\u00ab': '"', '\u00bb': '"', '\u2013': '-', '\u2014': '-', '\u2212': '-', '\u00a0': ' ' };
const foldCache = new Map<number, string>();

function foldCodePoint(cp: number): string {
  let s = foldCache.get(cp);
  if (s === undefined) {
    const ch = String.fromCodePoint(cp);
    s = PUNCT[ch] ?? ch.normalize('NFKD').replace(/\p{M}/gu, '').toLowerCase();
    if (foldCache.size < 20_000) foldCache.set(cp, s);
  }
  return s;
}

/** The folded view of `src` (see the file comment). */
export function fold(src: string): Folded {
  // eslint-disable-next-line no-control-regex
  if (!/[^\x00-\x7f]/.test(src)) {
    return { text: src.toLowerCase(), map: null, invisibles: 0, tags: '' };
  }
  const out: string[] = [];
  const map: number[] = [];
  let invisibles = 0;
  let tags = '';
  for (let i = 0; i < src.length; ) {
    const cp = src.codePointAt(i)!;
    const width = cp > 0xffff ? 2 : 1;
    if (cp < 0x80) {
      out.push(cp >= 65 && cp <= 90 ? String.fromCharCode(cp + 32) : src[i]);
      map.push(i);
    } else if (cp >= 0xe0000 && cp <= 0xe007f) {
      invisibles++;
      if (cp >= 0xe0020 && cp <= 0xe007e) tags += String.fromCharCode(cp - 0xe0000);
    } else if ((cp >= 0xe0100 && cp <= 0xe01ef) || INVISIBLE.test(String.fromCharCode(cp))) {
      invisibles++;
    } else {
      const f = foldCodePoint(cp);
      for (let k = 0; k < f.length; k++) (out.push(f[k]), map.push(i));
    }
    i += width;
  }
  return { text: out.join(''), map: Int32Array.from(map), invisibles, tags };
}

/** The original offset of the view's character `i`. */
export const originalOffset = (view: View, i: number): number => (view.map ? (view.map[i] ?? view.map[view.map.length - 1] ?? 0) : i);

/** A view with characters replaced one for one (same length, same map). */
export function mapChars(view: View, replace: (ch: string, i: number, text: string) => string): View {
  const t = view.text;
  let out = '';
  for (let i = 0; i < t.length; i++) out += replace(t[i], i, t);
  return { text: out, map: view.map };
}

/** A view keeping only the characters for which `keep` is true. */
export function filterChars(view: View, keep: (i: number) => string | null): View {
  const out: string[] = [];
  const map: number[] = [];
  for (let i = 0; i < view.text.length; i++) {
    const c = keep(i);
    if (c !== null) (out.push(c), map.push(view.map ? view.map[i] : i));
  }
  return { text: out.join(''), map: Int32Array.from(map) };
}

const HOMOGLYPHS: Record<string, string> = {
  а: 'a', в: 'b', е: 'e', ё: 'e', к: 'k', м: 'm', н: 'h', о: 'o', р: 'p', с: 'c', т: 't', у: 'y', х: 'x', і: 'i', ї: 'i', ј: 'j', ѕ: 's', ԁ: 'd', ԛ: 'q', ԝ: 'w', һ: 'h',
  α: 'a', β: 'b', ε: 'e', η: 'n', ι: 'i', κ: 'k', ν: 'v', ο: 'o', ρ: 'p', τ: 't', υ: 'u', χ: 'x', ϲ: 'c', ɡ: 'g', ı: 'i',
};

/** Whether some word mixes Latin letters with Cyrillic or Greek ones. */
export const hasMixedScript = (t: string) => /[a-z][\u0370-\u03ff\u0400-\u04ff]|[\u0370-\u03ff\u0400-\u04ff][a-z]/.test(t);

/** Cyrillic and Greek look-alikes replaced by the Latin letters they imitate. */
export const deconfuse = (v: View): View => mapChars(v, (c) => HOMOGLYPHS[c] ?? c);

const LEET: Record<string, string> = { '0': 'o', '1': 'i', '3': 'e', '4': 'a', '5': 's', '7': 't', '@': 'a', $: 's', '!': 'i', '|': 'i' };
const isLetter = (c: string | undefined) => c !== undefined && c >= 'a' && c <= 'z';

/**
 * Whether some word has digits standing for letters (`1gn0r3`, `pr3v10us`). A word made only of
 * hexadecimal characters (ids, hashes) does not count, and neither do `@` and `$` alone (addresses,
 * prices): they would build the leet view for most payloads.
 */
export const hasLeet = (t: string) => /\b(?=[a-z0-9]*[g-z])(?:[a-z0-9]*[a-z][013457][a-z]|[013457][a-z]{2}|[a-z0-9]*[a-z]{2}[013457]\b)/.test(t);

/** Leet digits and symbols next to a letter read as letters; `l` reads as `i` (rules are matched with the same substitution). */
export const unleet = (v: View): View =>
  mapChars(v, (c, i, t) => (c === 'l' ? 'i' : LEET[c] !== undefined && (isLetter(t[i - 1]) || isLetter(t[i + 1])) ? LEET[c] : c));

const SPACED = /(?<![a-z])(?:[a-z](?:[ .\-_*+]| {2,}| ?\/ ?)){4,}[a-z](?![a-z])/g;

/** Whether the text spells words letter by letter (`i g n o r e`). */
export const hasSpacedLetters = (t: string) => /\b[a-z][ .\-_*][a-z][ .\-_*][a-z][ .\-_*][a-z][ .\-_*][a-z]\b/.test(t);

/** Letter-by-letter runs joined: the run's most common separator is dropped, any other becomes one space. */
export function despace(v: View): View {
  const drop = new Uint8Array(v.text.length);
  const space = new Uint8Array(v.text.length);
  SPACED.lastIndex = 0;
  for (let m = SPACED.exec(v.text); m; m = SPACED.exec(v.text)) {
    const seps: Array<[number, string]> = [];
    const run = m[0];
    for (let k = 0; k < run.length; ) {
      if (isLetter(run[k])) {
        k++;
        continue;
      }
      let e = k;
      while (e < run.length && !isLetter(run[e])) e++;
      seps.push([m.index + k, run.slice(k, e)]);
      k = e;
    }
    const counts = new Map<string, number>();
    for (const [, sep] of seps) counts.set(sep, (counts.get(sep) ?? 0) + 1);
    const common = [...counts].sort((a, b) => b[1] - a[1])[0]?.[0];
    for (const [at, sep] of seps) {
      for (let k = 0; k < sep.length; k++) {
        if (sep === common || k > 0) drop[at + k] = 1;
        else space[at + k] = 1;
      }
    }
  }
  return filterChars(v, (i) => (drop[i] ? null : space[i] ? ' ' : v.text[i]));
}

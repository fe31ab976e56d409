/**
 * Walks a request's `input` or `output` (a string or any JSON value) and collects its string leaves
 * with their dotted paths, within fixed caps so that a 1 MB body costs a bounded time
 * (docs/decisions.md, "Policy detectors"). Object keys are not scanned; integers of 9 or more digits
 * are scanned as their decimal text (a card number sent as a number). The engine collects each root
 * once per decision and hands the leaves to every detector (docs/decisions.md, "Detector speed").
 */

export interface WalkCaps {
  /** Characters scanned over the whole value; a longer leaf is cut, later leaves are skipped. */
  maxChars: number;
  maxDepth: number;
  maxNodes: number;
}

export const DEFAULT_CAPS: WalkCaps = { maxChars: 256 * 1024, maxDepth: 32, maxNodes: 10_000 };

/** The string leaves of a value, in walk order. */
export interface Leaves {
  readonly texts: string[];
  /** Whether a cap cut the walk short. */
  readonly truncated: boolean;
  /** Characters in all (the sum of the texts' lengths). */
  readonly chars: number;
  /** The dotted path of leaf `i` (`input.messages.3.content`), built on first ask. */
  path(i: number): string;
}

/**
 * Leaves whose paths are built only when asked (docs/decisions.md, "Detector speed"): paths serve
 * findings' evidence only, and most requests have no finding, so the walk keeps just the texts. The
 * first two paths asked are each found by a walk that stops at their leaf (`seekPath`, same caps and
 * order, so the same numbering), keeping only the keys on the way; a third walks the value again
 * recording, per leaf and per object or array, its parent's index and its key, and every later path
 * is joined from that chain, its parent's path kept for its siblings. The value is the request's,
 * never changed during a decision.
 */
class WalkedLeaves implements Leaves {
  readonly texts: string[] = [];
  truncated = false;
  chars = 0;
  /** Per leaf: parent container's index (-1: the leaf is the root value), key in it (filled on the first path asked). */
  private leafLinks?: Array<number | string>;
  /** Per object or array, in walk order: parent container's index (-1: the root), key in it. */
  private nodeLinks?: Array<number | string>;
  private leafPaths?: string[];
  private nodePaths?: string[];
  /** Paths found by a walk that stops at their leaf (`seekPath`): leaf, path, leaf, path (a list of pairs, not an array as long as the leaves). */
  private sought?: Array<number | string>;

  constructor(
    private readonly value: unknown,
    private readonly root: string,
    private readonly caps: WalkCaps,
  ) {}

  path(i: number): string {
    // A leaf that does not exist has no chain to follow (the join would recurse without end).
    if (!(i >= 0 && i < this.texts.length)) throw new RangeError(`no leaf ${i} (${this.texts.length} leaves)`);
    const sought = this.sought;
    if (sought) for (let k = 0; k < sought.length; k += 2) if (sought[k] === i) return sought[k + 1] as string;
    if (!this.leafLinks && (sought === undefined || sought.length < 2 * SEEKS)) {
      // A decision usually reports findings of one or two leaves: a walk that stops at the leaf and
      // keeps only its keys costs less than recording every leaf's and container's link.
      const path = seekPath(this.value, this.root, this.caps, i);
      (this.sought ??= []).push(i, path);
      return path;
    }
    if (!this.leafLinks) {
      const w = walkOf(this.caps, null, (this.leafLinks = []), (this.nodeLinks = []));
      if (this.value !== undefined) go(w, this.value, -1, '', 0);
    }
    const memo = (this.leafPaths ??= []);
    return (memo[i] ??= this.joinPath(this.leafLinks[2 * i] as number, this.leafLinks[2 * i + 1]));
  }

  /** The path of a child named `key` of container `parent` (-1: `key` is unused, the root itself). */
  private joinPath(parent: number, key: number | string): string {
    return parent < 0 ? this.root : `${this.nodePath(parent)}.${key}`;
  }

  private nodePath(c: number): string {
    const memo = (this.nodePaths ??= []);
    return (memo[c] ??= this.joinPath(this.nodeLinks![2 * c] as number, this.nodeLinks![2 * c + 1]));
  }
}

/** The walk's running state (one object per walk instead of closures over locals); it records texts or links, one or the other. */
interface Walk {
  texts: string[] | null;
  leafLinks: Array<number | string> | null;
  nodeLinks: Array<number | string> | null;
  truncated: boolean;
  chars: number;
  nodes: number;
  maxDepth: number;
}

const walkOf = (caps: WalkCaps, texts: string[] | null, leafLinks: Array<number | string> | null, nodeLinks: Array<number | string> | null): Walk => ({
  texts,
  leafLinks,
  nodeLinks,
  truncated: false,
  chars: caps.maxChars,
  nodes: caps.maxNodes,
  maxDepth: caps.maxDepth,
});

/** Visits `v`, the child `key` of container `parent` (-1: the root value). */
function go(w: Walk, v: unknown, parent: number, key: number | string, depth: number): void {
  if (w.chars <= 0 || w.nodes <= 0) return void (w.truncated = true);
  w.nodes--;
  if (typeof v === 'string') {
    if (v.length === 0) return;
    const cut = v.length > w.chars;
    if (cut) w.truncated = true;
    if (w.texts) w.texts.push(cut ? v.slice(0, w.chars) : v);
    else w.leafLinks!.push(parent, key);
    w.chars -= cut ? w.chars : v.length;
  } else if (typeof v === 'number') {
    if (Number.isInteger(v) && Math.abs(v) >= 1e8) go(w, String(Math.abs(v)), parent, key, depth);
  } else if (v !== null && typeof v === 'object') {
    if (depth >= w.maxDepth) return void (w.truncated = true);
    const links = w.nodeLinks;
    const self = links ? links.push(parent, key) / 2 - 1 : 0;
    if (Array.isArray(v)) {
      for (let i = 0; i < v.length; i++) go(w, v[i], self, i, depth + 1);
    } else {
      for (const k in v as Record<string, unknown>) {
        if (Object.prototype.hasOwnProperty.call(v, k)) go(w, (v as Record<string, unknown>)[k], self, k, depth + 1);
      }
    }
  }
}

/** How many paths a Leaves finds by `seekPath` before it records every link in one walk. */
const SEEKS = 2;

/** The state of a walk that stops at leaf number `target`: `go`'s caps and counts, and the keys on the way back. */
interface Seek {
  target: number;
  leaf: number;
  chars: number;
  nodes: number;
  maxDepth: number;
  /** The keys from the leaf up to the root's child (filled on the way back once the leaf is reached). */
  keys: Array<number | string>;
}

/**
 * Visits `v` as `go` does (the same caps, counts and order, so the same leaves and numbering) until
 * leaf `s.target`: true once reached, its keys then pushed on the way back.
 */
function seek(s: Seek, v: unknown, depth: number): boolean {
  if (s.chars <= 0 || s.nodes <= 0) return false;
  s.nodes--;
  if (typeof v === 'string') {
    if (v.length === 0) return false;
    if (s.leaf++ === s.target) return true;
    s.chars -= v.length > s.chars ? s.chars : v.length;
  } else if (typeof v === 'number') {
    if (Number.isInteger(v) && Math.abs(v) >= 1e8) return seek(s, String(Math.abs(v)), depth);
  } else if (v !== null && typeof v === 'object') {
    if (depth >= s.maxDepth) return false;
    if (Array.isArray(v)) {
      for (let i = 0; i < v.length; i++) if (seek(s, v[i], depth + 1)) return s.keys.push(i) > 0;
    } else {
      for (const k in v as Record<string, unknown>) {
        if (Object.prototype.hasOwnProperty.call(v, k) && seek(s, (v as Record<string, unknown>)[k], depth + 1)) return s.keys.push(k) > 0;
      }
    }
  }
  return false;
}

/** The dotted path of leaf `i` of `value` (an existing leaf of collectStrings with the same caps), by a walk that stops there. */
function seekPath(value: unknown, root: string, caps: WalkCaps, i: number): string {
  const s: Seek = { target: i, leaf: 0, chars: caps.maxChars, nodes: caps.maxNodes, maxDepth: caps.maxDepth, keys: [] };
  if (value === undefined || !seek(s, value, 0)) throw new RangeError(`no leaf ${i}`);
  let path = root;
  for (let k = s.keys.length - 1; k >= 0; k--) path += `.${s.keys[k]}`;
  return path;
}

/** The string leaves of `value` (whose field is named `root`) within `caps`. */
export function collectStrings(value: unknown, root: string, caps: WalkCaps = DEFAULT_CAPS): Leaves {
  const out = new WalkedLeaves(value, root, caps);
  const w = walkOf(caps, out.texts, null, null);
  if (value !== undefined) go(w, value, -1, '', 0);
  out.truncated = w.truncated;
  out.chars = caps.maxChars - w.chars;
  return out;
}

/** Each text's offset in the texts joined by separators of `gap` characters. */
export function leafStarts(texts: readonly string[], gap: number): number[] {
  const starts: number[] = new Array(texts.length);
  for (let i = 0, at = 0; i < texts.length; i++) (starts[i] = at), (at += texts[i].length + gap);
  return starts;
}

/** Index of the text holding joined offset `at` (the last of `starts` at or before it). */
export function leafAt(starts: readonly number[], at: number): number {
  let lo = 0;
  let hi = starts.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (starts[mid] <= at) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

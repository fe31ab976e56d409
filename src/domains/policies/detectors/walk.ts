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
  readonly paths: string[];
  /** Whether a cap cut the walk short. */
  readonly truncated: boolean;
  /** Characters in all (the sum of the texts' lengths). */
  readonly chars: number;
}

/** The walk's running state (one object per walk instead of closures over locals). */
interface Walk {
  texts: string[];
  paths: string[];
  chars: number;
  nodes: number;
  truncated: boolean;
  maxDepth: number;
}

function go(w: Walk, v: unknown, path: string, depth: number): void {
  if (w.chars <= 0 || w.nodes <= 0) return void (w.truncated = true);
  w.nodes--;
  if (typeof v === 'string') {
    if (v.length === 0) return;
    const text = v.length > w.chars ? ((w.truncated = true), v.slice(0, w.chars)) : v;
    w.chars -= text.length;
    w.texts.push(text);
    w.paths.push(path);
  } else if (typeof v === 'number') {
    if (Number.isInteger(v) && Math.abs(v) >= 1e8) go(w, String(Math.abs(v)), path, depth);
  } else if (v !== null && typeof v === 'object') {
    if (depth >= w.maxDepth) return void (w.truncated = true);
    if (Array.isArray(v)) {
      for (let i = 0; i < v.length; i++) go(w, v[i], `${path}.${i}`, depth + 1);
    } else {
      for (const k in v as Record<string, unknown>) {
        if (Object.prototype.hasOwnProperty.call(v, k)) go(w, (v as Record<string, unknown>)[k], `${path}.${k}`, depth + 1);
      }
    }
  }
}

/** The string leaves of `value` (whose field is named `root`) within `caps`. */
export function collectStrings(value: unknown, root: string, caps: WalkCaps = DEFAULT_CAPS): Leaves {
  const w: Walk = { texts: [], paths: [], chars: caps.maxChars, nodes: caps.maxNodes, truncated: false, maxDepth: caps.maxDepth };
  if (value !== undefined) go(w, value, root, 0);
  return { texts: w.texts, paths: w.paths, truncated: w.truncated, chars: caps.maxChars - w.chars };
}

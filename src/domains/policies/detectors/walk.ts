/**
 * Walks a request's `input` or `output` (a string or any JSON value) and hands each string leaf to a
 * visitor with its dotted path, within fixed caps so that a 1 MB body costs a bounded time
 * (docs/decisions.md, "Policy detectors"). Object keys are not scanned; integers of 9 or more digits
 * are scanned as their decimal text (a card number sent as a number).
 */

export interface WalkCaps {
  /** Characters scanned over the whole value; a longer leaf is cut, later leaves are skipped. */
  maxChars: number;
  maxDepth: number;
  maxNodes: number;
}

export const DEFAULT_CAPS: WalkCaps = { maxChars: 256 * 1024, maxDepth: 32, maxNodes: 10_000 };

/** Calls `visit(text, path)` for each string leaf; answers whether a cap cut the walk short. */
export function walkStrings(value: unknown, root: string, visit: (text: string, path: string) => void, caps: WalkCaps = DEFAULT_CAPS): { truncated: boolean } {
  let chars = caps.maxChars;
  let nodes = caps.maxNodes;
  let truncated = false;
  const go = (v: unknown, path: string, depth: number): void => {
    if (chars <= 0 || nodes <= 0) return void (truncated = true);
    nodes--;
    if (typeof v === 'string') {
      if (v.length === 0) return;
      const text = v.length > chars ? ((truncated = true), v.slice(0, chars)) : v;
      chars -= text.length;
      visit(text, path);
    } else if (typeof v === 'number') {
      if (Number.isInteger(v) && Math.abs(v) >= 1e8) go(String(Math.abs(v)), path, depth);
    } else if (v !== null && typeof v === 'object') {
      if (depth >= caps.maxDepth) return void (truncated = true);
      if (Array.isArray(v)) {
        for (let i = 0; i < v.length; i++) go(v[i], `${path}.${i}`, depth + 1);
      } else {
        for (const k in v as Record<string, unknown>) {
          if (Object.prototype.hasOwnProperty.call(v, k)) go((v as Record<string, unknown>)[k], `${path}.${k}`, depth + 1);
        }
      }
    }
  };
  go(value, root, 0);
  return { truncated };
}

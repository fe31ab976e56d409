/**
 * Globs for access_control and action_approval (action names and resources), compiled once per
 * policy version. Syntax: `*` any run of characters except `/`, `**` any run including `/`, `?` one
 * character except `/`, `\` escapes the next character; everything else is literal and case matters.
 * Matching simulates the glob as an automaton over the input (time O(input × glob), never
 * backtracking): picomatch, the common library, compiles `*a*a*a*b` to a regular expression that ran
 * for minutes on 5,000 characters, and resources are caller input on the hot path
 * (docs/decisions.md, "Policy detectors"). Deny-wins is the caller's rule.
 */
import { checkedString } from '../../http/validation.js';

export const MAX_GLOB_LENGTH = 200;

const ANY = -1; // `?`
const STAR = -2; // `*`
const GLOBSTAR = -3; // `**`

export interface Glob {
  readonly source: string;
  /** True when `value` matches the whole glob. */
  test(value: string): boolean;
}

/** Why a glob is refused, or null. */
export function globProblem(source: string): string | null {
  if (source.length === 0) return 'must not be empty';
  if (source.length > MAX_GLOB_LENGTH) return `must be at most ${MAX_GLOB_LENGTH} characters`;
  if (/\\$/.test(source.replace(/\\\\/g, ''))) return 'must not end with a lone backslash';
  return null;
}

/**
 * A glob as input (policy rules, access grants): not empty (documented as minLength 1), storable,
 * and accepted by globProblem. A function declaration, not a constant: access grants build their
 * schema while the policies module is still loading (an import cycle through the enforce route).
 */
export function globInput() {
  return checkedString(MAX_GLOB_LENGTH, globProblem, 'glob').min(1, 'glob must not be empty');
}

function tokenize(source: string): number[] {
  const out: number[] = [];
  for (let i = 0; i < source.length; i++) {
    const c = source.charCodeAt(i);
    if (c === 92 /* \ */ && i + 1 < source.length) out.push(source.charCodeAt(++i));
    else if (c === 63 /* ? */) out.push(ANY);
    else if (c === 42 /* * */) {
      let n = 1;
      while (source.charCodeAt(i + 1) === 42) (i++, n++);
      const t = n >= 2 ? GLOBSTAR : STAR;
      if (out[out.length - 1] === t || (out[out.length - 1] === GLOBSTAR && t === STAR)) continue;
      if (out[out.length - 1] === STAR && t === GLOBSTAR) out[out.length - 1] = GLOBSTAR;
      else out.push(t);
    } else out.push(c);
  }
  return out;
}

/** Compiles a glob (see the file comment); throws on a glob refused by globProblem. */
export function compileGlob(source: string): Glob {
  const problem = globProblem(source);
  if (problem) throw new Error(`glob ${problem}`);
  const tokens = tokenize(source);
  const wild = tokens.some((t) => t < 0);
  if (!wild) {
    const literal = String.fromCharCode(...tokens);
    return { source, test: (v) => v === literal };
  }
  // `prefix*` and `prefix**`: the common shapes, answered without the automaton.
  const last = tokens[tokens.length - 1];
  if ((last === STAR || last === GLOBSTAR) && tokens.slice(0, -1).every((t) => t >= 0)) {
    const prefix = String.fromCharCode(...tokens.slice(0, -1));
    return last === GLOBSTAR
      ? { source, test: (v) => v.startsWith(prefix) }
      : { source, test: (v) => v.startsWith(prefix) && v.indexOf('/', prefix.length) === -1 };
  }
  return { source, test: (v) => simulate(tokens, v) };
}

/** Whether `value` matches any of the compiled globs. */
export function matchesAny(globs: readonly Glob[], value: string): boolean {
  // A plain loop: `some` with a closure allocated per call, ~40 calls per decision (access_control on the hot path).
  for (let i = 0; i < globs.length; i++) if (globs[i].test(value)) return true;
  return false;
}

function simulate(tokens: number[], value: string): boolean {
  const m = tokens.length;
  let cur = new Uint8Array(m + 1);
  let next = new Uint8Array(m + 1);
  const close = (set: Uint8Array) => {
    // A star may match nothing: its state also stands for the state after it.
    for (let i = 0; i < m; i++) if (set[i] && tokens[i] <= STAR) set[i + 1] = 1;
  };
  cur[0] = 1;
  close(cur);
  for (let p = 0; p < value.length; p++) {
    const c = value.charCodeAt(p);
    next.fill(0);
    let any = false;
    for (let i = 0; i < m; i++) {
      if (!cur[i]) continue;
      const t = tokens[i];
      if (t === GLOBSTAR || (t === STAR && c !== 47)) (next[i] = 1), (any = true);
      else if (t === c || (t === ANY && c !== 47)) (next[i + 1] = 1), (any = true);
    }
    if (!any) return false;
    close(next);
    [cur, next] = [next, cur];
  }
  return cur[m] === 1;
}

/**
 * Admission check for user-supplied regular expressions (data_restriction `patterns`, custom
 * detectors). A pattern runs on the enforcement hot path over attacker-controlled text, so it must
 * not backtrack catastrophically. Rule (docs/decisions.md, "Policy detectors"): the pattern is parsed
 * with `ret`, every quantifier must be bounded (`{m,n}`, `?`; no `*`, `+`, `{m,}`), backreferences and
 * lookarounds are refused, and the number of ways the pattern can match from one start position (the
 * ambiguity bound: sequences multiply, alternatives add, a repetition sums child^k over its counts)
 * must stay at or below MAX_AMBIGUITY. Anything `ret` cannot parse is refused.
 */
import { createRequire } from 'node:module';
import type { Root, Token, types as RetTypes } from 'ret';

// `ret` is CommonJS and replaces module.exports with its tokenizer (types hang off it), which ESM
// named imports cannot see; require it as CommonJS code does.
const ret = createRequire(import.meta.url)('ret') as ((source: string) => Root) & { types: typeof RetTypes };
const { types } = ret;
const tokenizer = (source: string) => ret(source);

export const MAX_PATTERN_LENGTH = 256;
export const MAX_AMBIGUITY = 100_000;
const MAX_REPEAT = 1_000;

type Tree = Root | Token;

/** Why a pattern is refused, or null when it compiles and passes the backtracking bound. */
export function regexProblem(source: string): string | null {
  if (source.length === 0) return 'must not be empty';
  if (source.length > MAX_PATTERN_LENGTH) return `must be at most ${MAX_PATTERN_LENGTH} characters`;
  try {
    new RegExp(source, 'g');
  } catch (err) {
    return `is not a valid regular expression (${(err as Error).message.replace(/^Invalid regular expression: /, '')})`;
  }
  let tree: Root;
  try {
    tree = tokenizer(source);
  } catch {
    return 'uses syntax the backtracking check does not support (lookbehind, unicode escapes)';
  }
  try {
    const ways = ambiguity(tree);
    if (ways > MAX_AMBIGUITY) return `may backtrack too much (ambiguity bound ${fmt(ways)} > ${MAX_AMBIGUITY}); narrow the quantifiers or the alternatives`;
  } catch (err) {
    return (err as Error).message;
  }
  // An empty match would make a global scan loop without progress on every position.
  if (new RegExp(source).test('')) return 'must not match the empty string';
  return null;
}

const fmt = (n: number) => (Number.isFinite(n) ? String(Math.round(n)) : 'unbounded');

function seq(stack: Token[]): number {
  let p = 1;
  for (const t of stack) p *= ambiguity(t);
  return p;
}

function alternatives(options: Token[][]): number {
  let s = 0;
  for (const o of options) s += seq(o);
  return s;
}

/** Upper bound of the distinct ways `t` can match from one position; throws on refused syntax. */
function ambiguity(t: Tree): number {
  switch (t.type) {
    case types.ROOT:
    case types.GROUP: {
      if (t.type === types.GROUP && (t.followedBy || t.notFollowedBy || t.lookBehind)) throw new Error('must not use lookaround assertions');
      return t.options ? alternatives(t.options) : seq(t.stack ?? []);
    }
    case types.REPETITION: {
      if (!Number.isFinite(t.max)) throw new Error('must bound every quantifier (use {0,100} rather than * or +)');
      if (t.max > MAX_REPEAT) throw new Error(`must not repeat more than ${MAX_REPEAT} times`);
      const c = ambiguity(t.value);
      if (c <= 1) return t.max - t.min + 1;
      let total = 0;
      for (let k = t.min; k <= t.max && total <= MAX_AMBIGUITY; k++) total += c ** k;
      return total;
    }
    case types.REFERENCE:
      throw new Error('must not use backreferences');
    default:
      return 1;
  }
}

/**
 * The CEL side of custom policies: one environment for every expression, and the text a failed
 * evaluation reports. cel-js error messages quote the values involved (`No such key: <the key>`,
 * `Invalid duration string: <the string>`), and those values come from the request, so an
 * evaluation error is reported by its kind alone, from a fixed list (docs/decisions.md,
 * "Enforcement engine").
 */
import { Environment } from '@marcbachmann/cel-js';

/** One CEL environment: a single dynamic map variable `request`, parse-time limits on the expression. */
export const cel = new Environment({ limits: { maxAstNodes: 2000, maxDepth: 50, maxListElements: 1000, maxMapEntries: 1000, maxCallArguments: 32 } }).registerVariable('request', 'map');

/** The evaluation error codes of cel-js reported by name; any other error is reported without a kind. */
const KINDS: ReadonlySet<string> = new Set([
  'no_such_key',
  'no_such_overload',
  'index_out_of_bounds',
  'index_out_of_range',
  'invalid_index_type',
  'cannot_index_type',
  'unknown_variable',
  'unsupported_type',
  'invalid_comparison_type',
  'numeric_overflow',
  'int_conversion_error',
  'uint_conversion_error',
  'division_by_zero',
  'modulo_by_zero',
  'invalid_duration',
  'invalid_timestamp',
  'invalid_regular_expression',
  'invalid_macro_argument',
  'optional_expected',
  'optional_value_missing',
  'invalid_context',
  'limit_exceeded',
]);

/** The policy_error text of a failed evaluation: `CEL evaluation failed: <kind>`, never the library's message. */
export function celEvaluationError(err: unknown): string {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && KINDS.has(code) ? `CEL evaluation failed: ${code.replace(/_/g, ' ')}` : 'CEL evaluation failed';
}

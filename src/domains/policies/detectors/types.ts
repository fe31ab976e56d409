/**
 * What every detector answers: findings that locate a match (field path, offsets in that field's
 * string, a score) and never carry the matched text (contract.md, "Policies and enforcement").
 */

export interface Finding {
  /** Stable code, e.g. `pii.credit_card`, `injection.instruction_override`, `output.secrets`. */
  code: string;
  /** Dotted path of the field, e.g. `input.customer.card`, `output.items.0.text`; the root is `input` or `output`. */
  path: string;
  /** Offsets in UTF-16 code units in the field's string (as JavaScript's String indexes), end exclusive. */
  start: number;
  end: number;
  /** Confidence 0..1. */
  score: number;
  /** Index of the custom pattern that matched (`pii.custom`). */
  pattern?: number;
  /** The detector behind an output classifier finding (`pii.email`, `profanity`, ...). */
  kind?: string;
}

export interface ScanResult {
  findings: Finding[];
  /** True when the caps (docs/decisions.md, "Policy detectors") stopped the scan before the end of the value. */
  truncated: boolean;
}

/**
 * What a PATCH really changes. A change that changes nothing writes no audit entry, emits no event
 * and leaves updatedAt alone (docs/decisions.md "Strict inputs"): the services compare first.
 */
import { isDeepStrictEqual } from 'node:util';

/**
 * The entries of `patch` that are given (not undefined) and differ from the stored `before`
 * (deep equality: arrays in order, objects in any key order, dates by instant); null when none does.
 */
export function changedFields<B extends object, P extends { [K in keyof P]: K extends keyof B ? unknown : never }>(
  before: B,
  patch: P,
): Partial<P> | null {
  const stored = before as Record<string, unknown>;
  const changed = Object.entries(patch).filter(([k, v]) => v !== undefined && !isDeepStrictEqual(v, stored[k]));
  return changed.length > 0 ? (Object.fromEntries(changed) as Partial<P>) : null;
}

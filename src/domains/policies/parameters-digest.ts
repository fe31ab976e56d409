/** The digest that binds an access grant to an action's exact parameters (contract.md "Policies and enforcement"). */
import { createHash } from 'node:crypto';
import canonicalize from 'canonicalize';

/** Hex SHA-256 of the canonical JSON (RFC 8785) of an action's parameters; absent parameters digest as `{}`. */
export function parametersDigest(parameters: unknown): string {
  return createHash('sha256').update(canonicalize(parameters ?? {}) ?? '{}').digest('hex');
}

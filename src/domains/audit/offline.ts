/**
 * Offline verification for an auditor: the checkpoint listing (GET /audit-logs/checkpoints) and,
 * optionally, a JSON export of the log (GET /audit-logs/export), checked without the server or its
 * database (README "Verifying the audit log offline").
 */
import { canonicalText, chainChecksum, GENESIS, type ChainedFields } from './chain.js';
import { sealProblem } from './checkpoint-seal.js';

export interface ListedCheckpoint {
  seq: number;
  checksum: string;
  signedAt: string;
  message: string;
  signature: string;
  keyId: string;
  publicKey: string;
}

/** An entry as GET /audit-logs/export writes it (JSON). */
export interface ExportedEntry {
  id: string;
  sequence: number;
  checksum: string;
  previousChecksum: string;
  [field: string]: unknown;
}

export interface OfflineReport {
  ok: boolean;
  checkpointsVerified: number;
  entriesChecked: number;
  problems: string[];
}

/** The organization a checkpoint's signed text names, if it is JSON naming one. */
function organizationNamedBy(message: string): string | undefined {
  try {
    const signed = JSON.parse(message) as { organizationId?: unknown } | null;
    return typeof signed?.organizationId === 'string' ? signed.organizationId : undefined;
  } catch {
    return undefined;
  }
}

/** Checks each checkpoint's signature, key id and signed text, then (given the export) the chain and every checkpoint against it. */
export function verifyOffline(input: { checkpoints: ListedCheckpoint[]; entries?: ExportedEntry[]; trustedKeyIds?: string[] }): OfflineReport {
  const problems: string[] = [];
  let organizationId: string | undefined;
  for (const c of input.checkpoints) {
    const at = `checkpoint at seq ${c.seq}`;
    // The listing has no organization column: the signed text names it, and must then equal the text signed for it.
    const signedFor = organizationNamedBy(c.message);
    const problem = sealProblem({ ...c, organizationId: signedFor ?? '' });
    if (problem !== null) problems.push(`${at}: ${problem}`);
    if (input.trustedKeyIds && !input.trustedKeyIds.includes(c.keyId)) problems.push(`${at}: signed by key ${c.keyId}, which you do not trust`);
    if (signedFor === undefined) continue;
    organizationId ??= signedFor;
    if (signedFor !== organizationId) problems.push(`${at}: signed for another organization`);
  }
  const entries = [...(input.entries ?? [])].sort((a, b) => a.sequence - b.sequence);
  const checksumAt = new Map<number, string>();
  let prev = GENESIS;
  for (const [i, e] of entries.entries()) {
    if (!organizationId) {
      problems.push('no checkpoint names the organization: cannot recompute the chain');
      break;
    }
    const problem =
      e.sequence !== i + 1 ? `entry ${i + 1} is missing`
      : e.previousChecksum !== prev ? `entry ${e.sequence} does not link to the previous entry`
      : chainChecksum(prev, canonicalText({ ...(e as unknown as ChainedFields), organizationId, seq: e.sequence })) !== e.checksum ? `entry ${e.sequence} does not match its checksum`
      : null;
    if (problem) {
      problems.push(problem);
      break;
    }
    checksumAt.set(e.sequence, e.checksum);
    prev = e.checksum;
  }
  if (input.entries) {
    for (const c of input.checkpoints) {
      if (c.seq > entries.length) continue; // signed after the export was taken
      if (checksumAt.get(c.seq) !== c.checksum) problems.push(`checkpoint at seq ${c.seq}: the log no longer matches it`);
    }
  }
  return { ok: problems.length === 0, checkpointsVerified: input.checkpoints.length, entriesChecked: checksumAt.size, problems };
}

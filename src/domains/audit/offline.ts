/**
 * Offline verification for an auditor: the checkpoint listing (GET /audit-logs/checkpoints) and,
 * optionally, a JSON export of the log (GET /audit-logs/export), checked without the server or its
 * database (README "Verifying the audit log offline").
 */
import { canonicalText, chainChecksum, GENESIS, type ChainedFields } from './chain.js';
import { keyIdOf, signatureVerifies } from './signer.js';

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

/** Checks each checkpoint's signature, key id and signed text, then (given the export) the chain and every checkpoint against it. */
export function verifyOffline(input: { checkpoints: ListedCheckpoint[]; entries?: ExportedEntry[]; trustedKeyIds?: string[] }): OfflineReport {
  const problems: string[] = [];
  let organizationId: string | undefined;
  for (const c of input.checkpoints) {
    const at = `checkpoint at seq ${c.seq}`;
    if (!signatureVerifies(c.publicKey, c.message, c.signature)) problems.push(`${at}: the signature does not verify with its public key`);
    if (keyIdOf(c.publicKey) !== c.keyId) problems.push(`${at}: keyId is not the fingerprint of its public key`);
    if (input.trustedKeyIds && !input.trustedKeyIds.includes(c.keyId)) problems.push(`${at}: signed by key ${c.keyId}, which you do not trust`);
    const signed = JSON.parse(c.message) as { organizationId: string; seq: number; checksum: string; signedAt: string };
    if (signed.seq !== c.seq || signed.checksum !== c.checksum || signed.signedAt !== c.signedAt) problems.push(`${at}: the signed text differs from its fields`);
    organizationId ??= signed.organizationId;
    if (signed.organizationId !== organizationId) problems.push(`${at}: signed for another organization`);
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

/**
 * A checkpoint checked on its own, without the chain: its signed text and whether its signature,
 * key id and text hold together. Shared by verify (checkpoints.ts) and the offline check
 * (offline.ts), so the server and an auditor judge a checkpoint alike (docs/decisions.md "Audit checkpoints").
 */
import canonicalize from 'canonicalize';
import { keyIdOf, signatureVerifies } from './signer.js';

/** The exact signed text: RFC 8785 JSON of { organizationId, seq, checksum, signedAt (ISO 8601, ms, Z) }. */
export function checkpointMessage(c: { organizationId: string; seq: number; checksum: string; signedAt: Date | string }): string {
  const signedAt = typeof c.signedAt === 'string' ? c.signedAt : c.signedAt.toISOString();
  const text = canonicalize({ organizationId: c.organizationId, seq: c.seq, checksum: c.checksum, signedAt });
  if (text === undefined) throw new Error('checkpoint is not serializable');
  return text;
}

/** A checkpoint as stored, or as listed by GET /audit-logs/checkpoints with the organization its text names. */
export interface SealedCheckpoint {
  organizationId: string;
  seq: number;
  checksum: string;
  signedAt: Date | string;
  message: string;
  signature: string;
  keyId: string;
  publicKey: string;
}

/** What is wrong with a checkpoint on its own (signature, key id, signed text against its columns), or null. */
export function sealProblem(c: SealedCheckpoint): string | null {
  if (!signatureVerifies(c.publicKey, c.message, c.signature) || keyIdOf(c.publicKey) !== c.keyId) {
    return 'has a signature that does not verify with its key';
  }
  if (c.message !== checkpointMessage(c)) return 'has a signed text that differs from its columns';
  return null;
}

/** The audit hash chain: canonical text of an entry and its checksum. */
import { createHash } from 'node:crypto';
import canonicalize from 'canonicalize';

export const GENESIS = '0'.repeat(64);

/** The fields an entry's checksum covers, in their stored form. */
export interface ChainedFields {
  id: string;
  organizationId: string;
  seq: number;
  userId: string;
  userName: string | null;
  userEmail: string | null;
  action: string;
  resourceType: string;
  resourceId: string | null;
  beforeState: unknown;
  afterState: unknown;
  metadata: unknown;
  ipAddress: string | null;
  userAgent: string | null;
  result: string | null;
  errorMessage: string | null;
  timestamp: string;
}

/** RFC 8785 canonical JSON of the covered fields (key order and number form fixed). */
export function canonicalText(f: ChainedFields): string {
  const text = canonicalize({
    id: f.id,
    organizationId: f.organizationId,
    seq: f.seq,
    userId: f.userId,
    userName: f.userName,
    userEmail: f.userEmail,
    action: f.action,
    resourceType: f.resourceType,
    resourceId: f.resourceId,
    beforeState: f.beforeState ?? null,
    afterState: f.afterState ?? null,
    metadata: f.metadata ?? null,
    ipAddress: f.ipAddress,
    userAgent: f.userAgent,
    result: f.result,
    errorMessage: f.errorMessage,
    timestamp: f.timestamp,
  });
  if (text === undefined) throw new Error('audit entry is not serializable');
  return text;
}

/** checksum = SHA-256 hex of the previous checksum followed by the canonical text. */
export const chainChecksum = (prev: string, canonical: string) =>
  createHash('sha256').update(prev).update(canonical).digest('hex');

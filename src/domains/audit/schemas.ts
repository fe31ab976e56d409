import { z } from 'zod';
import { isoDateTimeOut } from '../../http/envelope.js';
import { isoDateTime, pagination, str } from '../../http/validation.js';

export const auditEntrySchema = z
  .object({
    id: z.uuid(),
    sequence: z.number().int(),
    userId: z.string(),
    userName: z.string().nullable(),
    userEmail: z.string().nullable(),
    action: z.string(),
    resourceType: z.string(),
    resourceId: z.string().nullable(),
    beforeState: z.unknown().nullable(),
    afterState: z.unknown().nullable(),
    metadata: z.unknown().nullable(),
    ipAddress: z.string().nullable(),
    userAgent: z.string().nullable(),
    result: z.enum(['success', 'failure']).nullable(),
    errorMessage: z.string().nullable(),
    checksum: z.string(),
    previousChecksum: z.string(),
    timestamp: isoDateTimeOut(),
    createdAt: isoDateTimeOut(),
  })
  .meta({ id: 'AuditLogEntry' });

const ts = isoDateTime();

export const auditFilters = {
  action: str(1, 200).optional(),
  resourceType: str(1, 100).optional(),
  resourceId: str(1, 255).optional(),
  userId: str(1, 255).optional(),
  from: ts.optional(),
  to: ts.optional(),
};

export const listAuditQuery = z.object({ ...pagination, ...auditFilters });
export const exportAuditQuery = z.object({ format: z.enum(['json', 'csv']).default('json'), ...auditFilters });

const checkpointRef = z.object({ seq: z.number().int(), signedAt: isoDateTimeOut(), keyId: z.string() });

export const verifySchema = z
  .object({
    valid: z.boolean(),
    entriesChecked: z.number().int(),
    headSeq: z.number().int(),
    firstInvalid: z.object({ id: z.uuid().nullable(), seq: z.number().int(), reason: z.string() }).nullable(),
    // Extension (docs/decisions.md "Audit checkpoints"): the latest signed checkpoints, newest first.
    checkpoints: z.object({
      checked: z.number().int(),
      lastGood: checkpointRef.nullable(),
      bad: z.array(checkpointRef.extend({ reason: z.string() })),
      otherKeys: z.number().int(),
      entriesAfterLastGood: z.number().int(),
    }),
  })
  .meta({ id: 'AuditVerifyResult' });

export const auditCheckpointSchema = z
  .object({
    id: z.uuid(),
    seq: z.number().int(),
    checksum: z.string(),
    signedAt: isoDateTimeOut(),
    message: z.string().describe('The exact signed text (UTF-8)'),
    signature: z.string().describe('Ed25519 signature of message, base64'),
    keyId: z.string().describe('Hex SHA-256 of the public key in DER (SPKI)'),
    publicKey: z.string().describe('The Ed25519 public key, SPKI PEM'),
  })
  .meta({ id: 'AuditCheckpoint' });

export const listCheckpointsQuery = z.object({ ...pagination });

export type AuditFilters = Partial<Record<keyof typeof auditFilters, string>>;

import { z } from 'zod';
import { isoDateTimeOut } from '../../http/envelope.js';
import { isoDateTime, pagination, str } from '../../http/validation.js';
import { globInput } from '../policies/index.js';

export const GRANT_STATUSES = ['pending', 'approved', 'denied', 'revoked', 'expired'] as const;
export const grantStatusEnum = z.enum(GRANT_STATUSES);
export type GrantStatus = z.infer<typeof grantStatusEnum>;

/** Bounds of a grant's lifetime (docs/decisions.md, "Access grants"). */
export const MIN_TTL_SECONDS = 60;
export const MAX_TTL_SECONDS = 365 * 24 * 3600;

export const accessGrantSchema = z
  .object({
    id: z.uuid(),
    organizationId: z.uuid(),
    agentId: z.uuid(),
    action: z.string().describe('Glob over action names (`*`, `**`, `?`, `\\` escapes)'),
    resource: z.string().nullable().describe('Glob over resources; null: any resource'),
    parametersDigest: z.string().nullable().describe('Hex SHA-256 of the canonical JSON of the only parameters allowed; null: any parameters'),
    policyId: z.uuid().nullable().describe('The action_approval policy that required the grant'),
    policyVersion: isoDateTimeOut().nullable().describe("That policy's updatedAt when the grant was requested"),
    status: grantStatusEnum.describe('A pending or approved grant past expiresAt reads as expired'),
    reason: z.string().nullable(),
    requestedBy: z.string(),
    requestedAt: isoDateTimeOut(),
    decidedBy: z.string().nullable(),
    decidedAt: isoDateTimeOut().nullable(),
    expiresAt: isoDateTimeOut(),
    revokedAt: isoDateTimeOut().nullable(),
    createdAt: isoDateTimeOut(),
    updatedAt: isoDateTimeOut(),
  })
  .meta({ id: 'AccessGrant' });
export type AccessGrant = z.infer<typeof accessGrantSchema>;

export const createAccessGrantInput = z
  .object({
    agentId: z.uuid(),
    // Globs of src/domains/policies/glob.ts, refused at input when they cannot compile or be stored.
    action: globInput(),
    resource: globInput().optional(),
    expiresAt: isoDateTime().optional().describe('When the grant ends; give this or ttlSeconds'),
    ttlSeconds: z.number().int().min(MIN_TTL_SECONDS).max(MAX_TTL_SECONDS).optional().describe('Lifetime from now; give this or expiresAt'),
    reason: str(1, 1000),
  })
  .superRefine((v, ctx) => {
    if ((v.expiresAt === undefined) === (v.ttlSeconds === undefined)) {
      ctx.addIssue({ code: 'custom', path: ['expiresAt'], message: 'give exactly one of expiresAt and ttlSeconds' });
    }
  })
  .meta({ id: 'CreateAccessGrantInput' });
export type CreateAccessGrantInput = z.infer<typeof createAccessGrantInput>;

export const listAccessGrantsQuery = z.object({
  ...pagination,
  agentId: z.uuid().optional(),
  status: grantStatusEnum.optional(),
});
export type ListAccessGrantsQuery = z.infer<typeof listAccessGrantsQuery>;

import { z } from 'zod';
import { isoDateTimeOut } from '../../http/envelope.js';
import { ALL_SCOPES } from '../../http/principal.js';
import { booleanQuery, environmentEnum, ipv4OrCidr, isoDateTime, pagination, str } from '../../http/validation.js';

export const scopeEnum = z.enum(ALL_SCOPES);
const timestamp = isoDateTime();
const future = timestamp.refine((s) => Date.parse(s) > Date.now(), 'must be in the future');

export const apiKeySchema = z
  .object({
    id: z.uuid(),
    name: z.string(),
    description: z.string().nullable(),
    keyPrefix: z.string(),
    environment: environmentEnum,
    scopes: z.array(scopeEnum),
    agentId: z.uuid().nullable(),
    expiresAt: isoDateTimeOut().nullable(),
    lastUsedAt: isoDateTimeOut().nullable(),
    usageCount: z.number().int(),
    isActive: z.boolean(),
    ipAllowlist: z.array(z.string()).nullable(),
    createdAt: isoDateTimeOut(),
    updatedAt: isoDateTimeOut(),
    createdBy: z.string(),
  })
  .meta({ id: 'ApiKey' });

export const apiKeyWithSecretSchema = apiKeySchema.extend({ key: z.string() }).meta({ id: 'ApiKeyWithSecret' });

export const createApiKeyInput = z
  .object({
    name: str(1, 100),
    environment: environmentEnum,
    description: str(0, 500).nullable().optional(),
    scopes: z.array(scopeEnum).min(1).max(ALL_SCOPES.length).optional(),
    expiresAt: future.nullable().optional(),
    ipAllowlist: z.array(ipv4OrCidr()).max(100).nullable().optional(),
  })
  .meta({ id: 'CreateApiKeyInput' });

export const updateApiKeyInput = z
  .object({
    name: str(1, 100).optional(),
    description: str(0, 500).nullable().optional(),
    scopes: z.array(scopeEnum).min(1).max(ALL_SCOPES.length).optional(),
    isActive: z.boolean().optional(),
    expiresAt: future.nullable().optional(),
    ipAllowlist: z.array(ipv4OrCidr()).max(100).nullable().optional(),
  })
  .meta({ id: 'UpdateApiKeyInput' });

export const listApiKeysQuery = z.object({
  ...pagination,
  environment: environmentEnum.optional(),
  isActive: booleanQuery.optional(),
});

export type CreateApiKeyInput = z.infer<typeof createApiKeyInput>;
export type UpdateApiKeyInput = z.infer<typeof updateApiKeyInput>;

/** API keys of an organization: create (shown once), list, update, rotate, delete. */
import { and, count, desc, eq, isNull, type SQL } from 'drizzle-orm';
import type { Db, Executor } from '../../db/client.js';
import { apiKeys } from '../../db/schema/index.js';
import { forbidden, notFound } from '../../core/errors.js';
import { changedFields } from '../../core/changes.js';
import type { Scope } from '../../http/principal.js';
import type { Environment } from '../../http/validation.js';
import { writeAudit, type AuditContext } from '../audit/service.js';
import { defaultKeyExpiryDays } from '../settings/index.js';
import { generateKey, hashKey, prefixOf } from './key-material.js';
import { addKeyHash, removeKeyHash } from './hashes.js';
import type { CreateApiKeyInput, UpdateApiKeyInput } from './schemas.js';

type Row = typeof apiKeys.$inferSelect;

export const DEFAULT_SCOPES: Scope[] = ['agent:read', 'agent:write', 'trace:read', 'trace:write'];

/** The public view of a key: never the hash. */
export const apiKeyView = (r: Row) => ({
  id: r.id,
  name: r.name,
  description: r.description,
  keyPrefix: r.keyPrefix,
  environment: r.environment as Environment,
  scopes: r.scopes as Scope[],
  agentId: r.agentId,
  expiresAt: r.expiresAt?.toISOString() ?? null,
  lastUsedAt: r.lastUsedAt?.toISOString() ?? null,
  usageCount: Number(r.usageCount),
  isActive: r.isActive,
  ipAllowlist: r.ipAllowlist,
  createdAt: r.createdAt.toISOString(),
  updatedAt: r.updatedAt.toISOString(),
  createdBy: r.createdBy,
});

/** Inserts a key row and its api_key_hashes row for a given key string (generated, or supplied by headless init). */
export async function insertKey(
  tx: Executor,
  v: {
    organizationId: string;
    key: string;
    name: string;
    environment: Environment;
    scopes: Scope[];
    createdBy: string;
    description?: string | null;
    expiresAt?: Date | null;
    ipAllowlist?: string[] | null;
    agentId?: string | null;
  },
) {
  const [row] = await tx
    .insert(apiKeys)
    .values({
      organizationId: v.organizationId,
      agentId: v.agentId ?? null,
      name: v.name,
      description: v.description ?? null,
      keyPrefix: prefixOf(v.key),
      keyHash: hashKey(v.key),
      environment: v.environment,
      scopes: v.scopes,
      expiresAt: v.expiresAt ?? null,
      ipAllowlist: v.ipAllowlist ?? null,
      createdBy: v.createdBy,
    })
    .returning();
  await addKeyHash(tx, { keyHash: row.keyHash, organizationId: row.organizationId, apiKeyId: row.id });
  return row;
}

/** Expiry of a new key: absent means the organization's defaultKeyExpiryDays from `now`; null means never. */
export async function resolveExpiry(tx: Executor, orgId: string, expiresAt: string | null | undefined, now: Date): Promise<Date | null> {
  if (expiresAt === null) return null;
  if (expiresAt !== undefined) return new Date(expiresAt);
  const days = await defaultKeyExpiryDays(tx, orgId);
  return new Date(now.getTime() + (days ?? 30) * 86_400_000);
}

/** Creates an organization key. Absent expiresAt means the organization's defaultKeyExpiryDays; null means never. */
export async function createApiKey(db: Db, ctx: AuditContext, canGrantAdmin: boolean, input: CreateApiKeyInput) {
  const orgId = ctx.principal.organizationId;
  const scopes = input.scopes ?? DEFAULT_SCOPES;
  if (scopes.includes('admin') && !canGrantAdmin) throw forbidden('Only an admin may grant scope admin');
  return db.transaction(async (tx) => {
    const expiresAt = await resolveExpiry(tx, orgId, input.expiresAt, ctx.clock.now());
    const key = generateKey(input.environment);
    const row = await insertKey(tx, {
      organizationId: orgId,
      key,
      name: input.name,
      environment: input.environment,
      scopes: [...new Set(scopes)],
      createdBy: ctx.principal.userId,
      description: input.description ?? null,
      expiresAt,
      ipAllowlist: input.ipAllowlist ?? null,
    });
    const view = apiKeyView(row);
    await writeAudit(tx, ctx, { action: 'api_key.create', resourceType: 'api_key', resourceId: row.id, after: view });
    return { ...view, key };
  });
}

// Agent-scoped keys are managed under /agents/{id}/keys, not here.
const orgKey = (orgId: string, id: string) => and(eq(apiKeys.organizationId, orgId), eq(apiKeys.id, id), isNull(apiKeys.agentId));

/** One page of the organization's keys, newest first. */
export async function listApiKeys(db: Db, orgId: string, q: { limit: number; offset: number; environment?: string; isActive?: boolean }) {
  const conds: SQL[] = [eq(apiKeys.organizationId, orgId), isNull(apiKeys.agentId)];
  if (q.environment) conds.push(eq(apiKeys.environment, q.environment));
  if (q.isActive !== undefined) conds.push(eq(apiKeys.isActive, q.isActive));
  const where = and(...conds);
  const [rows, [{ total }]] = await Promise.all([
    db.select().from(apiKeys).where(where).orderBy(desc(apiKeys.createdAt), desc(apiKeys.id)).limit(q.limit).offset(q.offset),
    db.select({ total: count() }).from(apiKeys).where(where),
  ]);
  return { rows: rows.map(apiKeyView), total };
}

/** One key, or 404. */
export async function getApiKey(db: Executor, orgId: string, id: string) {
  const [row] = await db.select().from(apiKeys).where(orgKey(orgId, id)).limit(1);
  if (!row) throw notFound('API key');
  return row;
}

/** Changes the given fields; the key string itself never changes here (see rotate). */
export async function updateApiKey(db: Db, ctx: AuditContext, canGrantAdmin: boolean, id: string, input: UpdateApiKeyInput, onChanged: (hash: string) => Promise<void>) {
  if (input.scopes?.includes('admin') && !canGrantAdmin) throw forbidden('Only an admin may grant scope admin');
  const orgId = ctx.principal.organizationId;
  const { row: out, changed } = await db.transaction(async (tx) => {
    const before = await getApiKey(tx, orgId, id);
    const set = changedFields(before, {
      name: input.name,
      description: input.description,
      scopes: input.scopes && [...new Set(input.scopes)],
      isActive: input.isActive,
      expiresAt: input.expiresAt === undefined ? undefined : input.expiresAt === null ? null : new Date(input.expiresAt),
      ipAllowlist: input.ipAllowlist,
    });
    if (!set) return { row: before, changed: false };
    const [row] = await tx
      .update(apiKeys)
      .set({ ...set, updatedAt: new Date() })
      .where(orgKey(orgId, id))
      .returning();
    await writeAudit(tx, ctx, { action: 'api_key.update', resourceType: 'api_key', resourceId: id, before: apiKeyView(before), after: apiKeyView(row) });
    return { row, changed: true };
  });
  if (changed) await onChanged(out.keyHash);
  return apiKeyView(out);
}

/** Replaces the key string (same id and settings); the old string stops working at once. */
export async function rotateApiKey(db: Db, ctx: AuditContext, id: string, onChanged: (hash: string) => Promise<void>) {
  const orgId = ctx.principal.organizationId;
  const { row, key, oldHash } = await db.transaction(async (tx) => {
    const before = await getApiKey(tx, orgId, id);
    const key = generateKey(before.environment as Environment);
    const [row] = await tx
      .update(apiKeys)
      .set({ keyHash: hashKey(key), keyPrefix: prefixOf(key), updatedAt: new Date() })
      .where(orgKey(orgId, id))
      .returning();
    await removeKeyHash(tx, before.keyHash);
    await addKeyHash(tx, { keyHash: row.keyHash, organizationId: orgId, apiKeyId: id });
    await writeAudit(tx, ctx, { action: 'api_key.rotate', resourceType: 'api_key', resourceId: id, before: apiKeyView(before), after: apiKeyView(row) });
    return { row, key, oldHash: before.keyHash };
  });
  await onChanged(oldHash);
  return { ...apiKeyView(row), key };
}

/** Deletes a key permanently; its audit history stays. */
export async function deleteApiKey(db: Db, ctx: AuditContext, id: string, onChanged: (hash: string) => Promise<void>) {
  const orgId = ctx.principal.organizationId;
  const hash = await db.transaction(async (tx) => {
    const before = await getApiKey(tx, orgId, id);
    await tx.delete(apiKeys).where(orgKey(orgId, id));
    await removeKeyHash(tx, before.keyHash);
    await writeAudit(tx, ctx, { action: 'api_key.delete', resourceType: 'api_key', resourceId: id, before: apiKeyView(before) });
    return before.keyHash;
  });
  await onChanged(hash);
}

/** The keys of one agent, newest first (agent keys are managed under /agents/{id}/keys). */
export async function listKeysOfAgent(db: Executor, orgId: string, agentId: string) {
  return db
    .select()
    .from(apiKeys)
    .where(and(eq(apiKeys.organizationId, orgId), eq(apiKeys.agentId, agentId)))
    .orderBy(desc(apiKeys.createdAt));
}

/** Deletes one key of an agent inside the caller's transaction; answers the deleted row, or undefined. */
export async function deleteKeyOfAgent(tx: Executor, orgId: string, agentId: string, keyId: string) {
  const where = and(eq(apiKeys.organizationId, orgId), eq(apiKeys.agentId, agentId), eq(apiKeys.id, keyId));
  const [row] = await tx.select().from(apiKeys).where(where);
  if (row) {
    await tx.delete(apiKeys).where(where);
    await removeKeyHash(tx, row.keyHash);
  }
  return row;
}

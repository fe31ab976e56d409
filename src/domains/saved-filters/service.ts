/** Saved list filters, each owned by one principal of an organization; at most one default per resource type. */
import { and, count, desc, eq, ne, sql, type SQL } from 'drizzle-orm';
import type { Db, Executor, Tx } from '../../db/client.js';
import { savedFilters } from '../../db/schema/index.js';
import { notFound } from '../../core/errors.js';
import { changedFields } from '../../core/changes.js';
import { writeAudit, type AuditContext } from '../audit/service.js';
import type { CreateSavedFilterInput, ResourceType, UpdateSavedFilterInput } from './schemas.js';

type Row = typeof savedFilters.$inferSelect;

/** Whose filters: the organization and the principal's id (a user's id, or an API key's id). */
export interface Owner {
  organizationId: string;
  userId: string;
}

/** The public view of a filter (camelCase, ISO timestamps). */
export const savedFilterView = (r: Row) => ({
  id: r.id,
  organizationId: r.organizationId,
  userId: r.userId,
  name: r.name,
  resourceType: r.resourceType as ResourceType,
  filterConfig: r.filterConfig,
  isDefault: r.isDefault,
  createdAt: r.createdAt.toISOString(),
  updatedAt: r.updatedAt.toISOString(),
});

const owned = (o: Owner, id: string) => and(eq(savedFilters.organizationId, o.organizationId), eq(savedFilters.userId, o.userId), eq(savedFilters.id, id));

/**
 * Makes room for a new default: unsets the owner's current default for the resource type (other
 * than `exceptId`). A transaction-scoped advisory lock per (org, user, type) serializes concurrent
 * switches, so two requests racing to set a default both succeed and the later one wins, instead
 * of one failing on saved_filters_default_uq.
 */
async function clearDefault(tx: Tx, o: Owner, resourceType: string, exceptId?: string) {
  const lockKey = `saved_filter_default:${o.organizationId}:${o.userId}:${resourceType}`;
  await tx.execute(sql`select pg_advisory_xact_lock(hashtextextended(${lockKey}, 0))`);
  const conds: SQL[] = [eq(savedFilters.organizationId, o.organizationId), eq(savedFilters.userId, o.userId), eq(savedFilters.resourceType, resourceType), eq(savedFilters.isDefault, true)];
  if (exceptId) conds.push(ne(savedFilters.id, exceptId));
  await tx.update(savedFilters).set({ isDefault: false, updatedAt: new Date() }).where(and(...conds));
}

/** One page of the owner's filters, newest first, optionally of one resource type. */
export async function listSavedFilters(db: Db, o: Owner, q: { limit: number; offset: number; resource_type?: ResourceType }) {
  const conds: SQL[] = [eq(savedFilters.organizationId, o.organizationId), eq(savedFilters.userId, o.userId)];
  if (q.resource_type) conds.push(eq(savedFilters.resourceType, q.resource_type));
  const where = and(...conds);
  const [rows, [{ total }]] = await Promise.all([
    db.select().from(savedFilters).where(where).orderBy(desc(savedFilters.createdAt), desc(savedFilters.id)).limit(q.limit).offset(q.offset),
    db.select({ total: count() }).from(savedFilters).where(where),
  ]);
  return { rows: rows.map(savedFilterView), total };
}

/** One of the owner's filters, or 404 (also for another user's filter). */
export async function getSavedFilter(db: Executor, o: Owner, id: string) {
  const [row] = await db.select().from(savedFilters).where(owned(o, id)).limit(1);
  if (!row) throw notFound('Saved filter');
  return row;
}

/** Creates a filter; when it is the default, the previous default of that resource type is unset first. */
export async function createSavedFilter(db: Db, ctx: AuditContext, input: CreateSavedFilterInput) {
  const o: Owner = { organizationId: ctx.principal.organizationId, userId: ctx.principal.userId };
  return db.transaction(async (tx) => {
    if (input.is_default) await clearDefault(tx, o, input.resource_type);
    const [row] = await tx
      .insert(savedFilters)
      .values({
        organizationId: o.organizationId,
        userId: o.userId,
        name: input.name,
        resourceType: input.resource_type,
        filterConfig: input.filter_config,
        isDefault: input.is_default,
      })
      .returning();
    const view = savedFilterView(row);
    await writeAudit(tx, ctx, { action: 'saved_filter.create', resourceType: 'saved_filter', resourceId: row.id, after: view });
    return view;
  });
}

/** Changes the given fields; becoming the default unsets the previous default of the same resource type. */
export async function updateSavedFilter(db: Db, ctx: AuditContext, id: string, input: UpdateSavedFilterInput) {
  const o: Owner = { organizationId: ctx.principal.organizationId, userId: ctx.principal.userId };
  return db.transaction(async (tx) => {
    const before = await getSavedFilter(tx, o, id);
    const set = changedFields(before, { name: input.name, filterConfig: input.filter_config, isDefault: input.is_default });
    if (!set) return savedFilterView(before);
    if (set.isDefault) await clearDefault(tx, o, before.resourceType, id);
    const [row] = await tx
      .update(savedFilters)
      .set({ ...set, updatedAt: new Date() })
      .where(owned(o, id))
      .returning();
    // A concurrent delete between the read and the update leaves nothing to update.
    if (!row) throw notFound('Saved filter');
    const after = savedFilterView(row);
    await writeAudit(tx, ctx, { action: 'saved_filter.update', resourceType: 'saved_filter', resourceId: id, before: savedFilterView(before), after });
    return after;
  });
}

/** Deletes a filter permanently; 404 when the owner has no such filter. */
export async function deleteSavedFilter(db: Db, ctx: AuditContext, id: string) {
  const o: Owner = { organizationId: ctx.principal.organizationId, userId: ctx.principal.userId };
  await db.transaction(async (tx) => {
    const [row] = await tx.delete(savedFilters).where(owned(o, id)).returning();
    if (!row) throw notFound('Saved filter');
    await writeAudit(tx, ctx, { action: 'saved_filter.delete', resourceType: 'saved_filter', resourceId: id, before: savedFilterView(row) });
  });
}

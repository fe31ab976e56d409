/** Reading the audit log: filtered pages, single entries and keyset batches for export. */
import { and, count, desc, eq, gte, lt, lte, type SQL } from 'drizzle-orm';
import type { Db } from '../../db/client.js';
import { auditLogs } from '../../db/schema/index.js';
import { notFound } from '../../core/errors.js';
import type { AuditFilters } from './schemas.js';

type Row = typeof auditLogs.$inferSelect;

export const auditView = (r: Row) => ({
  id: r.id,
  sequence: r.seq,
  userId: r.userId,
  userName: r.userName,
  userEmail: r.userEmail,
  action: r.action,
  resourceType: r.resourceType,
  resourceId: r.resourceId,
  beforeState: r.beforeState ?? null,
  afterState: r.afterState ?? null,
  metadata: r.metadata ?? null,
  ipAddress: r.ipAddress,
  userAgent: r.userAgent,
  result: r.result as 'success' | 'failure' | null,
  errorMessage: r.errorMessage,
  checksum: r.checksum,
  previousChecksum: r.prevChecksum,
  timestamp: r.timestamp.toISOString(),
  createdAt: r.createdAt.toISOString(),
});

export const AUDIT_COLUMNS = Object.keys(auditView({ timestamp: new Date(), createdAt: new Date() } as Row));

function where(orgId: string, f: AuditFilters): SQL[] {
  const c: SQL[] = [eq(auditLogs.organizationId, orgId)];
  if (f.action) c.push(eq(auditLogs.action, f.action));
  if (f.resourceType) c.push(eq(auditLogs.resourceType, f.resourceType));
  if (f.resourceId) c.push(eq(auditLogs.resourceId, f.resourceId));
  if (f.userId) c.push(eq(auditLogs.userId, f.userId));
  if (f.from) c.push(gte(auditLogs.timestamp, new Date(f.from)));
  if (f.to) c.push(lte(auditLogs.timestamp, new Date(f.to)));
  return c;
}

/** A page of entries, newest first. */
export async function listAudit(db: Db, orgId: string, q: AuditFilters & { limit: number; offset: number }) {
  const w = and(...where(orgId, q));
  const [rows, [{ total }]] = await Promise.all([
    db.select().from(auditLogs).where(w).orderBy(desc(auditLogs.seq)).limit(q.limit).offset(q.offset),
    db.select({ total: count() }).from(auditLogs).where(w),
  ]);
  return { rows: rows.map(auditView), total };
}

/** One entry of the organization, or 404. */
export async function getAudit(db: Db, orgId: string, id: string) {
  const [row] = await db.select().from(auditLogs).where(and(eq(auditLogs.organizationId, orgId), eq(auditLogs.id, id)));
  if (!row) throw notFound('Audit log entry');
  return auditView(row);
}

/** All matching entries, newest first, in batches read by seq (keyset): flat memory for any size. */
export async function* auditBatches(db: Db, orgId: string, f: AuditFilters, batchSize = 500) {
  let before = Number.MAX_SAFE_INTEGER;
  for (;;) {
    const rows = await db
      .select()
      .from(auditLogs)
      .where(and(...where(orgId, f), lt(auditLogs.seq, before)))
      .orderBy(desc(auditLogs.seq))
      .limit(batchSize);
    if (rows.length === 0) return;
    yield rows.map(auditView);
    if (rows.length < batchSize) return;
    before = rows[rows.length - 1].seq;
  }
}

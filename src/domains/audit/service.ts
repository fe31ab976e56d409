/** Writing audit entries into the per-organization hash chain, and verifying the chain. */
import { randomUUID } from 'node:crypto';
import { and, asc, eq, gt, sql } from 'drizzle-orm';
import type { Executor, Tx } from '../../db/client.js';
import { auditChainHeads, auditLogs } from '../../db/schema/index.js';
import type { Actor } from '../../core/actor.js';
import type { Clock } from '../../core/clock.js';
import { canonicalText, chainChecksum, GENESIS, type ChainedFields } from './chain.js';

/** Who did it and from where: taken from the request. */
export interface AuditContext {
  principal: Pick<Actor, 'organizationId' | 'userId' | 'userName' | 'userEmail'>;
  ip: string | null;
  userAgent: string | null;
  /** The clock the change's rules read (expiry, budget month): the container's, a test's. */
  clock: Clock;
}

export interface AuditInput {
  action: string;
  resourceType: string;
  resourceId?: string | null;
  before?: unknown;
  after?: unknown;
  metadata?: Record<string, unknown> | null;
  result?: 'success' | 'failure';
  errorMessage?: string | null;
}

// jsonb keeps no undefined and no Date: store exactly what will be hashed.
const plain = (v: unknown) => (v === undefined || v === null ? null : JSON.parse(JSON.stringify(v)));

/** Creates the chain head of a new organization (inside its creating transaction). */
export async function initChain(tx: Executor, organizationId: string) {
  await tx.insert(auditChainHeads).values({ organizationId, seq: 0, checksum: GENESIS }).onConflictDoNothing();
}

/**
 * Appends an entry to the organization's chain inside the caller's transaction.
 * The UPDATE on the chain-head row takes a row lock held until commit: appends of one
 * organization are serialized (no fork), other organizations are not blocked.
 */
export async function writeAudit(tx: Tx, ctx: AuditContext, input: AuditInput) {
  const orgId = ctx.principal.organizationId;
  const [head] = await tx
    .update(auditChainHeads)
    .set({ seq: sql`${auditChainHeads.seq} + 1` })
    .where(eq(auditChainHeads.organizationId, orgId))
    .returning({ seq: auditChainHeads.seq, prev: auditChainHeads.checksum });
  if (!head) throw new Error(`no audit chain head for organization ${orgId}`);
  const fields: ChainedFields = {
    id: randomUUID(),
    organizationId: orgId,
    seq: head.seq,
    userId: ctx.principal.userId,
    userName: ctx.principal.userName,
    userEmail: ctx.principal.userEmail,
    action: input.action,
    resourceType: input.resourceType,
    resourceId: input.resourceId ?? null,
    beforeState: plain(input.before),
    afterState: plain(input.after),
    metadata: plain(input.metadata),
    ipAddress: ctx.ip,
    userAgent: ctx.userAgent ? ctx.userAgent.slice(0, 512) : null,
    result: input.result ?? 'success',
    errorMessage: input.errorMessage ?? null,
    timestamp: new Date().toISOString(),
  };
  const canonical = canonicalText(fields);
  const checksum = chainChecksum(head.prev, canonical);
  await tx.insert(auditLogs).values({
    ...fields,
    timestamp: new Date(fields.timestamp),
    prevChecksum: head.prev,
    checksum,
    canonical,
  });
  await tx.update(auditChainHeads).set({ checksum }).where(eq(auditChainHeads.organizationId, orgId));
  return fields.id;
}

type AuditRow = typeof auditLogs.$inferSelect;

/** The covered fields as read back from the row (jsonb and timestamptz in their stored form). */
const fieldsOfRow = (r: AuditRow): ChainedFields => ({
  id: r.id,
  organizationId: r.organizationId,
  seq: r.seq,
  userId: r.userId,
  userName: r.userName,
  userEmail: r.userEmail,
  action: r.action,
  resourceType: r.resourceType,
  resourceId: r.resourceId,
  beforeState: r.beforeState,
  afterState: r.afterState,
  metadata: r.metadata,
  ipAddress: r.ipAddress,
  userAgent: r.userAgent,
  result: r.result,
  errorMessage: r.errorMessage,
  timestamp: r.timestamp.toISOString(),
});

export interface VerifyResult {
  valid: boolean;
  entriesChecked: number;
  headSeq: number;
  firstInvalid: null | { id: string | null; seq: number; reason: string };
}

const VERIFY_BATCH = 1000;

/**
 * Walks the chain in seq order, in batches, and names the first entry that was edited,
 * removed (a gap or a broken link) or reordered.
 */
export async function verifyChain(db: Executor, organizationId: string): Promise<VerifyResult> {
  const [head] = await db.select().from(auditChainHeads).where(eq(auditChainHeads.organizationId, organizationId));
  const headSeq = head?.seq ?? 0;
  let prev = GENESIS;
  let expectedSeq = 1;
  let checked = 0;
  const fail = (id: string | null, seq: number, reason: string): VerifyResult => ({
    valid: false,
    entriesChecked: checked,
    headSeq,
    firstInvalid: { id, seq, reason },
  });
  for (;;) {
    const rows = await db
      .select()
      .from(auditLogs)
      .where(and(eq(auditLogs.organizationId, organizationId), gt(auditLogs.seq, expectedSeq - 1)))
      .orderBy(asc(auditLogs.seq))
      .limit(VERIFY_BATCH);
    for (const r of rows) {
      if (r.seq !== expectedSeq) return fail(r.id, r.seq, `entry ${expectedSeq} is missing before this one`);
      if (r.prevChecksum !== prev) return fail(r.id, r.seq, 'does not link to the previous entry (removed or reordered)');
      if (chainChecksum(prev, r.canonical) !== r.checksum) return fail(r.id, r.seq, 'checksum does not match its hashed record');
      if (canonicalText(fieldsOfRow(r)) !== r.canonical) return fail(r.id, r.seq, 'stored fields differ from the hashed record (edited)');
      prev = r.checksum;
      expectedSeq += 1;
      checked += 1;
    }
    if (rows.length < VERIFY_BATCH) break;
  }
  if (checked !== headSeq) return fail(null, expectedSeq, `the chain head names ${headSeq} entries but ${checked} were found (entries removed at the end)`);
  if (head && head.checksum !== prev) return fail(null, headSeq, 'the last entry does not match the chain head (edited or removed)');
  return { valid: true, entriesChecked: checked, headSeq, firstInvalid: null };
}

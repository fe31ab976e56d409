/** Writing audit entries into the per-organization hash chain, and verifying the chain. */
import { and, asc, eq, gt, lte, sql } from 'drizzle-orm';
import type { Executor, Tx } from '../../db/client.js';
import { auditChainHeads, auditLogs } from '../../db/schema/index.js';
import { newId } from '../../db/schema/columns.js';
import type { Actor } from '../../core/actor.js';
import type { Clock } from '../../core/clock.js';
import { canonicalText, chainChecksum, GENESIS, type ChainedFields } from './chain.js';
import { examineCheckpoints, type CheckpointReport } from './checkpoints.js';
import type { AuditSigner } from './signer.js';

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
    id: newId(),
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

/** Where a walk starts: after entry `seq` whose checksum is `checksum` (0 and GENESIS: the whole chain). */
export interface ChainPoint {
  seq: number;
  checksum: string;
}

export type WalkResult =
  | { ok: true; checked: number; last: ChainPoint }
  | { ok: false; checked: number; id: string; seq: number; reason: string };

/** Default batch of a chain walk; injectable (tests use a small one to cross pages). */
export const VERIFY_PAGE_SIZE = 1000;

/**
 * Walks the entries after `from` in seq order (up to `toSeq` when given), in batches of `pageSize`
 * read by seq (keyset: flat memory for any length), and stops at the first entry that is missing,
 * does not link, or does not match its hashed record.
 */
export async function walkChain(
  db: Executor,
  organizationId: string,
  from: ChainPoint,
  opts: { pageSize: number; toSeq?: number },
): Promise<WalkResult> {
  let prev = from.checksum;
  let expectedSeq = from.seq + 1;
  let checked = 0;
  const fail = (id: string, seq: number, reason: string): WalkResult => ({ ok: false, checked, id, seq, reason });
  for (;;) {
    const bounds = [eq(auditLogs.organizationId, organizationId), gt(auditLogs.seq, expectedSeq - 1)];
    if (opts.toSeq !== undefined) bounds.push(lte(auditLogs.seq, opts.toSeq));
    const rows = await db
      .select()
      .from(auditLogs)
      .where(and(...bounds))
      .orderBy(asc(auditLogs.seq))
      .limit(opts.pageSize);
    for (const r of rows) {
      if (r.seq !== expectedSeq) return fail(r.id, r.seq, `entry ${expectedSeq} is missing before this one`);
      if (r.prevChecksum !== prev) return fail(r.id, r.seq, 'does not link to the previous entry (removed or reordered)');
      if (chainChecksum(prev, r.canonical) !== r.checksum) return fail(r.id, r.seq, 'checksum does not match its hashed record');
      if (canonicalText(fieldsOfRow(r)) !== r.canonical) return fail(r.id, r.seq, 'stored fields differ from the hashed record (edited)');
      prev = r.checksum;
      expectedSeq += 1;
      checked += 1;
    }
    if (rows.length < opts.pageSize) break;
  }
  return { ok: true, checked, last: { seq: expectedSeq - 1, checksum: prev } };
}

export interface VerifyResult {
  valid: boolean;
  entriesChecked: number;
  headSeq: number;
  firstInvalid: null | { id: string | null; seq: number; reason: string };
  checkpoints: CheckpointReport;
}

/**
 * Walks the chain in seq order, in batches, and names the first entry that was edited,
 * removed (a gap or a broken link) or reordered; then checks the latest signed checkpoints
 * (newest first, until a good one): when one is bad, the chain was rewritten or a checkpoint
 * forged, and the first entry after the last good checkpoint is named.
 */
export async function verifyChain(
  db: Executor,
  organizationId: string,
  opts: { signer: AuditSigner; pageSize?: number },
): Promise<VerifyResult> {
  const pageSize = opts.pageSize ?? VERIFY_PAGE_SIZE;
  const [head] = await db.select().from(auditChainHeads).where(eq(auditChainHeads.organizationId, organizationId));
  const headSeq = head?.seq ?? 0;
  const walk = await walkChain(db, organizationId, { seq: 0, checksum: GENESIS }, { pageSize });
  const checkpoints = await examineCheckpoints(db, organizationId, { signer: opts.signer, pageSize, headSeq });
  const result = (firstInvalid: VerifyResult['firstInvalid']): VerifyResult => ({
    valid: firstInvalid === null,
    entriesChecked: walk.checked,
    headSeq,
    firstInvalid,
    checkpoints,
  });
  if (!walk.ok) return result({ id: walk.id, seq: walk.seq, reason: walk.reason });
  const { last } = walk;
  if (last.seq !== headSeq) return result({ id: null, seq: last.seq + 1, reason: `the chain head names ${headSeq} entries but ${last.seq} were found (entries removed at the end)` });
  if (head && head.checksum !== last.checksum) return result({ id: null, seq: headSeq, reason: 'the last entry does not match the chain head (edited or removed)' });
  if (checkpoints.bad.length > 0) {
    // The chain is self-consistent but disagrees with a signature: rewritten (and recomputed) after
    // the last good checkpoint, or a checkpoint was forged. Name what no good signature covers.
    const goodSeq = checkpoints.lastGood?.seq ?? 0;
    const [next] = await db
      .select({ id: auditLogs.id, seq: auditLogs.seq })
      .from(auditLogs)
      .where(and(eq(auditLogs.organizationId, organizationId), eq(auditLogs.seq, goodSeq + 1)));
    const newestBad = checkpoints.bad[0];
    return result({
      id: next?.id ?? null,
      seq: goodSeq + 1,
      reason: `first entry after the last good checkpoint (seq ${goodSeq}): the checkpoint at seq ${newestBad.seq} ${newestBad.reason}`,
    });
  }
  return result(null);
}

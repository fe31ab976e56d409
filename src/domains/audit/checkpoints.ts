/**
 * Signed checkpoints of the audit chain head: the signed text, the listing, and their check by
 * verify (docs/decisions.md "Audit checkpoints").
 */
import { and, count, desc, eq, inArray, sql } from 'drizzle-orm';
import type { Executor } from '../../db/client.js';
import { auditCheckpoints, auditLogs } from '../../db/schema/index.js';
import { sealProblem } from './checkpoint-seal.js';
import type { AuditSigner } from './signer.js';

type Row = typeof auditCheckpoints.$inferSelect;

/** A checkpoint as the API shows it. */
export const checkpointView = (r: Row) => ({
  id: r.id,
  seq: r.seq,
  checksum: r.checksum,
  signedAt: r.signedAt.toISOString(),
  message: r.message,
  signature: r.signature,
  keyId: r.keyId,
  publicKey: r.publicKey,
});

/** A page of the organization's checkpoints, newest first. */
export async function listCheckpoints(db: Executor, orgId: string, q: { limit: number; offset: number }) {
  const w = eq(auditCheckpoints.organizationId, orgId);
  const [rows, [{ total }]] = await Promise.all([
    db.select().from(auditCheckpoints).where(w).orderBy(desc(auditCheckpoints.seq), desc(auditCheckpoints.signedAt)).limit(q.limit).offset(q.offset),
    db.select({ total: count() }).from(auditCheckpoints).where(w),
  ]);
  return { rows: rows.map(checkpointView), total };
}

interface CheckpointRef {
  seq: number;
  signedAt: string;
  keyId: string;
}

export interface CheckpointReport {
  /** Checkpoints examined, newest first, up to and including the first good one. */
  checked: number;
  /** The newest checkpoint signed by this server's key that matches the chain. */
  lastGood: CheckpointRef | null;
  /** Checkpoints newer than lastGood that failed, newest first (at most BAD_LISTED). */
  bad: Array<CheckpointRef & { reason: string }>;
  /** Sound checkpoints newer than lastGood signed by another key (another instance, or a former key). */
  otherKeys: number;
  /** Entries no good checkpoint covers yet (head seq minus lastGood's seq). */
  entriesAfterLastGood: number;
}

const BAD_LISTED = 10;

/**
 * Why a checkpoint is bad; 'good' when it is signed by this server's key and matches the chain;
 * 'other-key' when it is sound but signed by a key this server does not hold.
 */
function judge(c: Row, chainChecksumAtSeq: string | undefined, signer: AuditSigner): string {
  const problem = sealProblem(c);
  if (problem !== null) return problem;
  if (chainChecksumAtSeq === undefined) return 'is beyond the end of the chain (entries removed)';
  if (chainChecksumAtSeq !== c.checksum) return 'no longer matches the chain (the entry at its seq has another checksum)';
  // Deliberate: the server vouches only with its own key; a public key stored in the database may
  // have been put there by the same writer (docs/decisions.md "Audit checkpoints").
  return c.keyId === signer.keyId ? 'good' : 'other-key';
}

/**
 * Examines the organization's checkpoints newest first, in pages (keyset over seq, id), until one is
 * good: a good checkpoint vouches for every entry up to its seq, since the chain links them and the
 * signer only signs a head that continues its previous checkpoint (see createDueCheckpoints). Any
 * checkpoint that fails its signature or no longer matches the chain is bad, whatever its key.
 */
export async function examineCheckpoints(
  db: Executor,
  orgId: string,
  opts: { signer: AuditSigner; pageSize: number; headSeq: number },
): Promise<CheckpointReport> {
  const report: CheckpointReport = { checked: 0, lastGood: null, bad: [], otherKeys: 0, entriesAfterLastGood: opts.headSeq };
  let after: { seq: number; id: string } | null = null;
  for (;;) {
    const cond = [eq(auditCheckpoints.organizationId, orgId)];
    if (after) cond.push(sql`(${auditCheckpoints.seq}, ${auditCheckpoints.id}) < (${after.seq}, ${after.id})`);
    const page = await db
      .select()
      .from(auditCheckpoints)
      .where(and(...cond))
      .orderBy(desc(auditCheckpoints.seq), desc(auditCheckpoints.id))
      .limit(opts.pageSize);
    if (page.length === 0) return report;
    const entries = await db
      .select({ seq: auditLogs.seq, checksum: auditLogs.checksum })
      .from(auditLogs)
      .where(and(eq(auditLogs.organizationId, orgId), inArray(auditLogs.seq, [...new Set(page.map((c) => c.seq))])));
    const checksumAt = new Map(entries.map((e) => [e.seq, e.checksum]));
    for (const c of page) {
      report.checked += 1;
      const ref = { seq: c.seq, signedAt: c.signedAt.toISOString(), keyId: c.keyId };
      const verdict = judge(c, checksumAt.get(c.seq), opts.signer);
      if (verdict === 'good') {
        report.lastGood = ref;
        report.entriesAfterLastGood = Math.max(0, opts.headSeq - c.seq);
        return report;
      }
      if (verdict === 'other-key') report.otherKeys += 1;
      else if (report.bad.length < BAD_LISTED) report.bad.push({ ...ref, reason: verdict });
    }
    if (page.length < opts.pageSize) return report;
    const last = page[page.length - 1];
    after = { seq: last.seq, id: last.id };
  }
}

/**
 * Writing signed checkpoints of each organization's chain head. No timer here: the scheduler (or
 * start-up, in main.ts) calls createDueCheckpoints (docs/decisions.md "Audit checkpoints").
 */
import { sql } from 'drizzle-orm';
import { rowsOf, type Db } from '../../db/client.js';
import { auditCheckpoints } from '../../db/schema/index.js';
import { GENESIS } from './chain.js';
import { checkpointMessage } from './checkpoint-seal.js';
import { VERIFY_PAGE_SIZE, walkChain } from './service.js';
import type { AuditSigner } from './signer.js';

interface DueRow {
  organization_id: string;
  seq: string | number;
  checksum: string;
  last_seq: string | number | null;
  last_checksum: string | null;
}

export interface CheckpointRun {
  created: Array<{ organizationId: string; seq: number }>;
  /** Heads not signed because the chain no longer continues this key's last checkpoint. */
  refused: Array<{ organizationId: string; seq: number; reason: string }>;
}

/**
 * Signs and stores the chain head of every organization whose head moved `everyEntries` past this
 * signer's last checkpoint, or moved at all and `everyMs` passed since it. Before signing, the entries
 * since that checkpoint are walked (in pages): a head that does not continue it is refused, so a
 * rewritten chain is never vouched for.
 */
export async function createDueCheckpoints(opts: {
  db: Db;
  signer: AuditSigner;
  now: Date;
  everyEntries: number;
  everyMs: number;
  pageSize?: number;
}): Promise<CheckpointRun> {
  const { db, signer, now } = opts;
  const cutoff = new Date(now.getTime() - opts.everyMs);
  // The latest checkpoint by this key per organization (index audit_checkpoints_org_key_seq_uq).
  const due = rowsOf<DueRow>(
    await db.execute(sql`
      select h.organization_id, h.seq, h.checksum, c.seq as last_seq, c.checksum as last_checksum
      from audit_chain_heads h
      left join lateral (
        select seq, checksum, signed_at from audit_checkpoints c
        where c.organization_id = h.organization_id and c.key_id = ${signer.keyId}
        order by c.seq desc limit 1
      ) c on true
      where h.seq > coalesce(c.seq, 0)
        and (h.seq - coalesce(c.seq, 0) >= ${opts.everyEntries} or c.signed_at is null or c.signed_at <= ${cutoff.toISOString()})
      order by h.organization_id`),
  );
  const run: CheckpointRun = { created: [], refused: [] };
  for (const d of due) {
    const organizationId = d.organization_id;
    const head = { seq: Number(d.seq), checksum: d.checksum };
    const from = d.last_seq === null ? { seq: 0, checksum: GENESIS } : { seq: Number(d.last_seq), checksum: d.last_checksum ?? '' };
    const walk = await walkChain(db, organizationId, from, { pageSize: opts.pageSize ?? VERIFY_PAGE_SIZE, toSeq: head.seq });
    const reason = !walk.ok
      ? `entry ${walk.seq}: ${walk.reason}`
      : walk.last.seq !== head.seq || walk.last.checksum !== head.checksum
        ? 'the chain head does not match its last entry'
        : null;
    if (reason !== null) {
      run.refused.push({ organizationId, seq: head.seq, reason });
      continue;
    }
    const signedAt = now;
    const message = checkpointMessage({ organizationId, seq: head.seq, checksum: head.checksum, signedAt });
    await db
      .insert(auditCheckpoints)
      .values({ organizationId, seq: head.seq, checksum: head.checksum, signedAt, keyId: signer.keyId, publicKey: signer.publicKeyPem, message, signature: signer.sign(message) })
      .onConflictDoNothing(); // another instance signed this head with this key: same checkpoint
    run.created.push({ organizationId, seq: head.seq });
  }
  return run;
}

/** Trace mutations other than ingest. */
import type { Db } from '../../db/client.js';
import type { Actor } from '../../core/actor.js';
import { writeAudit, type AuditContext } from '../audit/service.js';
import { flagTrace, traceView } from './queries.js';

/** Flags or unflags a trace for human review; audited. */
export async function setFlag(db: Db, ctx: AuditContext & { principal: Actor }, id: string, flagged: boolean, reason: string | null) {
  return db.transaction(async (tx) => {
    const before = await flagTrace(tx, ctx.principal, id, flagged, reason);
    await writeAudit(tx, ctx, {
      action: flagged ? 'trace.flag' : 'trace.unflag',
      resourceType: 'trace',
      resourceId: id,
      before: { flagged: before.flagged, flagReason: before.flagReason },
      after: { flagged, flagReason: flagged ? reason : null },
      metadata: { traceId: traceView(before).traceId },
    });
    return { id };
  });
}

/**
 * Webhook delivery history retention: finished messages (succeeded or failed) with their attempts,
 * deleted once they last changed more than WEBHOOK_RETENTION_DAYS ago, in bounded batches
 * (docs/decisions.md, "Webhook delivery retention").
 */
import { sql } from 'drizzle-orm';
import { rowsOf, type Executor } from '../../db/client.js';
import { deleteInPartitions } from '../../db/retention.js';
import { webhookMessages } from '../../db/schema/index.js';
import { organizationIds } from '../organizations/index.js';

/** Organization ids per statement when listing the webhooks to sweep. */
const ORGS_PER_LIST = 1000;

/** What one retention run deletes, and its bounds. */
export interface DeleteWebhookHistoryOptions {
  /** Finished messages last changed before this instant are deleted, with their attempts. */
  before: Date;
  /** Messages per DELETE statement: bounds each statement's locks, WAL burst and duration. */
  batchSize?: number;
  /** DELETE statements per run at most; the rest waits for the next run. */
  maxBatches?: number;
}

/**
 * The smallest UUIDv7 of the millisecond `at`: every event id made before `at` sorts below it. Event
 * ids are UUIDv7 made when the event was written, before any attempt, so a message finished before
 * the cutoff has an event id below this bound (the next run catches an instance's clock skew).
 */
export function uuidv7Floor(at: Date): string {
  const hex = Math.max(0, at.getTime()).toString(16).padStart(12, '0');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-0000-0000-000000000000`;
}

/**
 * Deletes the delivery history of every webhook older than `before`: messages no longer pending whose
 * last change (their last attempt, or their failing) is before it, and their attempts (ON DELETE
 * CASCADE). A pending message is never deleted, however old: it still has a delivery to make. Runs
 * webhook by webhook (deleteInPartitions), `batchSize` messages per statement, until none is left or
 * `maxBatches` statements ran; answers how many messages were deleted and whether some may remain.
 */
export async function deleteExpiredWebhookHistory(db: Executor, opts: DeleteWebhookHistoryOptions): Promise<{ deleted: number; more: boolean }> {
  const before = opts.before.toISOString();
  const floor = uuidv7Floor(opts.before);
  const m = webhookMessages;
  // The event id bound lets the (organization, webhook, event, series) index stop at the cutoff
  // instead of reading every message of the webhook; updated_at decides.
  const expired = sql`${m.eventId} < ${floor}::uuid and ${m.status} <> 'pending' and ${m.updatedAt} < ${before}::timestamptz`;
  const webhooks = await webhooksWithExpired(db, await organizationIds(db), before, floor);
  const partitions = webhooks.map((w) => sql`${m.organizationId} = ${w.organizationId}::uuid and ${m.webhookId} = ${w.id}::uuid`);
  return deleteInPartitions(db, m, expired, partitions, { batchSize: opts.batchSize, maxBatches: opts.maxBatches });
}

/**
 * The webhooks of the organizations `orgIds` that have expired history, in statements of
 * ORGS_PER_LIST organizations: the statement cap is spent only on webhooks with something to delete,
 * so every run makes progress and a webhook that sorts late is reached.
 */
async function webhooksWithExpired(db: Executor, orgIds: string[], before: string, floor: string): Promise<{ organizationId: string; id: string }[]> {
  const found: { organizationId: string; id: string }[] = [];
  for (let i = 0; i < orgIds.length; i += ORGS_PER_LIST) {
    const ids = `{${orgIds.slice(i, i + ORGS_PER_LIST).join(',')}}`;
    const rows = rowsOf<{ organization_id: string; id: string }>(
      await db.execute(sql`
        select w.organization_id, w.id from unnest(${ids}::uuid[]) as o(id)
          join webhooks w on w.organization_id = o.id
         where exists (
           select 1 from webhook_messages m
            where m.organization_id = w.organization_id and m.webhook_id = w.id and m.event_id < ${floor}::uuid
              and m.status <> 'pending' and m.updated_at < ${before}::timestamptz)
         order by w.organization_id, w.id`),
    );
    found.push(...rows.map((r) => ({ organizationId: r.organization_id, id: r.id })));
  }
  return found;
}

/** The api_keys reads and writes of authentication (src/http/auth.ts), kept in the table's owner. */
import { and, eq, getTableColumns, sql } from 'drizzle-orm';
import type { Db } from '../../db/client.js';
import { apiKeyHashes, apiKeys } from '../../db/schema/index.js';

/** The key row whose secret hashes to `hash` (any organization, active or not), or undefined. */
export async function findKeyByHash(db: Db, hash: string) {
  // Through api_key_hashes (primary key: one row at most), then the key by its primary key. The
  // join (not a bare read of the hash row) makes a hash whose key is gone find nothing, and the
  // key_hash check makes a hash row pointing at a key that now has another hash find nothing too.
  const [row] = await db
    .select(getTableColumns(apiKeys))
    .from(apiKeyHashes)
    .innerJoin(apiKeys, and(eq(apiKeys.organizationId, apiKeyHashes.organizationId), eq(apiKeys.id, apiKeyHashes.apiKeyId), eq(apiKeys.keyHash, apiKeyHashes.keyHash)))
    .where(eq(apiKeyHashes.keyHash, hash))
    .limit(1);
  return row;
}

/** Buffered uses of one key: how many, and the latest. */
export interface KeyUsage {
  id: string;
  n: number;
  at: Date;
}

/** Adds buffered uses to their keys in one statement: usage_count grows by n, last_used_at never moves back. */
export async function recordKeyUsage(db: Db, usage: readonly KeyUsage[]) {
  if (usage.length === 0) return;
  const rows = usage.map((u) => sql`(${u.id}::uuid, ${u.n}::bigint, ${u.at.toISOString()}::timestamptz)`);
  await db.execute(sql`
    update api_keys k set usage_count = k.usage_count + u.n,
      last_used_at = greatest(k.last_used_at, u.at)
    from (values ${sql.join(rows, sql`, `)}) as u(id, n, at)
    where k.id = u.id`);
}

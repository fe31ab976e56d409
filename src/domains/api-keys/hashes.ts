/** Writes of api_key_hashes (the hash → key lookup), each inside the caller's transaction. */
import { eq } from 'drizzle-orm';
import type { Executor } from '../../db/client.js';
import { apiKeyHashes } from '../../db/schema/index.js';

/** Records a key's hash; the primary key refuses a hash some key (any organization) already has. */
export async function addKeyHash(tx: Executor, v: { keyHash: string; organizationId: string; apiKeyId: string }) {
  await tx.insert(apiKeyHashes).values(v);
}

/** Forgets a hash (the key was rotated away from it or deleted). */
export async function removeKeyHash(tx: Executor, keyHash: string) {
  await tx.delete(apiKeyHashes).where(eq(apiKeyHashes.keyHash, keyHash));
}

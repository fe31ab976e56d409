/** The organization security settings authentication reads (src/http/auth.ts), kept in their owner. */
import { eq } from 'drizzle-orm';
import type { Db } from '../../db/client.js';
import { organizations } from '../../db/schema/index.js';

/** The organization's IP allowlist and allowed key environments, or undefined when it does not exist. */
export async function securityOf(db: Db, orgId: string) {
  const [row] = await db
    .select({ id: organizations.id, ipAllowlist: organizations.ipAllowlist, allowedEnvironments: organizations.allowedEnvironments })
    .from(organizations)
    .where(eq(organizations.id, orgId))
    .limit(1);
  return row;
}

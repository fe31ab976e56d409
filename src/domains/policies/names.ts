/** Names of policies by id, for readers in other domains (the policy stats of the policy-decisions module). */
import { and, eq, inArray } from 'drizzle-orm';
import type { Executor } from '../../db/client.js';
import { policies } from '../../db/schema/index.js';

/** The current name of each of the organization's policies among `ids`, in one query; deleted ones are absent. */
export async function policyNames(db: Executor, orgId: string, ids: readonly string[]): Promise<Map<string, string>> {
  if (ids.length === 0) return new Map();
  const rows = await db
    .select({ id: policies.id, name: policies.name })
    .from(policies)
    .where(and(eq(policies.organizationId, orgId), inArray(policies.id, [...ids])));
  return new Map(rows.map((r) => [r.id, r.name]));
}

/** Users known to an organization: from JWT sign-ins or created by the CLI. */
import { and, eq, sql } from 'drizzle-orm';
import { LRUCache } from 'lru-cache';
import type { Executor } from '../../db/client.js';
import { users } from '../../db/schema/index.js';

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
// A signed-in user is written at most once per interval per process, not on every request.
const SEEN_INTERVAL_MS = 10 * 60_000;
// A bounded LRU: many distinct signed-in users evict the least recent, not everyone at once.
const seen = new LRUCache<string, { id: string; at: number; digest: string }>({ max: 50_000 });

/** Creates or refreshes the user row behind a token and answers its id (the token's `sub` when it is a uuid). */
export async function upsertUserFromToken(
  db: Executor,
  u: { organizationId: string; subject: string; email: string | null; name: string | null; role: string },
): Promise<string> {
  const cacheKey = `${u.organizationId}:${u.subject}`;
  const digest = `${u.email}|${u.name}|${u.role}`;
  const hit = seen.get(cacheKey);
  if (hit && hit.digest === digest && Date.now() - hit.at < SEEN_INTERVAL_MS) return hit.id;
  const [row] = await db
    .insert(users)
    .values({
      ...(UUID_RE.test(u.subject) ? { id: u.subject.toLowerCase() } : {}),
      organizationId: u.organizationId,
      subject: u.subject,
      email: u.email,
      name: u.name,
      role: u.role,
      lastSeenAt: new Date(),
    })
    .onConflictDoUpdate({
      target: [users.organizationId, users.subject],
      set: { email: u.email, name: u.name, role: u.role, lastSeenAt: sql`now()` },
    })
    .returning({ id: users.id });
  seen.set(cacheKey, { id: row.id, at: Date.now(), digest });
  return row.id;
}

/** Creates a user (CLI); the subject defaults to the email. */
export async function createUser(
  db: Executor,
  u: { organizationId: string; email: string; name: string; role: string },
) {
  const [row] = await db
    .insert(users)
    .values({ organizationId: u.organizationId, subject: u.email, email: u.email, name: u.name, role: u.role })
    .returning();
  return row;
}

/** Finds a user of the organization, or undefined. */
export async function findUser(db: Executor, organizationId: string, id: string) {
  const [row] = await db
    .select()
    .from(users)
    .where(and(eq(users.organizationId, organizationId), eq(users.id, id)))
    .limit(1);
  return row;
}

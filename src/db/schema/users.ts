import { pgTable, text, timestamp, uniqueIndex } from 'drizzle-orm/pg-core';
import { createdAtColumn, tenantColumns, tenantPrimaryKey } from './columns.js';

/**
 * People known to an organization: created on first JWT sign-in (subject = the token's `sub`)
 * or by the CLI. Team membership refers to these ids.
 */
export const users = pgTable(
  'users',
  {
    ...tenantColumns(),
    subject: text('subject').notNull(),
    email: text('email'),
    name: text('name'),
    role: text('role').notNull().default('viewer'),
    createdAt: createdAtColumn(),
    lastSeenAt: timestamp('last_seen_at', { withTimezone: true }),
  },
  // Sign-in looks a user up by (organization, subject).
  (t) => [tenantPrimaryKey(t), uniqueIndex('users_org_subject_uq').on(t.organizationId, t.subject)],
);

import { pgTable, text, timestamp, uniqueIndex, uuid } from 'drizzle-orm/pg-core';
import { organizations } from './organizations.js';

/**
 * People known to an organization: created on first JWT sign-in (subject = the token's `sub`)
 * or by the CLI. Team membership refers to these ids.
 */
export const users = pgTable(
  'users',
  {
    id: uuid('id').primaryKey().defaultRandom(),
    organizationId: uuid('organization_id')
      .notNull()
      .references(() => organizations.id, { onDelete: 'cascade' }),
    subject: text('subject').notNull(),
    email: text('email'),
    name: text('name'),
    role: text('role').notNull().default('viewer'),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    lastSeenAt: timestamp('last_seen_at', { withTimezone: true }),
  },
  // Sign-in looks a user up by (organization, subject).
  (t) => [uniqueIndex('users_org_subject_uq').on(t.organizationId, t.subject)],
);

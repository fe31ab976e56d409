import { sql } from 'drizzle-orm';
import { index, pgTable, text, timestamp, uniqueIndex, uuid } from 'drizzle-orm/pg-core';
import { organizations } from './organizations.js';
import { users } from './users.js';

/** Teams; deleting one stamps deletedAt (soft delete) so history that names it stays readable. */
export const teams = pgTable(
  'teams',
  {
    id: uuid('id').primaryKey().defaultRandom(),
    organizationId: uuid('organization_id')
      .notNull()
      .references(() => organizations.id, { onDelete: 'cascade' }),
    name: text('name').notNull(),
    description: text('description'),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
    deletedAt: timestamp('deleted_at', { withTimezone: true }),
  },
  (t) => [
    // One live team per name in an organization; a deleted team frees its name.
    uniqueIndex('teams_org_name_live_uq').on(t.organizationId, t.name).where(sql`${t.deletedAt} is null`),
    // GET /teams lists live teams of an organization ordered by name.
    index('teams_org_live_idx').on(t.organizationId, t.name).where(sql`${t.deletedAt} is null`),
  ],
);

export const teamMembers = pgTable(
  'team_members',
  {
    id: uuid('id').primaryKey().defaultRandom(),
    teamId: uuid('team_id')
      .notNull()
      .references(() => teams.id, { onDelete: 'cascade' }),
    userId: uuid('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    role: text('role').notNull().default('member'),
    addedAt: timestamp('added_at', { withTimezone: true }).notNull().defaultNow(),
  },
  // A user is in a team once; also serves member listing by team.
  (t) => [uniqueIndex('team_members_team_user_uq').on(t.teamId, t.userId)],
);

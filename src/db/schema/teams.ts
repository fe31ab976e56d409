import { sql } from 'drizzle-orm';
import { foreignKey, index, pgTable, text, timestamp, uniqueIndex, uuid } from 'drizzle-orm/pg-core';
import { tenantColumns, tenantPrimaryKey, timestampColumns } from './columns.js';
import { users } from './users.js';

/** Teams; deleting one stamps deletedAt (soft delete) so history that names it stays readable. */
export const teams = pgTable(
  'teams',
  {
    ...tenantColumns(),
    name: text('name').notNull(),
    description: text('description'),
    ...timestampColumns(),
    deletedAt: timestamp('deleted_at', { withTimezone: true }),
  },
  (t) => [
    tenantPrimaryKey(t),
    // One live team per name in an organization; a deleted team frees its name.
    uniqueIndex('teams_org_name_live_uq').on(t.organizationId, t.name).where(sql`${t.deletedAt} is null`),
    // GET /teams lists live teams of an organization ordered by name.
    index('teams_org_live_idx').on(t.organizationId, t.name).where(sql`${t.deletedAt} is null`),
  ],
);

/** Memberships; team and user are of the membership's organization (the foreign keys include it). */
export const teamMembers = pgTable(
  'team_members',
  {
    // The organization's own foreign key is implied by the team's (organization_id, id).
    ...tenantColumns({ references: false }),
    teamId: uuid('team_id').notNull(),
    userId: uuid('user_id').notNull(),
    role: text('role').notNull().default('member'),
    addedAt: timestamp('added_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    tenantPrimaryKey(t),
    foreignKey({ name: 'team_members_team_fk', columns: [t.organizationId, t.teamId], foreignColumns: [teams.organizationId, teams.id] }).onDelete('cascade'),
    foreignKey({ name: 'team_members_user_fk', columns: [t.organizationId, t.userId], foreignColumns: [users.organizationId, users.id] }).onDelete('cascade'),
    // A user is in a team once; also serves member listing by team.
    uniqueIndex('team_members_team_user_uq').on(t.organizationId, t.teamId, t.userId),
  ],
);

/** Teams of an organization and their members: list, create, update, soft delete, membership changes. */
import { and, asc, count, eq, ilike, isNull, ne, or, sql, type SQL } from 'drizzle-orm';
import type { Db, Executor, Tx } from '../../db/client.js';
import { teamMembers, teams, users } from '../../db/schema/index.js';
import { containsPattern } from '../../db/like.js';
import { conflict, notFound } from '../../core/errors.js';
import { changedFields } from '../../core/changes.js';
import { writeAudit, type AuditContext } from '../audit/service.js';
import { findUser } from '../users/index.js';
import type { AddTeamMemberInput, CreateTeamInput, UpdateTeamInput } from './schemas.js';

type Row = typeof teams.$inferSelect;
type TeamFields = Pick<Row, 'id' | 'organizationId' | 'name' | 'description' | 'createdAt' | 'updatedAt'>;

/** The public view of a team (deletedAt is internal: deleted teams are never shown). */
export const teamView = (r: TeamFields, memberCount: number) => ({
  id: r.id,
  organizationId: r.organizationId,
  name: r.name,
  description: r.description,
  memberCount: Number(memberCount),
  createdAt: r.createdAt.toISOString(),
  updatedAt: r.updatedAt.toISOString(),
});

/** The public view of a membership: the user's id, email and name, and the role in the team. */
export const memberView = (m: { id: string; email: string | null; name: string | null; role: string; addedAt: Date }) => ({
  id: m.id,
  email: m.email,
  name: m.name,
  role: m.role,
  addedAt: m.addedAt.toISOString(),
});

const liveTeam = (orgId: string, id: string) => and(eq(teams.organizationId, orgId), eq(teams.id, id), isNull(teams.deletedAt));

// Drizzle renders columns unqualified in a single-table select, where "id" inside the correlated
// subquery would bind to team_members.id: both sides are therefore spelled out with their table.
const qualified = (table: SQL | typeof teams | typeof teamMembers, name: string) => sql`${table}.${sql.identifier(name)}`;
const TEAM_ID = qualified(teams, teams.id.name);
const TEAM_ORG_ID = qualified(teams, teams.organizationId.name);
const MEMBER_TEAM_ID = qualified(teamMembers, teamMembers.teamId.name);
const MEMBER_ORG_ID = qualified(teamMembers, teamMembers.organizationId.name);

/** Number of members of the team (served by the unique (organization_id, team_id, user_id) index). */
const memberCountOf = (orgId: SQL, teamId: SQL) =>
  sql<number>`(select count(*)::int from ${teamMembers} where ${MEMBER_ORG_ID} = ${orgId} and ${MEMBER_TEAM_ID} = ${teamId})`;

/** The columns of a team as read, with its member count. */
const teamColumns = {
  id: teams.id,
  organizationId: teams.organizationId,
  name: teams.name,
  description: teams.description,
  createdAt: teams.createdAt,
  updatedAt: teams.updatedAt,
  memberCount: memberCountOf(TEAM_ORG_ID, TEAM_ID),
};

const memberColumns = {
  id: users.id,
  email: users.email,
  name: users.name,
  role: teamMembers.role,
  addedAt: teamMembers.addedAt,
};

/**
 * One page of live teams ordered by name, in one query: the total rides along as a window count,
 * and the member counts are correlated counts that Postgres evaluates only for the rows it emits
 * (offset + limit of them), not for every matching team. Live names are unique in an organization,
 * so name alone is a stable order, read straight off teams_org_live_idx. (Measured on PostgreSQL:
 * faster for first pages than a separate count query or a nested page query.) An offset past the
 * end returns no row to carry the total, so only then a count query follows.
 */
export async function listTeams(db: Db, orgId: string, q: { limit: number; offset: number; search?: string }) {
  const conds: SQL[] = [eq(teams.organizationId, orgId), isNull(teams.deletedAt)];
  if (q.search) {
    const pattern = containsPattern(q.search);
    conds.push(or(ilike(teams.name, pattern), ilike(teams.description, pattern))!);
  }
  const where = and(...conds);
  const rows = await db
    .select({ ...teamColumns, total: sql<number>`(count(*) over ())::int` })
    .from(teams)
    .where(where)
    .orderBy(asc(teams.name))
    .limit(q.limit)
    .offset(q.offset);
  let total = rows.length > 0 ? Number(rows[0].total) : 0;
  if (rows.length === 0 && q.offset > 0) {
    [{ total }] = await db.select({ total: count() }).from(teams).where(where);
  }
  return { rows: rows.map((r) => teamView(r, r.memberCount)), total };
}

/** A live team of the organization with its member count, or 404. `lock` takes a row lock for the transaction. */
async function loadTeam(db: Executor, orgId: string, id: string, lock?: 'update' | 'share') {
  const q = db
    .select(teamColumns)
    .from(teams)
    .where(liveTeam(orgId, id))
    .limit(1);
  const [row] = lock ? await q.for(lock, { of: teams }) : await q;
  if (!row) throw notFound('Team');
  return row;
}

/** A team's members with their user's email and name, oldest membership first. */
const membersOf = (db: Executor, orgId: string, teamId: string) =>
  db
    .select(memberColumns)
    .from(teamMembers)
    .innerJoin(users, and(eq(users.organizationId, teamMembers.organizationId), eq(users.id, teamMembers.userId)))
    .where(and(eq(teamMembers.organizationId, orgId), eq(teamMembers.teamId, teamId)))
    .orderBy(asc(teamMembers.addedAt), asc(teamMembers.userId));

/**
 * One team with all its members, oldest membership first. Members are not paginated here (teams
 * are small; GET /teams/{id}/members pages them), so members.length equals memberCount.
 */
export async function getTeam(db: Db, orgId: string, id: string) {
  const team = await loadTeam(db, orgId, id);
  const members = await membersOf(db, orgId, id);
  return { ...teamView(team, members.length), members: members.map(memberView) };
}

/**
 * Claims a team name for this transaction: throws 409 when another live team of the organization
 * has it. A transaction-scoped advisory lock per (organization, name) serializes concurrent
 * creates and renames to one name, so the loser gets this 409 instead of a unique violation
 * from teams_org_name_live_uq.
 */
async function claimName(tx: Tx, orgId: string, name: string, exceptId?: string) {
  await tx.execute(sql`select pg_advisory_xact_lock(hashtextextended(${`team_name:${orgId}:${name}`}, 0))`);
  const conds: SQL[] = [eq(teams.organizationId, orgId), eq(teams.name, name), isNull(teams.deletedAt)];
  if (exceptId) conds.push(ne(teams.id, exceptId));
  const [hit] = await tx.select({ id: teams.id }).from(teams).where(and(...conds)).limit(1);
  if (hit) throw conflict(`A team named "${name}" already exists`);
}

/** Creates a team; 409 when a live team of the organization has the same name. */
export async function createTeam(db: Db, ctx: AuditContext, input: CreateTeamInput) {
  const orgId = ctx.principal.organizationId;
  return db.transaction(async (tx) => {
    await claimName(tx, orgId, input.name);
    const [row] = await tx
      .insert(teams)
      .values({ organizationId: orgId, name: input.name, description: input.description ?? null })
      .returning();
    const view = teamView(row, 0);
    await writeAudit(tx, ctx, { action: 'team.create', resourceType: 'team', resourceId: row.id, after: view });
    return view;
  });
}

/** Changes name and/or description; 409 when the new name is taken by another live team. */
export async function updateTeam(db: Db, ctx: AuditContext, id: string, input: UpdateTeamInput) {
  const orgId = ctx.principal.organizationId;
  return db.transaction(async (tx) => {
    const before = await loadTeam(tx, orgId, id, 'update');
    const set = changedFields(before, { name: input.name, description: input.description });
    if (!set) return teamView(before, before.memberCount);
    if (set.name !== undefined) await claimName(tx, orgId, set.name, id);
    const [row] = await tx
      .update(teams)
      .set({ ...set, updatedAt: new Date() })
      .where(liveTeam(orgId, id))
      .returning();
    const after = teamView(row, before.memberCount);
    await writeAudit(tx, ctx, { action: 'team.update', resourceType: 'team', resourceId: id, before: teamView(before, before.memberCount), after });
    return after;
  });
}

/** Soft-deletes a team (stamps deletedAt); memberships are kept for history, the name becomes free. */
export async function deleteTeam(db: Db, ctx: AuditContext, id: string) {
  const orgId = ctx.principal.organizationId;
  await db.transaction(async (tx) => {
    const before = await loadTeam(tx, orgId, id, 'update');
    const now = new Date();
    await tx.update(teams).set({ deletedAt: now, updatedAt: now }).where(liveTeam(orgId, id));
    await writeAudit(tx, ctx, { action: 'team.delete', resourceType: 'team', resourceId: id, before: teamView(before, before.memberCount) });
  });
}

/** One page of a team's members, oldest membership first; 404 when the team is unknown. */
export async function listMembers(db: Db, orgId: string, teamId: string, q: { limit: number; offset: number }) {
  const team = await loadTeam(db, orgId, teamId);
  const rows = await membersOf(db, orgId, teamId).limit(q.limit).offset(q.offset);
  return { rows: rows.map(memberView), total: Number(team.memberCount) };
}

/** Adds a user of the organization to a team; 404 for an unknown team or user, 409 when already a member. */
export async function addMember(db: Db, ctx: AuditContext, teamId: string, input: AddTeamMemberInput) {
  const orgId = ctx.principal.organizationId;
  await db.transaction(async (tx) => {
    // A share lock keeps a concurrent delete from removing the team under the new membership.
    await loadTeam(tx, orgId, teamId, 'share');
    const user = await findUser(tx, orgId, input.userId);
    if (!user) throw notFound('User');
    // The unique (organization_id, team_id, user_id) index decides "already a member", race-free.
    const [row] = await tx
      .insert(teamMembers)
      .values({ organizationId: orgId, teamId, userId: user.id, role: input.role })
      .onConflictDoNothing()
      .returning();
    if (!row) throw conflict('The user is already a member of this team');
    await writeAudit(tx, ctx, {
      action: 'team.member_add',
      resourceType: 'team',
      resourceId: teamId,
      after: memberView({ id: user.id, email: user.email, name: user.name, role: row.role, addedAt: row.addedAt }),
    });
  });
}

/** Removes a user from a team; 404 when the team is unknown or the user is not a member. */
export async function removeMember(db: Db, ctx: AuditContext, teamId: string, userId: string) {
  const orgId = ctx.principal.organizationId;
  await db.transaction(async (tx) => {
    await loadTeam(tx, orgId, teamId, 'share');
    const [row] = await tx
      .delete(teamMembers)
      .where(and(eq(teamMembers.organizationId, orgId), eq(teamMembers.teamId, teamId), eq(teamMembers.userId, userId)))
      .returning();
    if (!row) throw notFound('Team member');
    await writeAudit(tx, ctx, {
      action: 'team.member_remove',
      resourceType: 'team',
      resourceId: teamId,
      before: { id: row.userId, role: row.role, addedAt: row.addedAt.toISOString() },
    });
  });
}

/** True when the organization has a live (not deleted) team with this id (for other modules' references). */
export async function isLiveTeam(db: Executor, orgId: string, id: string) {
  const [t] = await db.select({ id: teams.id }).from(teams).where(liveTeam(orgId, id)).limit(1);
  return t !== undefined;
}

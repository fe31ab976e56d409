/**
 * Access grants: the rules of their lifecycle (docs/decisions.md, "Access grants"). Stored statuses
 * move only pending → approved | denied and approved → revoked; a pending or approved grant whose
 * expiresAt has passed reads as expired (computed on every read, stored lazily by requestGrant).
 */
import { LRUCache } from 'lru-cache';
import { and, count, desc, eq, gt, inArray, isNull, lte, or, sql, type SQL } from 'drizzle-orm';
import type { Db, Executor, Tx } from '../../db/client.js';
import { accessGrants } from '../../db/schema/index.js';
import { forbidden, invalidTransition, notFound, validation } from '../../core/errors.js';
import { sqlStateOf } from '../../core/db-errors.js';
import { writeAudit, type AuditContext } from '../audit/service.js';
import { compileGlob, globProblem, type Glob } from '../policies/index.js';
import { MAX_TTL_SECONDS, type AccessGrant, type CreateAccessGrantInput, type GrantStatus, type ListAccessGrantsQuery } from './schemas.js';

type Row = typeof accessGrants.$inferSelect;

const iso = (d: Date | null) => (d ? d.toISOString() : null);

/** The status a grant has at `now`: pending and approved grants past expiresAt are expired. */
export function effectiveStatus(r: Pick<Row, 'status' | 'expiresAt'>, now: Date): GrantStatus {
  const live = r.status === 'pending' || r.status === 'approved';
  return live && r.expiresAt.getTime() <= now.getTime() ? 'expired' : (r.status as GrantStatus);
}

/** The public view of a grant at `now` (camelCase, ISO timestamps, status as of now). */
export const accessGrantView = (r: Row, now: Date): AccessGrant => ({
  id: r.id,
  organizationId: r.organizationId,
  agentId: r.agentId,
  action: r.action,
  resource: r.resource,
  parametersDigest: r.parametersDigest,
  policyId: r.policyId,
  policyVersion: iso(r.policyVersion),
  status: effectiveStatus(r, now),
  reason: r.reason,
  requestedBy: r.requestedBy,
  requestedAt: r.requestedAt.toISOString(),
  decidedBy: r.decidedBy,
  decidedAt: iso(r.decidedAt),
  expiresAt: r.expiresAt.toISOString(),
  revokedAt: iso(r.revokedAt),
  createdAt: r.createdAt.toISOString(),
  updatedAt: r.updatedAt.toISOString(),
});

/**
 * True when `value` matches the grant's glob. requestGrant stores escaped literals, which may be
 * empty or longer than a glob may be (a long resource URL): those are compared as text, so a
 * stored grant never makes the lookup throw.
 */
function globMatches(source: string, value: string): boolean {
  let glob = compiledGlobs.get(source);
  if (!glob) {
    glob = globProblem(source) !== null ? literal(source.replace(/\\(.)/gs, '$1')) : compileGlob(source);
    compiledGlobs.set(source, glob);
  }
  return glob.test(value);
}

/** A matcher of one exact string. */
const literal = (text: string): Glob => ({ source: text, test: (v: string) => v === text });

// Stored globs compiled once each (bounded), not once per lookup: the lookup is on the enforce path.
const compiledGlobs = new LRUCache<string, Glob>({ max: 10_000 });

/** The SQL condition of a status filter at `now` (expired includes live rows past expiresAt). */
function statusCondition(status: GrantStatus, now: Date): SQL | undefined {
  const t = accessGrants;
  switch (status) {
    case 'pending':
    case 'approved':
      return and(eq(t.status, status), gt(t.expiresAt, now));
    case 'expired':
      return or(eq(t.status, 'expired'), and(inArray(t.status, ['pending', 'approved']), lte(t.expiresAt, now)));
    default:
      return eq(t.status, status);
  }
}

/** One page of the organization's grants, newest first, filtered by agent and status as of `now`. */
export async function listAccessGrants(db: Db, orgId: string, q: ListAccessGrantsQuery, now: Date) {
  const conds: (SQL | undefined)[] = [eq(accessGrants.organizationId, orgId)];
  if (q.agentId) conds.push(eq(accessGrants.agentId, q.agentId));
  if (q.status) conds.push(statusCondition(q.status, now));
  const where = and(...conds);
  const [rows, [{ total }]] = await Promise.all([
    db.select().from(accessGrants).where(where).orderBy(desc(accessGrants.createdAt), desc(accessGrants.id)).limit(q.limit).offset(q.offset),
    db.select({ total: count() }).from(accessGrants).where(where),
  ]);
  return { rows: rows.map((r) => accessGrantView(r, now)), total };
}

/** A grant of the organization, or 404 (also for another organization's grant). */
export async function getAccessGrant(db: Executor, orgId: string, id: string, opts: { forUpdate?: boolean } = {}) {
  const q = db.select().from(accessGrants).where(and(eq(accessGrants.organizationId, orgId), eq(accessGrants.id, id))).limit(1);
  const [row] = opts.forUpdate ? await q.for('update') : await q;
  if (!row) throw notFound('Access grant');
  return row;
}

/** The agent named by a grant must exist in the organization: the foreign key says so, as a 422 on `agentId`. */
function unknownAgent(err: unknown): never {
  if (sqlStateOf(err) === '23503') throw validation({ agentId: 'no agent with this id in the organization' });
  throw err;
}

/**
 * Creates a grant that is active at once (status approved, decided by its creator). Exactly one of
 * expiresAt (in the future, at most MAX_TTL_SECONDS away) and ttlSeconds is given (the schema checks).
 */
export async function createAccessGrant(db: Db, ctx: AuditContext, input: CreateAccessGrantInput) {
  const now = ctx.clock.now();
  const expiresAt = input.ttlSeconds !== undefined ? new Date(now.getTime() + input.ttlSeconds * 1000) : new Date(input.expiresAt!);
  if (expiresAt.getTime() <= now.getTime()) throw validation({ expiresAt: 'must be in the future' });
  if (expiresAt.getTime() - now.getTime() > MAX_TTL_SECONDS * 1000) throw validation({ expiresAt: 'must be at most 365 days from now' });
  const by = ctx.principal.userId;
  return db
    .transaction(async (tx) => {
      const [row] = await tx
        .insert(accessGrants)
        .values({
          organizationId: ctx.principal.organizationId,
          agentId: input.agentId,
          action: input.action,
          resource: input.resource ?? null,
          status: 'approved',
          reason: input.reason,
          requestedBy: by,
          requestedAt: now,
          decidedBy: by,
          decidedAt: now,
          expiresAt,
        })
        .returning();
      const view = accessGrantView(row, now);
      await writeAudit(tx, ctx, { action: 'access_grant.create', resourceType: 'access_grant', resourceId: row.id, after: view });
      return view;
    })
    .catch(unknownAgent);
}

/** The transition named `verb` of a grant whose effective status must be `from`; 409 INVALID_TRANSITION otherwise. */
function assertStatus(row: Row, from: GrantStatus, verb: string, now: Date) {
  const status = effectiveStatus(row, now);
  if (status !== from) throw invalidTransition(`Access grant is ${status}; only a ${from} grant can be ${verb}`);
}

/** Locks the grant, checks the transition, applies `set`, audits `access_grant.<action>`. */
async function transition(db: Db, ctx: AuditContext, id: string, action: string, check: (row: Row, now: Date) => void, set: (row: Row, now: Date) => Partial<Row>) {
  const now = ctx.clock.now();
  return db.transaction(async (tx: Tx) => {
    const before = await getAccessGrant(tx, ctx.principal.organizationId, id, { forUpdate: true });
    check(before, now);
    const [row] = await tx
      .update(accessGrants)
      .set({ ...set(before, now), updatedAt: new Date() })
      .where(and(eq(accessGrants.organizationId, before.organizationId), eq(accessGrants.id, id)))
      .returning();
    const after = accessGrantView(row, now);
    await writeAudit(tx, ctx, { action: `access_grant.${action}`, resourceType: 'access_grant', resourceId: id, before: accessGrantView(before, now), after });
    return after;
  });
}

/**
 * Approves a pending grant. The principal that requested it may not approve it (403). The grant
 * keeps the lifetime it was requested with, counted from the approval.
 */
export function approveAccessGrant(db: Db, ctx: AuditContext, id: string) {
  return transition(
    db, ctx, id, 'approve',
    (row, now) => {
      assertStatus(row, 'pending', 'approved', now);
      if (row.requestedBy === ctx.principal.userId) throw forbidden('You requested this access grant; another principal must approve it');
    },
    (row, now) => ({
      status: 'approved',
      decidedBy: ctx.principal.userId,
      decidedAt: now,
      expiresAt: new Date(now.getTime() + (row.expiresAt.getTime() - row.requestedAt.getTime())),
    }),
  );
}

/** Denies a pending grant (anyone with the role may, the requester included: it withdraws the request). */
export function denyAccessGrant(db: Db, ctx: AuditContext, id: string) {
  return transition(
    db, ctx, id, 'deny',
    (row, now) => assertStatus(row, 'pending', 'denied', now),
    (_row, now) => ({ status: 'denied', decidedBy: ctx.principal.userId, decidedAt: now }),
  );
}

/** Revokes an approved, unexpired grant: it stops allowing at once. */
export function revokeAccessGrant(db: Db, ctx: AuditContext, id: string) {
  return transition(
    db, ctx, id, 'revoke',
    (row, now) => assertStatus(row, 'approved', 'revoked', now),
    (_row, now) => ({ status: 'revoked', revokedAt: now }),
  );
}

/** What the enforcement engine asks: may this agent perform this action now? */
export interface GrantQuery {
  agentId: string;
  action: string;
  resource?: string | null;
  parametersDigest?: string | null;
}

/** Live candidate grants read per lookup (after the literal prefilter). */
export const MAX_GRANTS_MATCHED = 500;

/**
 * An approved, unexpired, unrevoked grant of the agent whose action glob matches `action`, whose
 * resource glob (when set) matches `resource`, and whose parametersDigest (when set) equals the
 * request's; null when there is none. One query on access_grants_live_idx that keeps only rows equal
 * to the action as a literal or holding glob syntax; the globs are matched here (they cannot be
 * indexed), over at most MAX_GRANTS_MATCHED rows.
 */
export async function findLiveGrant(db: Executor, orgId: string, q: GrantQuery, now: Date): Promise<AccessGrant | null> {
  const t = accessGrants;
  const digest = q.parametersDigest ?? null;
  const rows = await db
    .select()
    .from(t)
    .where(and(
      eq(t.organizationId, orgId),
      eq(t.agentId, q.agentId),
      eq(t.status, 'approved'),
      gt(t.expiresAt, now),
      digest === null ? isNull(t.parametersDigest) : or(isNull(t.parametersDigest), eq(t.parametersDigest, digest)),
      // Grants that enforcement requested store the action as an escaped literal, so most rows can
      // be matched by equality here; only rows holding glob syntax (wildcards or escapes) go on to the matcher below.
      or(eq(t.action, literalGlob(q.action)), sql`(strpos(${t.action}, '*') > 0 or strpos(${t.action}, '?') > 0 or strpos(${t.action}, '\\') > 0)`),
    ))
    .orderBy(desc(t.expiresAt))
    // Bounded: an agent with thousands of live glob grants pays for at most this many per lookup
    // (the longest-lived first); docs/decisions.md, "Access grants".
    .limit(MAX_GRANTS_MATCHED);
  const resource = q.resource ?? null;
  const hit = rows.find((r) =>
    globMatches(r.action, q.action) && (r.resource === null || (resource !== null && globMatches(r.resource, resource))),
  );
  return hit ? accessGrantView(hit, now) : null;
}

/** What an action_approval policy asks for when no live grant exists. */
export interface GrantRequest {
  agentId: string;
  /** The action's name (a literal, which is also a glob matching only itself once escaped). */
  action: string;
  resource?: string | null;
  parametersDigest?: string | null;
  policyId?: string | null;
  /** The policy's updatedAt (ISO string or Date). */
  policyVersion?: string | Date | null;
  /** The principal that made the request (user id or key id): it may not approve it. */
  requestedBy: string;
  /** The grant's lifetime once approved (the policy's grantTtlSeconds; null: DEFAULT_GRANT_TTL_SECONDS); a pending request lapses after the same time. */
  ttlSeconds?: number | null;
  reason?: string | null;
}

/** A requested grant's lifetime when its policy sets no grantTtlSeconds: one hour. */
export const DEFAULT_GRANT_TTL_SECONDS = 3600;

/** Escapes glob syntax so that a requested action name matches only itself. */
export const literalGlob = (s: string) => s.replace(/[\\*?]/g, (c) => `\\${c}`);

/**
 * A pending grant for the request: a new one, or the pending one already waiting for the same
 * (agent, action, resource, parameters digest). Idempotent under concurrent calls: the partial
 * unique index access_grants_pending_uq admits one pending row per key, the insert does nothing on
 * conflict (after waiting for a concurrent inserter to commit) and the pending row is then read.
 * A pending row of the key past its expiry is stored as expired first, so a new request replaces it.
 */
export async function requestGrant(db: Db, orgId: string, req: GrantRequest, now: Date): Promise<AccessGrant> {
  const t = accessGrants;
  const action = literalGlob(req.action);
  const resource = req.resource == null ? null : literalGlob(req.resource);
  const digest = req.parametersDigest ?? null;
  const key = and(
    eq(t.organizationId, orgId),
    eq(t.agentId, req.agentId),
    eq(t.action, action),
    sql`coalesce(${t.resource}, '') = ${resource ?? ''}`,
    sql`coalesce(${t.parametersDigest}, '') = ${digest ?? ''}`,
    eq(t.status, 'pending'),
  );
  const ttlMs = Math.min(Math.max(req.ttlSeconds ?? DEFAULT_GRANT_TTL_SECONDS, 1), MAX_TTL_SECONDS) * 1000;
  const ctx: AuditContext = {
    principal: { organizationId: orgId, userId: req.requestedBy, userName: null, userEmail: null },
    ip: null,
    userAgent: null,
    clock: { now: () => now },
  };
  // A concurrent approve or deny between the insert and the read leaves no pending row: try again.
  for (let attempt = 0; attempt < 3; attempt++) {
    const found = await db
      .transaction(async (tx) => {
        await tx.update(t).set({ status: 'expired', updatedAt: new Date() }).where(and(key, lte(t.expiresAt, now)));
        // No conflict target: the only unique index a fresh id can collide with is access_grants_pending_uq
        // (an expression index, which drizzle's target list cannot name).
        const [inserted] = await tx
          .insert(t)
          .values({
            organizationId: orgId,
            agentId: req.agentId,
            action,
            resource,
            parametersDigest: digest,
            policyId: req.policyId ?? null,
            policyVersion: req.policyVersion == null ? null : new Date(req.policyVersion),
            status: 'pending',
            reason: req.reason ?? null,
            requestedBy: req.requestedBy,
            requestedAt: now,
            expiresAt: new Date(now.getTime() + ttlMs),
          })
          .onConflictDoNothing()
          .returning();
        if (inserted) {
          const view = accessGrantView(inserted, now);
          await writeAudit(tx, ctx, { action: 'access_grant.request', resourceType: 'access_grant', resourceId: inserted.id, after: view });
          return view;
        }
        const [pending] = await tx.select().from(t).where(key).limit(1);
        return pending ? accessGrantView(pending, now) : null;
      })
      .catch(unknownAgent);
    if (found) return found;
  }
  throw new Error('requestGrant: no pending grant after three attempts');
}

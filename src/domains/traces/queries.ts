/** Reading traces: filtered pages with full-text search, one trace and its relatives, trees, stats, similar traces, export batches. */
import { and, asc, count, desc, eq, getTableColumns, gte, lte, ne, or, sql, type SQL } from 'drizzle-orm';
import type { Db, Executor } from '../../db/client.js';
import { rowsOf } from '../../db/client.js';
import { agents, traces } from '../../db/schema/index.js';
import { notFound } from '../../core/errors.js';
import type { Actor } from '../../core/actor.js';
import type { ListTracesQuery } from './schemas.js';

type Row = typeof traces.$inferSelect;

// Every read selects the same columns (never the tsvector).
const { searchVector: _omit, ...cols } = getTableColumns(traces);

/** The Trace resource. */
export const traceView = (r: Omit<Row, 'searchVector'>) => ({
  id: r.id,
  traceId: r.traceId,
  agentId: r.agentId,
  parentTraceId: r.parentTraceId,
  timestamp: r.timestamp.toISOString(),
  durationMs: r.durationMs,
  status: r.status as 'success',
  input: (r.input as Record<string, unknown> | null) ?? null,
  output: (r.output as Record<string, unknown> | null) ?? null,
  errorMessage: r.errorMessage,
  errorType: r.errorType,
  modelName: r.modelName,
  promptTokens: r.promptTokens,
  completionTokens: r.completionTokens,
  totalTokens: r.totalTokens,
  costUsd: r.costUsd,
  environment: r.environment as 'production',
  version: r.version,
  tags: r.tags,
  metadata: (r.metadata as Record<string, unknown> | null) ?? null,
  userId: r.userId,
  sessionId: r.sessionId,
  spanType: r.spanType as 'custom',
  spanName: r.spanName,
  flagged: r.flagged,
  flagReason: r.flagReason,
  createdAt: r.createdAt.toISOString(),
});
export type TraceView = ReturnType<typeof traceView>;

export const TRACE_COLUMNS = Object.keys(
  traceView({ timestamp: new Date(), createdAt: new Date() } as Row),
);

export interface TraceFilter {
  agentId?: string;
  status?: string;
  environment?: string;
  sessionId?: string;
  startTime?: Date;
  endTime?: Date;
  search?: string;
}

/** WHERE conditions of a trace filter; an agent-scoped principal sees only its agent. */
function where(p: Pick<Actor, 'organizationId' | 'agentId'>, f: TraceFilter): SQL[] {
  const c: SQL[] = [eq(traces.organizationId, p.organizationId)];
  if (p.agentId) c.push(eq(traces.agentId, p.agentId));
  if (f.agentId) c.push(eq(traces.agentId, f.agentId));
  if (f.status) c.push(eq(traces.status, f.status));
  if (f.environment) c.push(eq(traces.environment, f.environment));
  if (f.sessionId) c.push(eq(traces.sessionId, f.sessionId));
  if (f.startTime) c.push(gte(traces.timestamp, f.startTime));
  if (f.endTime) c.push(lte(traces.timestamp, f.endTime));
  // websearch syntax: words, "phrases", OR, -exclusions; never a syntax error.
  if (f.search) c.push(sql`${traces.searchVector} @@ websearch_to_tsquery('simple', ${f.search})`);
  return c;
}

/** PostgreSQL's estimate of how many rows a condition matches (EXPLAIN: planning only, no execution). */
async function estimateRows(db: Db, w: SQL) {
  const res = rowsOf<Record<string, unknown>>(await db.execute(sql`explain (format json) select 1 from ${traces} where ${w}`));
  let plan = res[0]?.['QUERY PLAN'];
  if (typeof plan === 'string') plan = JSON.parse(plan);
  return Number((plan as Array<{ Plan: { 'Plan Rows': number } }>)[0].Plan['Plan Rows']);
}

/** The exact total a page implies on its own: a page that is not full ends the results (an empty page past the end tells nothing). */
const exactFromPage = (n: number, q: { limit: number; offset: number }) => (n < q.limit && (n > 0 || q.offset === 0) ? q.offset + n : null);

/** Up to this many full-text matches are counted exactly (and paged through the GIN index). */
export const SEARCH_EXACT_LIMIT = 1000;

/**
 * A page of traces, newest first, with the total matching. Counting every match of a broad filter
 * means visiting every matching row, which over millions of traces costs far more than the page:
 * - a page that is not full gives the exact total for free;
 * - otherwise the total is counted exactly when PostgreSQL estimates at most `exactLimit` matches,
 *   and beyond that the estimate is answered with `totalEstimated: true` (as search engines do);
 * - a full-text search first counts its matches through the GIN index, up to SEARCH_EXACT_LIMIT:
 *   a rare term is then paged from those matches (exact total), a common one by walking the
 *   time index, where the first page is found quickly (estimated total). The planner, left alone,
 *   misjudges rare multi-word searches and walks the whole table.
 */
export async function listTraces(db: Db, p: Actor, q: ListTracesQuery, exactLimit: number) {
  const w = and(...where(p, { ...q, startTime: q.startTime ? new Date(q.startTime) : undefined, endTime: q.endTime ? new Date(q.endTime) : undefined }))!;
  const pageOf = (ex: Executor) =>
    ex.select(cols).from(traces).where(w).orderBy(desc(traces.timestamp), desc(traces.id)).limit(q.limit).offset(q.offset);

  if (q.search) {
    const rare = await db.transaction(async (tx) => {
      // Bitmap scans only: the cost follows the number of matches, whatever the planner guesses.
      await tx.execute(sql`set local enable_seqscan = off`);
      await tx.execute(sql`set local enable_indexscan = off`);
      const [{ n }] = rowsOf<{ n: number }>(
        await tx.execute(sql`select count(*)::int as n from (select 1 from ${traces} where ${w} limit ${SEARCH_EXACT_LIMIT + 1}) s`),
      );
      return n <= SEARCH_EXACT_LIMIT ? { n, rows: await pageOf(tx) } : null;
    });
    if (rare) return { rows: rare.rows.map(traceView), total: rare.n, estimated: false };
    const rows = await pageOf(db);
    const known = exactFromPage(rows.length, q);
    if (known !== null) return { rows: rows.map(traceView), total: known, estimated: false };
    const estimate = await estimateRows(db, w);
    return { rows: rows.map(traceView), total: Math.max(Math.round(estimate), q.offset + rows.length, SEARCH_EXACT_LIMIT + 1), estimated: true };
  }

  const rows = await pageOf(db);
  const known = exactFromPage(rows.length, q);
  if (known !== null) return { rows: rows.map(traceView), total: known, estimated: false };
  const estimate = await estimateRows(db, w);
  if (estimate > exactLimit) return { rows: rows.map(traceView), total: Math.max(Math.round(estimate), q.offset + rows.length), estimated: true };
  const [{ total }] = await db.select({ total: count() }).from(traces).where(w);
  return { rows: rows.map(traceView), total, estimated: false };
}

/** One trace of the organization by its uuid, or 404. */
export async function getTraceRow(db: Executor, p: Pick<Actor, 'organizationId' | 'agentId'>, id: string) {
  const c = [eq(traces.organizationId, p.organizationId), eq(traces.id, id)];
  if (p.agentId) c.push(eq(traces.agentId, p.agentId));
  const [row] = await db.select(cols).from(traces).where(and(...c)).limit(1);
  if (!row) throw notFound('Trace');
  return row;
}

const RELATED_LIMIT = 50;

/** A trace with relatedTraces: those with the same parent, or the same session (at most 50, by time). */
export async function getTraceWithRelated(db: Db, p: Actor, id: string) {
  const row = await getTraceRow(db, p, id);
  const links: SQL[] = [];
  if (row.parentTraceId) links.push(eq(traces.parentTraceId, row.parentTraceId));
  if (row.sessionId) links.push(eq(traces.sessionId, row.sessionId));
  const related = links.length
    ? await db
        .select(cols)
        .from(traces)
        .where(and(eq(traces.organizationId, p.organizationId), ne(traces.id, row.id), or(...links)))
        .orderBy(asc(traces.timestamp))
        .limit(RELATED_LIMIT)
    : [];
  return { ...traceView(row), relatedTraces: related.map(traceView) };
}

/** Direct children of a trace (spans whose parentTraceId is its traceId). */
export async function childrenOf(db: Db, p: Actor, id: string) {
  const row = await getTraceRow(db, p, id);
  const rows = await db
    .select(cols)
    .from(traces)
    .where(and(eq(traces.organizationId, p.organizationId), eq(traces.parentTraceId, row.traceId)))
    .orderBy(asc(traces.timestamp))
    .limit(1000);
  return rows.map(traceView);
}

export type TreeNode = TraceView & { children: TreeNode[] };
/** Bounds of a tree: a runaway or cyclic hierarchy cannot exhaust memory. */
const TREE_MAX_DEPTH = 64;
const TREE_MAX_NODES = 10_000;

/** The span hierarchy below a trace, in one recursive SQL query (UNION dedups, so cycles end). */
export async function treeOf(db: Db, p: Actor, id: string) {
  const root = await getTraceRow(db, p, id);
  const res = await db.execute(sql`
    with recursive tree(id, trace_id, depth) as (
      select id, trace_id, 0 from traces where organization_id = ${p.organizationId} and id = ${root.id}
      union
      select t.id, t.trace_id, tree.depth + 1 from traces t
        join tree on t.parent_trace_id = tree.trace_id
       where t.organization_id = ${p.organizationId} and tree.depth < ${TREE_MAX_DEPTH}
    )
    select distinct id from tree where id <> ${root.id} limit ${TREE_MAX_NODES}`);
  const ids = rowsOf<{ id: string }>(res).map((r) => r.id);
  const rows = ids.length
    ? await db.select(cols).from(traces).where(and(eq(traces.organizationId, p.organizationId), sql`${traces.id} in ${ids}`)).orderBy(asc(traces.timestamp))
    : [];
  const nodes = new Map<string, TreeNode>();
  for (const r of rows) if (!nodes.has(r.traceId)) nodes.set(r.traceId, { ...traceView(r), children: [] });
  const top: TreeNode[] = [];
  for (const n of nodes.values()) {
    const parent = n.parentTraceId === root.traceId ? null : n.parentTraceId ? nodes.get(n.parentTraceId) : null;
    (parent ? parent.children : top).push(n);
  }
  return { root: traceView(root), children: top };
}

/**
 * Traces similar to one: score = shared agent (0.35) + model (0.25) + status (0.15) +
 * environment (0.1) + span type (0.15), among the organization's 5,000 most recent traces.
 */
export async function similarTo(db: Db, p: Actor, id: string, limit: number) {
  const ref = await getTraceRow(db, p, id);
  const score = sql<number>`(
      (case when ${traces.agentId} = ${ref.agentId} then 0.35 else 0 end)
    + (case when ${traces.modelName} is not distinct from ${ref.modelName} and ${traces.modelName} is not null then 0.25 else 0 end)
    + (case when ${traces.status} = ${ref.status} then 0.15 else 0 end)
    + (case when ${traces.environment} = ${ref.environment} then 0.1 else 0 end)
    + (case when ${traces.spanType} = ${ref.spanType} then 0.15 else 0 end))`;
  const recent = db
    .select({ ...cols, score: score.as('score') })
    .from(traces)
    .where(and(...where(p, {}), ne(traces.id, ref.id)))
    .orderBy(desc(traces.timestamp))
    .limit(5000)
    .as('recent');
  const rows = await db
    .select()
    .from(recent)
    .where(sql`${recent.score} > 0`)
    .orderBy(desc(recent.score), desc(recent.timestamp))
    .limit(limit);
  return rows.map((r) => ({ ...traceView(r as unknown as Row), similarityScore: Math.round(Number(r.score) * 100) / 100 }));
}

/** Flags or unflags a trace for human review. */
export async function flagTrace(db: Executor, p: Actor, id: string, flagged: boolean, reason: string | null) {
  const row = await getTraceRow(db, p, id);
  await db
    .update(traces)
    .set({ flagged, flagReason: flagged ? reason : null, flaggedAt: flagged ? new Date() : null, flaggedBy: flagged ? p.userId : null, updatedAt: new Date() })
    .where(and(eq(traces.organizationId, p.organizationId), eq(traces.id, id)));
  return row;
}

/** The aggregate stats object of contract.md over the last `hours`. */
export async function traceStats(db: Db, p: Actor, hours: number, now: Date) {
  const since = new Date(now.getTime() - hours * 3_600_000);
  const w = and(...where(p, { startTime: since }));
  const bucket = hours <= 72 ? 'hour' : 'day';
  const [overall, byStatus, byAgent, byModel, series] = await Promise.all([
    db
      .select({
        total: count(),
        errors: sql<number>`count(*) filter (where ${traces.status} in ('error', 'timeout'))`,
        avg: sql<number>`coalesce(avg(${traces.durationMs}), 0)`,
        p50: sql<number>`coalesce(percentile_cont(0.5) within group (order by ${traces.durationMs}), 0)`,
        p95: sql<number>`coalesce(percentile_cont(0.95) within group (order by ${traces.durationMs}), 0)`,
        p99: sql<number>`coalesce(percentile_cont(0.99) within group (order by ${traces.durationMs}), 0)`,
        cost: sql<number>`coalesce(sum(${traces.costUsd}), 0)`,
        tokens: sql<number>`coalesce(sum(${traces.totalTokens}), 0)`,
      })
      .from(traces)
      .where(w),
    db.select({ status: traces.status, n: count() }).from(traces).where(w).groupBy(traces.status),
    db
      .select({
        agentId: traces.agentId,
        agentName: sql<string>`max(${agents.name})`,
        total: count(),
        errors: sql<number>`count(*) filter (where ${traces.status} in ('error', 'timeout'))`,
        costUsd: sql<number>`coalesce(sum(${traces.costUsd}), 0)`,
      })
      .from(traces)
      .innerJoin(agents, and(eq(agents.organizationId, traces.organizationId), eq(agents.id, traces.agentId)))
      .where(w)
      .groupBy(traces.agentId)
      .orderBy(desc(count()))
      .limit(50),
    db
      .select({
        modelName: traces.modelName,
        total: count(),
        costUsd: sql<number>`coalesce(sum(${traces.costUsd}), 0)`,
        totalTokens: sql<number>`coalesce(sum(${traces.totalTokens}), 0)`,
      })
      .from(traces)
      .where(and(w, sql`${traces.modelName} is not null`))
      .groupBy(traces.modelName)
      .orderBy(desc(count()))
      .limit(50),
    db
      .select({
        bucket: sql<string>`date_trunc(${bucket}, ${traces.timestamp})`.as('bucket'),
        total: count(),
        errors: sql<number>`count(*) filter (where ${traces.status} in ('error', 'timeout'))`,
        costUsd: sql<number>`coalesce(sum(${traces.costUsd}), 0)`,
      })
      .from(traces)
      .where(w)
      .groupBy(sql`1`)
      .orderBy(sql`1`),
  ]);
  const o = overall[0];
  const num = (v: unknown) => Math.round(Number(v) * 1e6) / 1e6;
  const total = Number(o.total);
  return {
    hours,
    total,
    byStatus: Object.fromEntries(byStatus.map((s) => [s.status, Number(s.n)])),
    errorRate: total ? num(Number(o.errors) / total) : 0,
    avgDurationMs: num(o.avg),
    p50DurationMs: num(o.p50),
    p95DurationMs: num(o.p95),
    p99DurationMs: num(o.p99),
    // Cost sums are exact numerics: converted, not rounded.
    totalCostUsd: Number(o.cost),
    totalTokens: Number(o.tokens),
    byAgent: byAgent.map((a) => ({ agentId: a.agentId, agentName: a.agentName, total: Number(a.total), errors: Number(a.errors), costUsd: Number(a.costUsd) })),
    byModel: byModel.map((m) => ({ modelName: m.modelName!, total: Number(m.total), costUsd: Number(m.costUsd), totalTokens: Number(m.totalTokens) })),
    timeseries: series.map((s) => ({ bucket: new Date(s.bucket).toISOString(), total: Number(s.total), errors: Number(s.errors), costUsd: Number(s.costUsd) })),
  };
}

/** All matching traces, newest first, in keyset batches on (timestamp, id): flat memory for any size. */
export async function* traceBatches(db: Db, p: Actor, f: TraceFilter, batchSize = 1000) {
  let after: { ts: Date; id: string } | null = null;
  for (;;) {
    const c = where(p, f);
    if (after) c.push(sql`(${traces.timestamp}, ${traces.id}) < (${after.ts.toISOString()}::timestamptz, ${after.id}::uuid)`);
    const rows = await db.select(cols).from(traces).where(and(...c)).orderBy(desc(traces.timestamp), desc(traces.id)).limit(batchSize);
    if (rows.length === 0) return;
    yield rows.map(traceView);
    if (rows.length < batchSize) return;
    const last = rows[rows.length - 1];
    after = { ts: last.timestamp, id: last.id };
  }
}


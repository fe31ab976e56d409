/**
 * POST /traces/ingest: validate items one by one, resolve agents in one query, merge with existing
 * rows (upsert by organization + traceId), estimate missing costs, write all rows in one multi-row
 * upsert, accrue spend and health to the agents in the same statement (the agents module's UPDATE,
 * embedded in a CTE), and let the agents module raise budget events: one transaction, a fixed
 * number of round trips per batch whatever its size.
 */
import { sql, type SQL } from 'drizzle-orm';
import type { Db } from '../../db/client.js';
import { rowsOf } from '../../db/client.js';
import type { Actor } from '../../core/actor.js';
import type { Clock } from '../../core/clock.js';
import { isRetryableConflict } from '../../core/db-errors.js';
import { newId, USD_SCALE } from '../../db/schema/columns.js';
import { agentUpdate, findAgents, healthObservations, monthOf, settleBudgets, spendVersions, type AgentRow, type AgentSpend, type SpendVersion } from '../agents/index.js';
import { emit } from '../events/outbox.js';
import type { Subscriptions } from '../events/subscriptions.js';
import type { Pricing } from './pricing.js';
import { ingestItemSchema, type IngestItem } from './schemas.js';

/** Largest accepted item, serialized; a larger one fails alone. */
export const MAX_ITEM_BYTES = 2 * 1024 * 1024;
interface ItemError {
  index: number;
  traceId: string | null;
  error: string;
}

/** A row as written: every column of the upsert. */
interface TraceRow {
  id: string;
  trace_id: string;
  agent_id: string;
  parent_trace_id: string | null;
  timestamp: string;
  duration_ms: number | null;
  status: string;
  input: unknown;
  output: unknown;
  error_message: string | null;
  error_type: string | null;
  model_name: string | null;
  prompt_tokens: number | null;
  completion_tokens: number | null;
  total_tokens: number | null;
  cost_usd: number | null;
  cost_estimated: boolean;
  environment: string;
  version: string | null;
  tags: string[] | null;
  metadata: unknown;
  user_id: string | null;
  session_id: string | null;
  span_type: string;
  span_name: string | null;
}

const COLUMNS = `id uuid, trace_id text, agent_id uuid, parent_trace_id text, "timestamp" timestamptz, duration_ms int, status text,
  input jsonb, output jsonb, error_message text, error_type text, model_name text, prompt_tokens int, completion_tokens int,
  total_tokens int, cost_usd numeric, cost_estimated bool, environment text, version text, tags text[], metadata jsonb,
  user_id text, session_id text, span_type text, span_name text`;
const NAMES = COLUMNS.split(',').map((c) => c.trim().split(/\s+/)[0]);
// Nullable columns keep their stored value when a concurrent first insert raced this one.
const NOT_NULL = new Set(['trace_id', 'agent_id', '"timestamp"', 'status', 'environment', 'span_type', 'cost_estimated']);
// A stored row keeps its id and traceId.
const UPDATE_SET = NAMES.filter((n) => n !== 'trace_id' && n !== 'id')
  .map((n) => (NOT_NULL.has(n) ? `${n} = excluded.${n}` : `${n} = coalesce(excluded.${n}, traces.${n})`))
  .join(', ');

function describeIssues(issues: { path: PropertyKey[]; message: string }[]) {
  return issues
    .slice(0, 5)
    .map((i) => (i.path.length ? `${i.path.map(String).join('.')}: ${i.message}` : i.message))
    .join('; ');
}

export interface IngestResult {
  accepted: number;
  failed: number;
  traceIds: string[];
  errors?: ItemError[];
}

export interface IngestDeps {
  db: Db;
  /** Decides the budget month of the spend and the time of items sent without one. */
  clock: Clock;
  pricing: Pricing;
  subscriptions: Subscriptions;
  /**
   * Called once the batch has committed, before the answer: the agents' new spend versions (for the
   * spend counter) and the agents whose rows changed beyond spend and health (a budget pause), which
   * the agent cache forgets (docs/decisions.md, "Spend counter").
   */
  committed: (orgId: string, change: AccrualChange) => Promise<void>;
}

/** What a committed batch changed on its agents. */
export interface AccrualChange {
  spends: SpendVersion[];
  /** Agents whose status or budget marks changed (budget events claimed, a pause). */
  changed: string[];
}

/**
 * Ingests a batch for the principal's organization; answers the partial-success summary.
 * `bodyBytes` (the request's size, when known) spares measuring items one by one: no item of a
 * body smaller than MAX_ITEM_BYTES can exceed it.
 */
export async function ingestTraces(deps: IngestDeps, principal: Actor, items: unknown[], bodyBytes?: number): Promise<IngestResult> {
  const measure = bodyBytes === undefined || bodyBytes > MAX_ITEM_BYTES;
  const orgId = principal.organizationId;
  const errors: ItemError[] = [];
  const valid: { index: number; item: IngestItem }[] = [];

  items.forEach((raw, index) => {
    const traceId = raw && typeof raw === 'object' && typeof (raw as { traceId?: unknown }).traceId === 'string' ? (raw as { traceId: string }).traceId : null;
    if (!raw || typeof raw !== 'object' || Array.isArray(raw)) {
      errors.push({ index, traceId, error: 'item must be an object' });
      return;
    }
    const parsed = ingestItemSchema.safeParse(raw);
    if (!parsed.success) {
      errors.push({ index, traceId, error: describeIssues(parsed.error.issues) });
      return;
    }
    if (measure && JSON.stringify(raw).length > MAX_ITEM_BYTES) {
      errors.push({ index, traceId, error: `item is larger than ${MAX_ITEM_BYTES} bytes` });
      return;
    }
    valid.push({ index, item: parsed.data });
  });

  // Resolve agents: by external id or uuid, in one query; an agent-scoped key is its own agent.
  const externalIds = new Set<string>();
  const uuids = new Set<string>();
  if (principal.agentId) uuids.add(principal.agentId);
  for (const { item } of valid) {
    if (item.agentUuid) uuids.add(item.agentUuid);
    else if (item.agentId) externalIds.add(item.agentId);
  }
  const found = await findAgents(deps.db, orgId, [...uuids], [...externalIds]);
  const byUuid = new Map(found.map((a) => [a.id, a]));
  const byExternal = new Map(found.map((a) => [a.agentId, a]));

  const ready: { index: number; item: IngestItem; agent: AgentRow }[] = [];
  for (const v of valid) {
    const { item } = v;
    let agent: AgentRow | undefined;
    if (item.agentUuid) agent = byUuid.get(item.agentUuid);
    else if (item.agentId) agent = byExternal.get(item.agentId);
    else if (principal.agentId) agent = byUuid.get(principal.agentId);
    else {
      errors.push({ index: v.index, traceId: item.traceId, error: 'agentId or agentUuid is required' });
      continue;
    }
    if (!agent) {
      errors.push({ index: v.index, traceId: item.traceId, error: 'unknown agent' });
      continue;
    }
    if (principal.agentId && agent.id !== principal.agentId) {
      errors.push({ index: v.index, traceId: item.traceId, error: 'an agent-scoped key ingests only for its own agent' });
      continue;
    }
    ready.push({ ...v, agent });
  }

  if (ready.length > 0) {
    const change = await writeBatch(deps, principal, ready);
    await deps.committed(orgId, change);
  }
  errors.sort((a, b) => a.index - b.index);
  return {
    accepted: ready.length,
    failed: errors.length,
    traceIds: ready.map((r) => r.item.traceId),
    ...(errors.length ? { errors } : {}),
  };
}

/** Merges an item onto a stored (or earlier) row: provided fields win, absent ones are kept. */
function merge(prev: TraceRow | undefined, item: IngestItem, agent: AgentRow, pricing: Pricing, now: Date): TraceRow {
  const pick = <T>(v: T | undefined, old: T | null | undefined): T | null => (v !== undefined ? v : (old ?? null));
  const row: TraceRow = {
    id: prev?.id ?? newId(),
    trace_id: item.traceId,
    agent_id: agent.id,
    parent_trace_id: pick(item.parentTraceId, prev?.parent_trace_id),
    timestamp: item.timestamp ? new Date(item.timestamp).toISOString() : (prev?.timestamp ?? now.toISOString()),
    duration_ms: pick(item.durationMs, prev?.duration_ms),
    status: item.status ?? prev?.status ?? 'success',
    input: pick(item.input, prev?.input),
    output: pick(item.output, prev?.output),
    error_message: pick(item.errorMessage, prev?.error_message),
    error_type: pick(item.errorType, prev?.error_type),
    model_name: pick(item.modelName, prev?.model_name),
    prompt_tokens: pick(item.promptTokens, prev?.prompt_tokens),
    completion_tokens: pick(item.completionTokens, prev?.completion_tokens),
    total_tokens: pick(item.totalTokens, prev?.total_tokens),
    cost_usd: null,
    cost_estimated: false,
    environment: item.environment ?? prev?.environment ?? agent.environment,
    version: pick(item.version, prev?.version),
    tags: pick(item.tags, prev?.tags),
    metadata: pick(item.metadata, prev?.metadata),
    user_id: pick(item.userId, prev?.user_id),
    session_id: pick(item.sessionId, prev?.session_id),
    span_type: item.spanType ?? prev?.span_type ?? 'custom',
    span_name: pick(item.spanName, prev?.span_name),
  };
  // totalTokens is derived (prompt + completion) unless sent: recomputed whenever a part changes,
  // so a completion adding completionTokens does not leave the start's total behind.
  const partsChanged = item.promptTokens !== undefined || item.completionTokens !== undefined;
  if (item.totalTokens === undefined && (partsChanged || row.total_tokens === null) && (row.prompt_tokens !== null || row.completion_tokens !== null)) {
    row.total_tokens = (row.prompt_tokens ?? 0) + (row.completion_tokens ?? 0);
  }
  if (item.costUsd !== undefined && item.costUsd !== null) row.cost_usd = item.costUsd;
  else if (item.costUsd === undefined && prev && prev.cost_usd !== null && !prev.cost_estimated) row.cost_usd = prev.cost_usd;
  if (row.cost_usd === null) {
    const est = pricing.estimate(row.model_name, row.prompt_tokens, row.completion_tokens, row.total_tokens);
    if (est !== null) {
      row.cost_usd = est;
      row.cost_estimated = true;
    }
  } else {
    row.cost_estimated = false;
  }
  return row;
}

const ERROR_STATUSES = new Set(['error', 'timeout']);

type Ready = { item: IngestItem; agent: AgentRow };

/** Merges the items of a batch onto their stored rows (or none), in order: the later item wins field by field. */
function mergeBatch(ready: Ready[], stored: Map<string, TraceRow>, pricing: Pricing, now: Date) {
  const merged = new Map<string, TraceRow>();
  for (const { item, agent } of ready) merged.set(item.traceId, merge(merged.get(item.traceId) ?? stored.get(item.traceId), item, agent, pricing, now));
  return [...merged.values()].sort((a, b) => (a.trace_id < b.trace_id ? -1 : 1));
}

const SELECT_ROWS = sql.raw(NAMES.map((n) => `r.${n}`).join(', '));
const INSERT_COLS = sql.raw(NAMES.join(', '));
const RECORDSET = (rows: TraceRow[]) => sql`jsonb_to_recordset(${JSON.stringify(rows)}::jsonb) as r(${sql.raw(COLUMNS)})`;

// Concurrent batches touching the same agents may deadlock or conflict; the batch is retried whole.
async function writeBatch(deps: IngestDeps, principal: Actor, ready: Ready[]) {
  for (let attempt = 1; ; attempt++) {
    try {
      return await writeBatchOnce(deps, principal, ready);
    } catch (err) {
      if (attempt >= 3 || !isRetryableConflict(err)) throw err;
    }
  }
}

/**
 * Most traces are new: one statement inserts them (ON CONFLICT DO NOTHING) and, in the same CTE,
 * adds their cost and health observations to the agents. Only traceIds that already existed take
 * the slower path: lock them (in traceId order), merge, upsert, and add the cost difference.
 */
async function writeBatchOnce(deps: IngestDeps, principal: Actor, ready: Ready[]): Promise<AccrualChange> {
  const orgId = principal.organizationId;
  const now = deps.clock.now();
  const month = monthOf(now);
  const wantCompleted = await deps.subscriptions.wants(orgId, 'trace_completed');
  const wantError = await deps.subscriptions.wants(orgId, 'trace_error');

  // Health observations: every item counts (a start and its completion are two observations).
  const observations = healthObservations(ready.map(({ item, agent }) => ({ agentId: agent.id, error: !!item.status && ERROR_STATUSES.has(item.status) })));

  const fresh = mergeBatch(ready, new Map(), deps.pricing, now);
  return deps.db.transaction(async (tx) => {
    const [out] = rowsOf<{ inserted: string[]; agents: AgentSpend[] }>(
      await tx.execute(sql`
        with ins as (
          insert into traces (organization_id, ${INSERT_COLS}, updated_at)
          select ${orgId}::uuid, ${SELECT_ROWS}, now() from ${RECORDSET(fresh)}
          on conflict (organization_id, trace_id) do nothing
          returning trace_id, agent_id, cost_usd
        ),
        d as (
          select v.id, coalesce(sum(ins.cost_usd), 0)::numeric as delta, v.decay, v.err_rate, v.n
          from (values ${sql.join(observations, sql`, `)}) as v(id, decay, err_rate, n)
          left join ins on ins.agent_id = v.id
          group by v.id, v.decay, v.err_rate, v.n
        ),
        upd as (${agentUpdate(orgId, month, sql`d`)})
        select coalesce((select json_agg(trace_id) from ins), '[]'::json) as inserted,
               coalesce((select json_agg(upd) from upd), '[]'::json) as agents`),
    );
    const inserted = new Set(typeof out.inserted === 'string' ? (JSON.parse(out.inserted) as string[]) : out.inserted);
    let spends: AgentSpend[] = typeof out.agents === 'string' ? JSON.parse(out.agents) : out.agents;
    let written = fresh.filter((r) => inserted.has(r.trace_id));

    const existingIds = fresh.filter((r) => !inserted.has(r.trace_id)).map((r) => r.trace_id);
    if (existingIds.length > 0) {
      // Lock the stored rows (traceId order: no deadlock between batches), merge, upsert.
      // numeric arrives as a string (pg) or a number: a number here, exact for every value written
      // (each came from a JSON number, rounded to the column's scale), back to exact text below.
      const stored = new Map(
        rowsOf<TraceRow>(
          await tx.execute(sql`select ${INSERT_COLS} from traces
            where organization_id = ${orgId} and trace_id in ${existingIds} order by trace_id for update`),
        ).map((r) => [r.trace_id, { ...r, timestamp: new Date(r.timestamp).toISOString(), cost_usd: r.cost_usd === null ? null : Number(r.cost_usd) }]),
      );
      const again = new Set(existingIds);
      const updates = mergeBatch(ready.filter((r) => again.has(r.item.traceId)), stored, deps.pricing, now);
      await tx.execute(sql`insert into traces (organization_id, ${INSERT_COLS}, updated_at)
        select ${orgId}::uuid, ${SELECT_ROWS}, now() from ${RECORDSET(updates)}
        on conflict (organization_id, trace_id) do update set ${sql.raw(UPDATE_SET)}, updated_at = now()`);
      // Spend moves by the difference between the stored cost and the final cost (a trace re-sent
      // for another agent debits the old one). Health was observed above already (n = 0 here).
      // The terms are summed in SQL as numeric, so the difference is exact.
      const terms = new Map<string, SQL[]>();
      const add = (agentId: string, term: SQL) => terms.set(agentId, [...(terms.get(agentId) ?? []), term]);
      for (const row of updates) {
        // Rounded as the column rounds it (an estimate has more decimals than it is stored with).
        add(row.agent_id, sql`round(${String(row.cost_usd ?? 0)}::numeric, ${USD_SCALE})`);
        const old = stored.get(row.trace_id);
        if (old?.cost_usd) add(old.agent_id, sql`-${String(old.cost_usd)}::numeric`);
      }
      const values = [...terms.entries()]
        .sort(([a], [b]) => (a < b ? -1 : 1))
        .map(([id, t]) => sql`(${id}::uuid, (${sql.join(t, sql` + `)}), 1::float8, 0::float8, 0::int)`);
      const more = rowsOf<AgentSpend>(await tx.execute(agentUpdate(orgId, month, sql`(values ${sql.join(values, sql`, `)}) as d(id, delta, decay, err_rate, n)`)));
      spends = [...spends.filter((s) => !terms.has(s.id)), ...more];
      written = [...written, ...updates];
    }

    const changed = await settleBudgets(tx, principal, spends, month, deps.clock);

    if (wantCompleted || wantError) {
      for (const row of written) {
        const type = ERROR_STATUSES.has(row.status) ? 'trace_error' : 'trace_completed';
        if ((type === 'trace_error' && wantError) || (type === 'trace_completed' && wantCompleted)) {
          await emit(tx, orgId, type, row.agent_id, { traceId: row.trace_id, status: row.status, errorMessage: row.error_message, costUsd: row.cost_usd });
        }
      }
    }
    return { spends: spendVersions(spends), changed };
  });
}

/**
 * The decision log's buffer (docs/decisions.md, "Decision log and policy stats"). `record` is the
 * enforce path's call: no I/O, never throws; it adds the decision to three bounded stores (rows of
 * deny and require_approval decisions, counter increments aggregated per (organization, policy,
 * agent, hour), and the decisions' events). A flush writes what they hold in ONE transaction. A failed flush keeps them for the next one, within the bounds; past a bound the
 * oldest rows and events are dropped, counted, and reported by the flush task: the log fails
 * open, since every decision it holds was already answered.
 */
import type { Db } from '../../db/client.js';
import { isDataException, sqlStateOf } from '../../core/db-errors.js';
import type { TaskLogger } from '../../core/module.js';
import { emit, EVENT_TYPES, type EventType } from '../events/outbox.js';
import { noSubscriptions, type Subscriptions } from '../events/subscriptions.js';
import type { PolicyViolation } from '../policies/index.js';
import { addCounts, insertDecisions, type CounterRow, type DecisionRow } from './store.js';

/** What the enforce route records per decision (the interface agreed with it). */
export interface DecisionRecordInput {
  organizationId: string;
  /** uuid, already in the enforce response. */
  decisionId: string;
  /** The agent's uuid. */
  agentId: string;
  environment: string;
  action: { type: string; name: string; resource: string | null };
  decision: 'allow' | 'deny' | 'require_approval';
  violations: PolicyViolation[];
  warnings: PolicyViolation[];
  evaluatedPolicyIds: readonly string[];
  evaluationMs: number;
  accessGrantId: string | null;
  sessionId: string | null;
  traceId: string | null;
  userId: string | null;
  /** Events the decision raised, written to the outbox at flush (when a webhook wants their type). */
  events: readonly { type: EventType; policyId: string | null; data: Record<string, unknown> }[];
  at: Date;
}

export interface DecisionLogOptions {
  db: Db;
  /** Which event types some webhook wants (default: nobody, until webhooks exist). */
  subscriptions?: Subscriptions;
  /**
   * Rows and events held (across failed flushes too): reaching it, record() starts a flush, and
   * the oldest held rows and events beyond it are dropped.
   */
  maxBuffered?: number;
  /** Distinct counter keys held across failed flushes; past it new keys are dropped. */
  maxCounterKeys?: number;
}

/** Cumulative figures of this process's log (for the flush task's warnings and for tests). */
export interface DecisionLogCounts {
  recorded: number;
  rowsWritten: number;
  droppedRows: number;
  droppedEvents: number;
  droppedCounts: number;
  /** Rows of batches the database refused for good (a data error): never retried. */
  discardedRows: number;
  /** Records skipped as malformed (a caller's bug: an id that is no uuid, a time that is no date). */
  skippedInvalid: number;
  failedFlushes: number;
}

/** The counters of one (organization, agent, hour), by policy id. */
interface CounterGroup {
  hour: string;
  byPolicy: Map<string, CounterRow>;
  /** The last lists of evaluated policies counted here (newest first, at most LISTS_PER_GROUP), each with its counters in the same order (see `count`). */
  lists?: EvaluatedCounters[];
}

/**
 * Lists of evaluated policies a group keeps: an agent whose decisions alternate between a few
 * lists (environment- or agent-scoped policies, requests naming other environments) reuses them.
 */
const LISTS_PER_GROUP = 4;

/** A list of evaluated policy ids, the group's counter of each (undefined: dropped at maxCounterKeys) and each id's position. */
interface EvaluatedCounters {
  ids: readonly string[];
  rows: Array<CounterRow | undefined>;
  index: Map<string, number>;
}

interface HeldEvent {
  organizationId: string;
  agentId: string;
  type: EventType;
  data: Record<string, unknown>;
}

export const DEFAULT_MAX_BUFFERED = 10_000;
const HOUR_MS = 3_600_000;
const KNOWN_EVENTS: ReadonlySet<string> = new Set(EVENT_TYPES);

// A policy's outcome in one decision; the stronger wins when it appears twice.
const ALLOW = 0;
const WARN = 1;
const APPROVAL = 2;
const DENY = 3;

/** The buffered decision log of one process. */
export class DecisionLog {
  private rows: DecisionRow[] = [];
  private counters = new Map<string, CounterGroup>();
  private counterKeys = 0;
  private hourStart = Number.NaN;
  private hourIso = '';
  // The group of the last decision (its organization, agent and hour): the next one of the same
  // agent finds it without building and hashing the group's key. Forgotten when a flush takes the groups.
  private lastGroup: { org: string; agent: string; hourStart: number; group: CounterGroup } | undefined;
  private events: HeldEvent[] = [];
  private tail: Promise<void> = Promise.resolve();
  private flushing = false;
  private readonly db: Db;
  private readonly subscriptions: Subscriptions;
  private readonly maxBuffered: number;
  private readonly maxCounterKeys: number;
  private reported = { droppedRows: 0, droppedEvents: 0, droppedCounts: 0, skippedInvalid: 0 };
  readonly counts: DecisionLogCounts = { recorded: 0, rowsWritten: 0, droppedRows: 0, droppedEvents: 0, droppedCounts: 0, discardedRows: 0, skippedInvalid: 0, failedFlushes: 0 };

  constructor(opts: DecisionLogOptions) {
    this.db = opts.db;
    this.subscriptions = opts.subscriptions ?? noSubscriptions;
    this.maxBuffered = Math.max(1, opts.maxBuffered ?? DEFAULT_MAX_BUFFERED);
    this.maxCounterKeys = Math.max(1, opts.maxCounterKeys ?? this.maxBuffered * 10);
  }

  /**
   * Takes one decision: synchronous, no I/O, never throws. Its counts are added at once (the
   * decision's objects are hot in the cache now, and nothing of an allow decision is kept for the
   * flush: no drain of a second's decisions blocks the event loop at flush, and less survives
   * into the old generation); a deny or require_approval becomes a row, its events are held.
   * When held rows, events or counter keys first reach their bound a flush starts; beyond it the
   * oldest rows and events are dropped. Only the crossing starts one: while the database is down
   * the held batch sits at the bound, and a flush per decision would retry it on every request
   * (the flush task retries every interval anyway).
   */
  record(input: DecisionRecordInput): void {
    const below = this.rows.length < this.maxBuffered && this.events.length < this.maxBuffered && this.counterKeys < this.maxCounterKeys;
    try {
      this.counts.recorded++;
      this.take(input);
    } catch {
      // A malformed record (a caller's bug) is skipped; recording never fails the enforce request.
      this.counts.skippedInvalid++;
      return;
    }
    if (this.rows.length > this.maxBuffered || this.events.length > this.maxBuffered) this.trim();
    const reached = this.rows.length >= this.maxBuffered || this.events.length >= this.maxBuffered || this.counterKeys >= this.maxCounterKeys;
    // Deliberately not awaited: the caller's decision is answered regardless (fail open).
    if (below && reached && !this.flushing) void this.flush().catch(() => undefined);
  }

  /** Rows, counter keys and events held right now (not yet written). */
  held() {
    return { rows: this.rows.length, counterKeys: this.counterKeys, events: this.events.length };
  }

  /**
   * Writes everything recorded before the call, in one transaction; flushes never overlap. Throws
   * when the write failed: the batch is then kept for the next flush (bounded), unless the database
   * refused its data for good (then it is discarded and counted).
   */
  flush(): Promise<void> {
    const run = this.tail.then(() => this.flushOnce());
    this.tail = run.catch(() => undefined);
    return run;
  }

  /** The flush task: a flush whose failure and whose drops since the last run are logged, never thrown. */
  async flushAndReport(log: TaskLogger): Promise<void> {
    try {
      await this.flush();
    } catch (err) {
      const held = this.held();
      if (isPermanent(err)) log.error({ err, discarded: this.counts.discardedRows }, 'policy decisions: the database refused a batch; it was discarded');
      else log.warn({ err, held }, 'policy decisions: flush failed; the batch is kept for the next flush');
    }
    const c = this.counts;
    const since = {
      droppedRows: c.droppedRows - this.reported.droppedRows,
      droppedEvents: c.droppedEvents - this.reported.droppedEvents,
      droppedCounts: c.droppedCounts - this.reported.droppedCounts,
    };
    const invalid = c.skippedInvalid - this.reported.skippedInvalid;
    if (invalid) log.error({ skipped: invalid }, 'policy decisions: malformed records skipped (a bug of the caller)');
    if (since.droppedRows || since.droppedEvents || since.droppedCounts) {
      // Fail open, on purpose: the decisions were answered; only their record is lost.
      log.warn({ ...since, maxBuffered: this.maxBuffered }, 'policy decisions: buffer full while the database could not be written; dropped the oldest');
    }
    this.reported = { droppedRows: c.droppedRows, droppedEvents: c.droppedEvents, droppedCounts: c.droppedCounts, skippedInvalid: c.skippedInvalid };
  }

  private async flushOnce() {
    this.flushing = true;
    try {
      if (this.rows.length === 0 && this.counterKeys === 0 && this.events.length === 0) return;
      const rows = this.rows;
      const events = this.events;
      // Sorted by key: concurrent flushes of several instances lock counter rows in one order.
      const counters = [...this.counters.values()].flatMap((g) => [...g.byPolicy.values()]).sort(byCounterKey);
      this.rows = [];
      this.counters = new Map();
      this.lastGroup = undefined;
      this.counterKeys = 0;
      this.events = [];
      try {
        const wanted = await this.wantedEvents(events);
        await this.db.transaction(async (tx) => {
          await insertDecisions(tx, rows);
          await addCounts(tx, counters);
          for (const e of wanted) await emit(tx, e.organizationId, e.type, e.agentId, e.data);
        });
        this.counts.rowsWritten += rows.length;
      } catch (err) {
        this.counts.failedFlushes++;
        if (isPermanent(err)) this.counts.discardedRows += rows.length;
        else this.restore(rows, counters, events);
        throw err;
      }
    } finally {
      this.flushing = false;
    }
  }

  /** The held events some webhook wants, asking once per (organization, type) in the batch. */
  private async wantedEvents(events: readonly HeldEvent[]) {
    if (events.length === 0) return [];
    const answers = new Map<string, Promise<boolean>>();
    const keep = await Promise.all(
      events.map((e) => {
        const k = `${e.organizationId}\u0001${e.type}`;
        let a = answers.get(k);
        if (!a) answers.set(k, (a = this.subscriptions.wants(e.organizationId, e.type)));
        return a;
      }),
    );
    return events.filter((_, i) => keep[i]);
  }

  /**
   * wellFormed, without a new regex test of the ids of the last decision's group: an agent's
   * decisions come one after another, and a group is made only for ids found well formed.
   */
  private wellFormed(d: DecisionRecordInput): boolean {
    const last = this.lastGroup;
    return wellFormed(d, last !== undefined && d.organizationId === last.org && d.agentId === last.agent);
  }

  /** Adds one decision to the held counters, rows and events. */
  private take(d: DecisionRecordInput) {
    // What the database would refuse is left out here, so one bad record cannot fail a whole batch.
    if (!this.wellFormed(d)) {
      this.counts.skippedInvalid++;
      return;
    }
    this.count(d);
    if (d.decision !== 'allow') this.rows.push(toRow(d));
    for (const e of d.events) {
      if (KNOWN_EVENTS.has(e.type)) this.events.push({ organizationId: d.organizationId, agentId: d.agentId, type: e.type, data: e.data });
    }
  }

  /**
   * Adds one decision's outcome per policy to the counters. The kill switch (no policy id) counts
   * under none. Counters are grouped by (organization, agent, hour), then by policy id: one string
   * key per decision, and the policy ids (the cached policies' own strings) hash once per process.
   */
  private count(d: DecisionRecordInput) {
    const group = this.groupOf(d);
    // An agent's decisions evaluate the same policies request after request: their counters are
    // looked up once per list (evaluatedCounters), and each decision adds an allow to every one of
    // them, then moves the few that matched to their outcome (one lookup per match, not per policy).
    const ev = this.evaluatedCounters(group, d);
    const { rows } = ev;
    for (let i = 0; i < rows.length; i++) {
      const c = rows[i];
      if (c) c.allow_count++;
      else this.counts.droppedCounts++;
    }
    // Most decisions match nothing: no map of outcomes is built for them.
    if (d.violations.length + d.warnings.length === 0) return;
    const matched = new Map<string, number>();
    for (const w of d.warnings) raise(matched, w.policyId, WARN);
    for (const v of d.violations) raise(matched, v.policyId, v.enforcementMode === 'require_approval' ? APPROVAL : DENY);
    for (const [id, o] of matched) {
      const i = ev.index.get(id);
      // A policy that matched without being listed as evaluated still counts.
      if (i === undefined) this.add(group, d, id, o);
      else {
        const c = rows[i];
        if (!c) continue; // dropped above, and counted there
        c.allow_count--;
        bump(c, o);
      }
    }
  }

  /**
   * The group's counters of the decision's evaluated policies, in their order: a kept list's when
   * the decision lists the same ids (compared by identity, cheap: they are the cached policies'
   * own strings), else looked up (created within maxCounterKeys) and kept as the newest.
   */
  private evaluatedCounters(g: CounterGroup, d: DecisionRecordInput): EvaluatedCounters {
    const ids = d.evaluatedPolicyIds;
    const lists = (g.lists ??= []);
    for (let i = 0; i < lists.length; i++) {
      const known = lists[i];
      if (!sameIds(known.ids, ids)) continue;
      // The newest first: the next decision most likely lists the same policies again.
      if (i > 0) lists.unshift(...lists.splice(i, 1));
      return known;
    }
    const index = new Map<string, number>();
    const rows: Array<CounterRow | undefined> = [];
    for (const id of ids) {
      // A policy listed twice (the engine lists each once) is one evaluation: counted once.
      if (index.has(id)) continue;
      index.set(id, rows.length);
      rows.push(this.counterOf(g, d, id));
    }
    const ev = { ids: ids.slice(), rows, index };
    lists.unshift(ev);
    if (lists.length > LISTS_PER_GROUP) lists.pop();
    return ev;
  }

  /** The counters of the decision's (organization, agent, hour). */
  private groupOf(d: DecisionRecordInput) {
    const ms = d.at.getTime();
    if (!(ms >= this.hourStart && ms < this.hourStart + HOUR_MS)) {
      this.hourStart = Math.floor(ms / HOUR_MS) * HOUR_MS;
      this.hourIso = new Date(this.hourStart).toISOString();
    }
    const last = this.lastGroup;
    if (last && last.hourStart === this.hourStart && last.org === d.organizationId && last.agent === d.agentId) return last.group;
    const key = `${d.organizationId}\u0001${d.agentId}\u0001${this.hourIso}`;
    let g = this.counters.get(key);
    if (!g) this.counters.set(key, (g = { hour: this.hourIso, byPolicy: new Map() }));
    this.lastGroup = { org: d.organizationId, agent: d.agentId, hourStart: this.hourStart, group: g };
    return g;
  }

  /** The group's counter of a policy, created when missing within maxCounterKeys; undefined beyond. */
  private counterOf(g: CounterGroup, d: DecisionRecordInput, policyId: string): CounterRow | undefined {
    let c = g.byPolicy.get(policyId);
    if (!c) {
      if (this.counterKeys >= this.maxCounterKeys) return undefined;
      c = { organization_id: d.organizationId, policy_id: policyId, agent_id: d.agentId, hour: g.hour, allow_count: 0, deny_count: 0, require_approval_count: 0, warn_count: 0 };
      g.byPolicy.set(policyId, c);
      this.counterKeys++;
    }
    return c;
  }

  /** Counts one outcome of one policy in a group (a new counter only within maxCounterKeys). */
  private add(g: CounterGroup, d: DecisionRecordInput, policyId: string, o: number) {
    const c = this.counterOf(g, d, policyId);
    if (c) bump(c, o);
    else this.counts.droppedCounts++;
  }

  /** Puts a failed batch back in front of what was recorded meanwhile, within the bounds. */
  private restore(rows: DecisionRow[], counters: readonly CounterRow[], events: HeldEvent[]) {
    this.rows = rows.concat(this.rows);
    this.events = events.concat(this.events);
    for (const c of counters) {
      const key = `${c.organization_id}\u0001${c.agent_id}\u0001${c.hour}`;
      let g = this.counters.get(key);
      if (!g) this.counters.set(key, (g = { hour: c.hour, byPolicy: new Map() }));
      // Counters appear in the group: its lists may hold a counter as dropped that now exists.
      g.lists = undefined;
      const held = g.byPolicy.get(c.policy_id);
      if (held) {
        held.allow_count += c.allow_count;
        held.deny_count += c.deny_count;
        held.require_approval_count += c.require_approval_count;
        held.warn_count += c.warn_count;
      } else if (this.counterKeys < this.maxCounterKeys) {
        g.byPolicy.set(c.policy_id, c);
        this.counterKeys++;
      } else this.counts.droppedCounts += c.allow_count + c.deny_count + c.require_approval_count + c.warn_count;
    }
    this.trim();
  }

  /** Drops the oldest rows and events beyond the bound (counted). */
  private trim() {
    if (this.rows.length > this.maxBuffered) {
      const n = this.rows.length - this.maxBuffered;
      this.rows.splice(0, n);
      this.counts.droppedRows += n;
    }
    if (this.events.length > this.maxBuffered) {
      const n = this.events.length - this.maxBuffered;
      this.events.splice(0, n);
      this.counts.droppedEvents += n;
    }
  }
}

/** Keeps the stronger outcome of a policy in one decision. */
function raise(matched: Map<string, number>, id: string | null, o: number) {
  if (id === null) return;
  const m = matched.get(id);
  if (m === undefined || m < o) matched.set(id, o);
}

/** Adds one outcome to a counter. */
function bump(c: CounterRow, o: number) {
  if (o === DENY) c.deny_count++;
  else if (o === APPROVAL) c.require_approval_count++;
  else if (o === WARN) c.warn_count++;
  else c.allow_count++;
}

/** Whether two lists hold the same ids in the same order. */
function sameIds(a: readonly string[], b: readonly string[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** The order of the counters' primary key (organization, policy, agent, hour). */
function byCounterKey(a: CounterRow, b: CounterRow): number {
  return cmp(a.organization_id, b.organization_id) || cmp(a.policy_id, b.policy_id) || cmp(a.agent_id, b.agent_id) || cmp(a.hour, b.hour);
}
const cmp = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * True when a record's ids, time and figures are what the tables take (policy ids come from stored
 * policies); `knownIds`: its organization and agent ids were found well formed already.
 */
function wellFormed(d: DecisionRecordInput, knownIds = false): boolean {
  return (
    (knownIds || (typeof d.organizationId === 'string' && typeof d.agentId === 'string' && UUID.test(d.organizationId) && UUID.test(d.agentId))) &&
    UUID.test(d.decisionId) &&
    (d.accessGrantId === null || UUID.test(d.accessGrantId)) &&
    d.at instanceof Date && Number.isFinite(d.at.getTime()) && Number.isFinite(d.evaluationMs) &&
    Array.isArray(d.violations) && Array.isArray(d.warnings) && Array.isArray(d.evaluatedPolicyIds) && Array.isArray(d.events)
  );
}

/**
 * True when retrying cannot help: the database refused the batch's data (class 22, e.g. a value
 * out of range) or a constraint (class 23). Anything else (a lost connection, a timeout) is kept.
 */
function isPermanent(err: unknown): boolean {
  return isDataException(err) || (sqlStateOf(err)?.startsWith('23') ?? false);
}

/**
 * The fields of a PolicyViolation, and only those: whatever else a caller's object carries is not
 * stored (the evidence is offsets and a score, never the matched text).
 */
function violationView(v: PolicyViolation): PolicyViolation {
  const out: PolicyViolation = { policyId: v.policyId, policyName: v.policyName, policyType: v.policyType, code: v.code, message: v.message, enforcementMode: v.enforcementMode };
  if (v.evidence) out.evidence = { path: v.evidence.path, start: v.evidence.start, end: v.evidence.end, score: v.evidence.score };
  return out;
}

/** The stored row of a deny or require_approval decision. */
function toRow(d: DecisionRecordInput): DecisionRow {
  const policyIds = [...new Set(d.violations.map((v) => v.policyId).filter((id): id is string => id !== null))];
  return {
    organization_id: d.organizationId,
    id: d.decisionId,
    agent_id: d.agentId,
    action_type: d.action.type,
    action_name: d.action.name,
    action_resource: d.action.resource,
    environment: d.environment,
    decision: d.decision,
    violations: d.violations.map(violationView),
    warnings: d.warnings.map(violationView),
    policy_ids: policyIds,
    evaluated_policies: d.evaluatedPolicyIds.length,
    evaluation_ms: d.evaluationMs,
    access_grant_id: d.accessGrantId,
    session_id: d.sessionId,
    trace_id: d.traceId,
    user_id: d.userId,
    created_at: d.at.toISOString(),
  };
}

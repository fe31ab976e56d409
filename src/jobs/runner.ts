/**
 * The job runner: one per process. It owns the process's only timer, which drives three things:
 * claiming due jobs (FOR UPDATE SKIP LOCKED, in batches, up to a concurrency limit), firing schedules
 * (once per period across instances), and process-local tasks (work on this process's memory, such
 * as buffered API key usage). See docs/decisions.md, "Background jobs".
 */
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { performance } from 'node:perf_hooks';
import type { Db } from '../db/client.js';
import { systemClock, type Clock } from '../core/clock.js';
import { backoffDelayMs } from './backoff.js';
import { jobWakeups } from './enqueue.js';
import { listenForJobs } from './listen.js';
import { JobCounters, jobsSnapshot, type JobsSnapshot } from './metrics.js';
import { fireDueSchedules, upsertSchedule } from './schedules.js';
import { buryExpiredLeases, claimDue, completeJob, failJob, releaseClaims, type ClaimedRow } from './store.js';
import type { Job, JobHandler, JobLogger, JobTypeOptions } from './types.js';

export interface JobRunnerOptions {
  db: Db;
  log: JobLogger;
  /** The clock used for due times, leases and schedules (default: the system clock). */
  clock?: Clock;
  /** For backoff jitter (default Math.random). */
  random?: () => number;
  /** How often to look for due jobs when nothing woke the runner (default 1000 ms). */
  pollIntervalMs?: number;
  /** Handlers running at once (default 10). */
  concurrency?: number;
  /** False in the API role: only process-local tasks run; no job or schedule is claimed. */
  runJobs?: boolean;
  /** PostgreSQL URL: LISTEN there so an enqueue on another instance wakes this one at once. */
  listenUrl?: string;
  /** Names this runner in `locked_by` and `last_run_by` (default host:pid:random). */
  id?: string;
}

interface TypeDef {
  handler: JobHandler;
  leaseMs: number;
  baseDelayMs: number;
  maxDelayMs: number;
}

interface LocalTask {
  name: string;
  everyMs: number;
  run: () => Promise<void>;
  nextAt: number;
  running: boolean;
}

const DEFAULT_LEASE_MS = 5 * 60_000;
const DEFAULT_BASE_DELAY_MS = 1_000;
const DEFAULT_MAX_DELAY_MS = 10 * 60_000;
const MAX_ERROR_CHARS = 2_000;

/** Registers job types, schedules and process-local tasks, and runs them until stopped. */
export class JobRunner {
  readonly id: string;
  private readonly db: Db;
  private readonly log: JobLogger;
  private readonly clock: Clock;
  private readonly random: () => number;
  private readonly pollIntervalMs: number;
  private readonly concurrency: number;
  private readonly runJobs: boolean;
  private readonly listenUrl: string | undefined;
  private readonly types = new Map<string, TypeDef>();
  /** Schedule name → the job type it enqueues and its period. */
  private readonly schedules = new Map<string, { type: string; everyMs: number }>();
  private readonly locals: LocalTask[] = [];
  private readonly counters = new JobCounters();
  private readonly inFlight = new Set<Promise<void>>();
  private timer: NodeJS.Timeout | undefined;
  private started = false;
  private prepared: Promise<void> | undefined;
  private stopping = false;
  private passing: Promise<unknown> | undefined;
  private again = false;
  private nextHousekeepingAt = 0;
  private closeListen: (() => Promise<void>) | undefined;
  private readonly onWake = () => this.wake();

  constructor(opts: JobRunnerOptions) {
    this.db = opts.db;
    this.log = opts.log;
    this.clock = opts.clock ?? systemClock;
    this.random = opts.random ?? Math.random;
    this.pollIntervalMs = opts.pollIntervalMs ?? 1000;
    this.concurrency = opts.concurrency ?? 10;
    this.runJobs = opts.runJobs ?? true;
    this.listenUrl = opts.listenUrl;
    this.id = opts.id ?? `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
  }

  /** Declares the handler of a job type; every run is timed and counted, and failures are logged. */
  register<P>(type: string, handler: JobHandler<P>, options: JobTypeOptions = {}) {
    if (this.types.has(type)) throw new Error(`job type "${type}" is already registered`);
    this.types.set(type, {
      handler: handler as JobHandler,
      leaseMs: options.leaseMs ?? DEFAULT_LEASE_MS,
      baseDelayMs: options.baseDelayMs ?? DEFAULT_BASE_DELAY_MS,
      maxDelayMs: options.maxDelayMs ?? DEFAULT_MAX_DELAY_MS,
    });
  }

  /**
   * Runs `target` once per `everyMs` across every instance: a job type (registered here or on the
   * workers), or a handler, registered as the job type `schedule:<name>` (so it retries like any job).
   */
  schedule(name: string, every: { everyMs: number }, target: string | JobHandler, options: JobTypeOptions = {}) {
    if (this.schedules.has(name)) throw new Error(`schedule "${name}" is already registered`);
    if (!Number.isInteger(every.everyMs) || every.everyMs < 1) throw new Error(`schedule "${name}": everyMs must be a positive integer`);
    let type = target as string;
    if (typeof target === 'function') {
      type = `schedule:${name}`;
      this.register(type, target, options);
    }
    this.schedules.set(name, { type, everyMs: every.everyMs });
  }

  /**
   * Runs `run` every `everyMs` in THIS process (in every role): for work on process memory, which a
   * once-across-instances schedule cannot reach. Runs never overlap; failures are logged.
   */
  everyLocal(name: string, everyMs: number, run: () => Promise<void>) {
    this.locals.push({ name, everyMs, run, nextAt: this.clock.now().getTime() + everyMs, running: false });
  }

  /** Starts polling (and listening); schedules are written to the database first. */
  async start() {
    if (this.started) return;
    this.started = true;
    if (this.runJobs) {
      await this.prepare();
      // One wake-up per enqueue: LISTEN hears this process's commits as well as the other instances',
      // so the in-process nudge serves only a runner that does not listen (PGlite, or LISTEN refused).
      if (this.listenUrl) this.closeListen = await listenForJobs(this.listenUrl, this.onWake, this.log);
      if (!this.closeListen) jobWakeups.on('wake', this.onWake);
    }
    this.arm(0);
  }

  /**
   * Graceful stop: no new claims, waits up to `timeoutMs` for running handlers, then hands the claims
   * of handlers still running back to the queue (they may run again elsewhere: jobs are at-least-once).
   */
  async stop(timeoutMs = 15_000) {
    if (this.stopping) return;
    this.stopping = true;
    clearTimeout(this.timer);
    jobWakeups.off('wake', this.onWake);
    await this.closeListen?.();
    await this.passing?.catch(() => {});
    let bound: NodeJS.Timeout | undefined;
    await Promise.race([
      Promise.allSettled([...this.inFlight]),
      new Promise((resolve) => (bound = setTimeout(resolve, timeoutMs))),
    ]);
    clearTimeout(bound);
    if (this.runJobs && this.inFlight.size > 0) {
      this.log.warn({ runner: this.id, inFlight: this.inFlight.size }, 'jobs still running at shutdown; releasing their claims');
      await releaseClaims(this.db, this.id, this.clock.now()).catch((err) => this.log.error({ err }, 'could not release job claims'));
    }
  }

  /** Writes the schedule rows once (a new schedule is due at once; an existing one keeps its next run). */
  private prepare() {
    this.prepared ??= (async () => {
      for (const [name, { everyMs }] of this.schedules) await upsertSchedule(this.db, name, everyMs, this.clock.now());
    })();
    return this.prepared;
  }

  /** One pass (bury dead leases, fire schedules, claim and run a batch), waiting for its handlers. Answers the jobs run. */
  async runOnce(): Promise<number> {
    await this.prepare();
    this.nextHousekeepingAt = 0;
    const launched = await this.pass();
    await Promise.allSettled(launched);
    return launched.length;
  }

  /** Queue depth by type and status, oldest due wait, this process's run counts and failures. */
  async metrics(): Promise<JobsSnapshot> {
    return jobsSnapshot(this.db, this.counters, this.inFlight.size, this.clock.now());
  }

  private arm(delayMs: number) {
    if (this.stopping) return;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => void this.tick(), delayMs);
  }

  /** Something was enqueued: look now rather than at the next poll. */
  private wake() {
    if (this.stopping || !this.started) return;
    if (this.passing) this.again = true;
    else this.arm(0);
  }

  private async tick() {
    this.runLocals();
    if (this.runJobs && !this.passing) {
      const pass = this.pass().catch((err) => {
        this.log.error({ err }, 'job runner pass failed');
        return [];
      });
      this.passing = pass;
      const launched = await pass;
      this.passing = undefined;
      // A full batch or a wake-up during the pass: look again at once instead of after the poll interval.
      if (this.again || (launched.length > 0 && this.inFlight.size < this.concurrency)) {
        this.again = false;
        return this.arm(0);
      }
    }
    this.arm(this.nextDelay());
  }

  private nextDelay() {
    const now = this.clock.now().getTime();
    let delay = this.runJobs ? this.pollIntervalMs : Number.POSITIVE_INFINITY;
    for (const t of this.locals) delay = Math.min(delay, Math.max(0, t.nextAt - now));
    // With nothing to do, still wake now and then: a clock moved by a test must be noticed.
    return Number.isFinite(delay) ? delay : this.pollIntervalMs;
  }

  private runLocals() {
    const now = this.clock.now().getTime();
    for (const t of this.locals) {
      if (t.running || t.nextAt > now) continue;
      t.running = true;
      t.nextAt = now + t.everyMs;
      t.run()
        .catch((err) => this.log.warn({ err, task: t.name }, 'process-local task failed'))
        .finally(() => (t.running = false));
    }
  }

  private async pass(): Promise<Promise<void>[]> {
    if (this.stopping) return [];
    const now = this.clock.now();
    const types = [...this.types.keys()];
    // Housekeeping (dead leases, schedules) once per poll interval, not on every refill of the batch.
    if (now.getTime() >= this.nextHousekeepingAt) {
      this.nextHousekeepingAt = now.getTime() + this.pollIntervalMs;
      for (const row of await buryExpiredLeases(this.db, types, now)) {
        this.counters.of(row.type).dead += 1;
        this.log.error({ jobId: row.id, type: row.type, organizationId: row.organization_id }, 'job dead: its lease expired on the last attempt');
      }
      if (this.schedules.size > 0) await fireDueSchedules(this.db, this.schedules, this.id, now);
    }
    const free = this.concurrency - this.inFlight.size;
    if (free <= 0 || this.types.size === 0) return [];
    // One lease for the batch: the longest of the claimed types, so no type is reclaimed early.
    const leaseMs = Math.max(...types.map((t) => this.types.get(t)!.leaseMs));
    const rows = await claimDue(this.db, types, free, this.id, now, new Date(now.getTime() + leaseMs));
    return rows.map((row) => {
      const p: Promise<void> = this.execute(row).finally(() => {
        this.inFlight.delete(p);
        // Refill when half the slots are free: claims stay batched instead of one query per finished job.
        if (!this.stopping && this.inFlight.size <= this.concurrency / 2) this.wake();
      });
      this.inFlight.add(p);
      return p;
    });
  }

  private async execute(row: ClaimedRow) {
    const def = this.types.get(row.type)!;
    const counters = this.counters.of(row.type);
    const waitMs = Math.max(0, this.clock.now().getTime() - new Date(row.due_at).getTime());
    counters.started += 1;
    counters.waitMsTotal += waitMs;
    counters.waitMsMax = Math.max(counters.waitMsMax, waitMs);
    const job: Job = { id: row.id, organizationId: row.organization_id, type: row.type, payload: row.payload, attempt: row.attempts, maxAttempts: row.max_attempts };
    const t0 = performance.now();
    try {
      await def.handler(job);
      await completeJob(this.db, row.organization_id, row.id, this.id);
      counters.succeeded += 1;
    } catch (err) {
      await this.recordFailure(row, def, err);
    } finally {
      const runMs = performance.now() - t0;
      counters.runMsTotal += runMs;
      counters.runMsMax = Math.max(counters.runMsMax, runMs);
    }
  }

  private async recordFailure(row: ClaimedRow, def: TypeDef, err: unknown) {
    const counters = this.counters.of(row.type);
    const message = (err instanceof Error ? `${err.name}: ${err.message}` : String(err)).slice(0, MAX_ERROR_CHARS);
    const now = this.clock.now();
    const retryAt = new Date(now.getTime() + backoffDelayMs(row.attempts, def.baseDelayMs, def.maxDelayMs, this.random));
    const ctx = { jobId: row.id, type: row.type, organizationId: row.organization_id, attempt: row.attempts, maxAttempts: row.max_attempts, error: message };
    try {
      const status = await failJob(this.db, row.organization_id, row.id, this.id, message, now, retryAt);
      if (status === 'dead') {
        counters.dead += 1;
        this.log.error(ctx, 'job dead after its last attempt');
      } else {
        counters.failed += 1;
        this.log.warn({ ...ctx, retryAt: retryAt.toISOString() }, 'job failed; will retry');
      }
    } catch (dbErr) {
      // The claim's lease still ends, so the job is retried after it: logged, not thrown.
      counters.failed += 1;
      this.log.error({ ...ctx, err: dbErr }, 'job failed and its failure could not be recorded');
    }
  }
}

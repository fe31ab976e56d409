/**
 * Effects that follow a committed change: cache invalidation over pub/sub, response-cache version
 * bumps, anything that must run only once the transaction has committed. The change already
 * stands, so an effect that fails (Redis down) must not turn the answer into a 500 (a rotated key
 * would lose its new secret): the failure is logged and counted, never thrown. What a lost
 * invalidation costs is bounded by the caches' TTLs and by dropping caches on a pub/sub reconnect
 * (docs/decisions.md, "One shape for every domain").
 */

/** A post-commit effect. */
export type Effect = () => unknown;

/** Where failed effects are reported (the app's pino logger fits). */
export interface EffectLog {
  warn(obj: object, msg: string): void;
}

const silent: EffectLog = { warn: () => {} };

/** Runs post-commit effects; counts what failed. */
export class AfterCommit {
  /** Effects run since start, and how many of them failed. */
  readonly counts = { ran: 0, failed: 0 };

  constructor(private log: EffectLog = silent) {}

  /** Reports failures to this log from now on (the API's logger exists only once the app is built). */
  useLogger(log: EffectLog) {
    this.log = log;
  }

  /** Runs an effect of a change that has committed: a failure is logged and counted, never thrown. */
  async run(name: string, effect: Effect): Promise<void> {
    this.counts.ran += 1;
    try {
      await effect();
    } catch (err) {
      this.counts.failed += 1;
      this.log.warn({ err, effect: name }, `after-commit effect failed (the change is committed): ${name}`);
    }
  }

  /** `effect` wrapped so that calling it runs through `run` (for services that take an onChanged callback). */
  wrap<A extends unknown[]>(name: string, effect: (...args: A) => unknown): (...args: A) => Promise<void> {
    return (...args: A) => this.run(name, () => effect(...args));
  }
}

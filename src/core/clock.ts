/**
 * Time, injected: rules (budget months, key expiry, statistics windows) read the clock from their
 * dependencies, so tests can place themselves at a month's end instead of depending on the date.
 */
export interface Clock {
  now(): Date;
}

/** The machine's clock. */
export const systemClock: Clock = { now: () => new Date() };

/** A clock that stands still until a test sets or advances it. */
export class TestClock implements Clock {
  private ms: number;

  constructor(start: Date | string | number = Date.now()) {
    this.ms = new Date(start).getTime();
  }

  now() {
    return new Date(this.ms);
  }

  /** Moves to an instant. */
  set(at: Date | string | number) {
    this.ms = new Date(at).getTime();
    return this;
  }

  /** Moves forward (or back, with a negative amount) by `ms` milliseconds. */
  advance(ms: number) {
    this.ms += ms;
    return this;
  }
}

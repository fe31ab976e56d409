/** Retry delays: exponential backoff with full jitter. */

/** Delay before the retry that follows failed attempt `attempt` (1-based): uniform in [0, min(max, base·2^(attempt-1))]. */
export function backoffDelayMs(attempt: number, baseMs: number, maxMs: number, random: () => number = Math.random): number {
  // Full jitter spreads the retries of jobs that failed together (one receiver down) over the whole window.
  const ceiling = Math.min(maxMs, baseMs * 2 ** Math.max(0, attempt - 1));
  return Math.floor(random() * ceiling);
}

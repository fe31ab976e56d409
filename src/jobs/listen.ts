/** LISTEN on PostgreSQL: a committed enqueue on any instance wakes this runner at once. */
import pg from 'pg';
import { JOBS_CHANNEL } from './enqueue.js';
import type { JobLogger } from './types.js';

/** Opens one dedicated connection listening for enqueues; answers its close function, or undefined when LISTEN failed (polling still runs). */
export async function listenForJobs(url: string, onWake: () => void, log: JobLogger): Promise<(() => Promise<void>) | undefined> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5000 });
  // A lost connection only costs latency (the poll still finds the jobs), so it is logged, not fatal.
  client.on('error', (err) => log.warn({ err }, 'job LISTEN connection lost; falling back to polling'));
  client.on('notification', () => onWake());
  try {
    await client.connect();
    await client.query(`LISTEN ${JOBS_CHANNEL}`);
  } catch (err) {
    log.warn({ err }, 'could not LISTEN for jobs; polling only');
    await client.end().catch(() => {});
    return undefined;
  }
  return async () => {
    await client.end().catch(() => {});
  };
}

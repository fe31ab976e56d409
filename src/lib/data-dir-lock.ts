/**
 * PGlite is single-process: two processes opening one data directory would corrupt it. The
 * server and the CLI take a pid lock file in DATA_DIR; a stale lock (dead pid) is taken over.
 */
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

function alive(pid: number) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Takes the lock or throws naming the holder; released on exit. */
export function acquireDataDirLock(dataDir: string, who: string) {
  mkdirSync(dataDir, { recursive: true });
  const file = join(dataDir, 'agov.lock');
  try {
    const [pid, holder] = readFileSync(file, 'utf8').split(' ');
    if (Number(pid) !== process.pid && alive(Number(pid))) {
      throw new Error(
        `The embedded database in ${dataDir} is in use by ${holder?.trim() ?? 'another process'} (pid ${pid}). ` +
          'Stop it first, or use DATABASE_URL (PostgreSQL) to share a database between processes.',
      );
    }
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
  }
  writeFileSync(file, `${process.pid} ${who}`);
  process.on('exit', () => {
    try {
      if (readFileSync(file, 'utf8').startsWith(`${process.pid} `)) rmSync(file);
    } catch {
      /* already gone */
    }
  });
}

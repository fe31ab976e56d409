/** Starting benchmark servers in child processes and talking to them. */
import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export interface Child {
  proc: ChildProcess;
  info: { port: number; key?: string; orgId?: string; db?: string };
  /** Sends a command and waits for the child's answer. */
  ask<T>(msg: object): Promise<T>;
  stop(): Promise<void>;
}

const entry = fileURLToPath(new URL('./db-server.ts', import.meta.url));

/** Forks bench/db-server.ts in the given mode and waits until it listens. */
export async function startChild(mode: 'app' | 'bare', env: Record<string, string | undefined> = {}): Promise<Child> {
  const proc = fork(entry, [], { execArgv: ['--import', 'tsx', ...(process.env.BENCH_PROF ? ['--cpu-prof', '--cpu-prof-dir=' + process.env.BENCH_PROF] : [])], env: { ...process.env, ...env, BENCH_MODE: mode }, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const next = <T>() =>
    new Promise<T>((resolve, reject) => {
      const onExit = (code: number | null) => reject(new Error(`bench server exited with ${code}`));
      proc.once('exit', onExit);
      proc.once('message', (m) => {
        proc.off('exit', onExit);
        resolve(m as T);
      });
    });
  const info = await next<Child['info']>();
  return {
    proc,
    info,
    ask: async <T>(msg: object) => {
      const answer = next<T>();
      proc.send(msg);
      return answer;
    },
    stop: async () => {
      proc.kill(process.env.BENCH_PROF ? 'SIGINT' : 'SIGKILL');
      if (process.env.BENCH_PROF) await new Promise((r) => proc.once('exit', r));
    },
  };
}

/** Percentile of a sorted-ascending array. */
export const pct = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];

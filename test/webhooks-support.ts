/** Test support for webhooks: a real local receiver (node:http) and a job runner with the modules' job types. */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { JobRunner } from '../src/jobs/index.js';
import { registerModuleWork } from '../src/jobs/process.js';
import type { TestApp } from './helpers.js';

export interface Received {
  headers: http.IncomingHttpHeaders;
  body: string;
  at: number;
}

/** What the receiver answers to one request: a status (and headers/body, after `delayMs`), 'hang' (never answers) or 'destroy'. */
export type Reply = { status: number; headers?: Record<string, string>; body?: string; delayMs?: number } | 'hang' | 'destroy';

export interface Receiver {
  url: string;
  port: number;
  received: Received[];
  /** Replies used in order, then `fallback`. */
  replies: Reply[];
  fallback: Reply;
  /** Resolves when `n` requests have arrived. */
  waitFor(n: number, timeoutMs?: number): Promise<Received[]>;
  /** Answers every hanging request with 200. */
  releaseHanging(): void;
  close(): Promise<void>;
}

/** Starts a receiver on 127.0.0.1. */
export async function startReceiver(fallback: Reply = { status: 200 }): Promise<Receiver> {
  const received: Received[] = [];
  const hanging: http.ServerResponse[] = [];
  const waiters: { n: number; resolve: () => void }[] = [];
  const rx: Receiver = {
    url: '',
    port: 0,
    received,
    replies: [],
    fallback,
    waitFor(n, timeoutMs = 10_000) {
      if (received.length >= n) return Promise.resolve(received.slice());
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`receiver got ${received.length} of ${n} requests`)), timeoutMs);
        waiters.push({ n, resolve: () => (clearTimeout(timer), resolve(received.slice())) });
      });
    },
    releaseHanging() {
      for (const res of hanging.splice(0)) if (!res.writableEnded) res.end('late');
    },
    async close() {
      rx.releaseHanging();
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      received.push({ headers: req.headers, body: Buffer.concat(chunks).toString('utf8'), at: Date.now() });
      for (const w of waiters.slice()) if (received.length >= w.n) (waiters.splice(waiters.indexOf(w), 1), w.resolve());
      const reply = rx.replies.shift() ?? rx.fallback;
      if (reply === 'hang') return void hanging.push(res);
      if (reply === 'destroy') return void req.socket.destroy();
      const answer = () => {
        res.writeHead(reply.status, reply.headers ?? {});
        res.end(reply.body ?? 'ok');
      };
      if (reply.delayMs) setTimeout(answer, reply.delayMs);
      else answer();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  rx.port = (server.address() as AddressInfo).port;
  rx.url = `http://127.0.0.1:${rx.port}/hook`;
  return rx;
}

const quiet = { info() {}, warn: (o: object, m: string) => process.env.WH_DEBUG && console.warn(m, o), error: (o: object, m: string) => process.env.WH_DEBUG && console.error(m, o) };

/** A started job runner running the modules' job types and schedules on the app's database and clock. */
export async function startRunner(t: TestApp, id?: string): Promise<JobRunner> {
  const runner = new JobRunner({ db: t.database.db, log: quiet, clock: t.clock, pollIntervalMs: 25, concurrency: 10, id });
  registerModuleWork(runner, t.container.services);
  await runner.start();
  return runner;
}

/** Polls `check` until it answers truthy (real time; for state the runner reaches asynchronously). */
export async function eventually<T>(check: () => Promise<T | undefined | null | false>, timeoutMs = 10_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await check();
    if (v) return v;
    if (Date.now() > end) throw new Error('condition not reached in time');
    await new Promise((r) => setTimeout(r, 20));
  }
}

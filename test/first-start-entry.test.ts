/** `npm start` on an empty data directory: the real entry point leaves a working admin key in DATA_DIR and says where, once. */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { testDatabaseUrl } from './helpers.js';

/** A port nobody listens on right now. */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
    s.on('error', reject);
  });
}

/** Runs src/main.ts until it listens, answers its output so far and a stop function. */
async function startServer(env: Record<string, string>) {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (c) => (out += String(c)));
  child.stderr.on('data', (c) => (out += String(c)));
  const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
  const deadline = Date.now() + 90_000;
  while (!out.includes('API listening')) {
    if (child.exitCode !== null || Date.now() > deadline) throw new Error(`server did not start:\n${out}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    output: () => out,
    async stop() {
      child.kill('SIGTERM');
      await exited;
    },
  };
}

describe('npm start on an empty data directory', () => {
  it('writes an owner-only admin key file, logs its path once (never the key), and creates nothing on the next start', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'agov-entry-'));
    try {
      const port = await freePort();
      const env: Record<string, string> = {
        PATH: process.env.PATH ?? '',
        DATA_DIR: dir,
        PORT: String(port),
        HOST: '127.0.0.1',
        LOG_LEVEL: 'info',
        ...(process.env.DATABASE_URL ? { DATABASE_URL: await testDatabaseUrl() } : {}),
      };
      const keyFile = join(dir, 'admin-key');
      const first = await startServer(env);
      let key: string;
      try {
        expect(statSync(keyFile).mode & 0o777).toBe(0o600);
        key = readFileSync(keyFile, 'utf8').trim();
        const lines = first.output().split('\n').filter((l) => l.includes(keyFile));
        expect(lines).toHaveLength(1);
        expect(JSON.parse(lines[0]).msg).toContain('first start: created organization "Default"');
        expect(first.output()).not.toContain(key);
        const res = await fetch(`http://127.0.0.1:${port}/api/v1/api-keys`, { headers: { 'x-api-key': key } });
        expect(res.status).toBe(200);
      } finally {
        await first.stop();
      }
      const mtime = statSync(keyFile).mtimeMs;
      const second = await startServer(env);
      try {
        expect(second.output()).not.toContain('first start');
        expect(readFileSync(keyFile, 'utf8').trim()).toBe(key);
        expect(statSync(keyFile).mtimeMs).toBe(mtime);
        const res = await fetch(`http://127.0.0.1:${port}/api/v1/api-keys`, { headers: { 'x-api-key': key } });
        // Still exactly one key: the second start created no organization and no key.
        expect(res.status).toBe(200);
        expect(((await res.json()) as { data: unknown[] }).data).toHaveLength(1);
      } finally {
        await second.stop();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 240_000);
});

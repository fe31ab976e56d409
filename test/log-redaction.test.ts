/** A database error during ingest is logged with its SQLSTATE, never with the batch (docs/decisions.md, "Security hardening"). */
import { randomUUID } from 'node:crypto';
import { Writable } from 'node:stream';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it, test } from './fixture.js';

const lines: string[] = [];
const logStream = new Writable({
  write(chunk, _enc, done) {
    lines.push(String(chunk));
    done();
  },
});

// Unique per run: the trigger below fires only for this span name, so a shared PostgreSQL's other tests never meet it.
const marker = `force-db-error-${randomUUID()}`;
const trigger = `agov_test_fail_${randomUUID().replace(/-/g, '').slice(0, 12)}`;

test.override({ appEnv: { LOG_LEVEL: 'error' }, appOptions: { logStream } });

beforeAll(async ({ app }) => {
  // A real database failure, with a DETAIL that quotes a row value as PostgreSQL's own errors do.
  await app.database.db.execute(sql.raw(`
    create function ${trigger}() returns trigger language plpgsql as $$
    begin
      raise exception 'forced failure' using errcode = 'XX001', detail = 'row: ' || new.input::text;
    end $$`));
  await app.database.db.execute(sql.raw(`
    create trigger ${trigger} before insert on traces for each row
      when (new.span_name = '${marker}') execute function ${trigger}();`));
});
afterAll(async ({ app }) => {
  await app.database.db.execute(sql.raw(`drop trigger if exists ${trigger} on traces`));
  await app.database.db.execute(sql.raw(`drop function if exists ${trigger}()`));
});

describe('error logs', () => {
  it('keep the SQLSTATE of a failed ingest and drop its parameters, query text and detail', async ({ org }) => {
    const agent = await org.req({
      method: 'POST', url: '/api/v1/agents',
      payload: { agentId: `log-${randomUUID()}`, name: 'Log', type: 'chatbot', platform: 'custom', environment: 'production' },
    });
    const secret = `SECRET-PAYLOAD-${randomUUID()}`;
    const res = await org.req({
      method: 'POST', url: '/api/v1/traces/ingest',
      payload: { traces: [{ traceId: `t-${randomUUID()}`, agentId: agent.json().data.agentId, spanType: 'root', spanName: marker, timestamp: new Date().toISOString(), input: { prompt: secret } }] },
    });
    expect(res.statusCode).toBe(500);
    expect(res.body).not.toContain(secret);
    const log = lines.join('');
    expect(log).toContain('unhandled error');
    expect(log).not.toContain(secret);
    expect(log).toContain('"code":"XX001"');
    expect(log).not.toMatch(/insert into traces/i);
  });
});

/**
 * Regression tests for error-handling fixes the fuzz test found. Once validation was tightened the
 * fuzzer no longer reaches these paths, so they are pinned here on small apps of their own.
 */
import { Readable } from 'node:stream';
import { DrizzleQueryError } from 'drizzle-orm';
import Fastify, { type RouteHandlerMethod } from 'fastify';
import { describe, expect, it } from 'vitest';
import { validation } from '../src/core/errors.js';
import { sqlStateOf } from '../src/core/db-errors.js';
import { registerErrorHandling } from '../src/http/errors.js';
import { sendExport } from '../src/http/export.js';

const pgError = (code: string) => Object.assign(new Error('database says no'), { code });

/** A Fastify app with the project's error handling and one route. */
async function appWith(handler: RouteHandlerMethod) {
  const app = Fastify({ logger: false });
  registerErrorHandling(app);
  app.get('/x', handler);
  await app.ready();
  return app;
}

describe('error handling', () => {
  it('finds the SQLSTATE inside drizzle-orm DrizzleQueryError', () => {
    expect(sqlStateOf(new DrizzleQueryError('select 1', [], pgError('22008')))).toBe('22008');
    expect(sqlStateOf(pgError('23505'))).toBe('23505');
    expect(sqlStateOf(Object.assign(new Error('x'), { code: 'FST_ERR_CTP_BODY_TOO_LARGE' }))).toBeUndefined();
    expect(sqlStateOf('nope')).toBeUndefined();
  });

  it('answers wrapped database value errors 422 and unique violations 409, without SQL', async () => {
    const bad = await appWith(async () => {
      throw new DrizzleQueryError('select $1::timestamptz', ['0000-01-01'], pgError('22008'));
    });
    const res = await bad.inject({ method: 'GET', url: '/x' });
    expect(res.statusCode).toBe(422);
    expect(res.json().error.code).toBe('VALIDATION_ERROR');
    expect(res.body).not.toContain('select');
    const dup = await appWith(async () => {
      throw new DrizzleQueryError('insert into t values ($1)', ['a'], pgError('23505'));
    });
    expect((await dup.inject({ method: 'GET', url: '/x' })).statusCode).toBe(409);
  });

  it('sends the error body as JSON when a text/csv stream fails before its first byte', async () => {
    const app = await appWith(async (_req, reply) => {
      reply.type('text/csv; charset=utf-8').header('Content-Disposition', 'attachment; filename="x.csv"');
      const stream = new Readable({
        read() {
          this.destroy(validation({ from: 'out of range' }, 'bad filter'));
        },
      });
      return reply.send(stream);
    });
    const res = await app.inject({ method: 'GET', url: '/x' });
    expect(res.statusCode).toBe(422);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(res.headers['content-disposition']).toBeUndefined();
    expect(res.json()).toEqual({ error: { code: 'VALIDATION_ERROR', message: 'bad filter', fields: { from: 'out of range' } } });
  });

  it('answers an export whose first query fails with an error response, not a cut-off 200', async () => {
    for (const format of ['json', 'csv'] as const) {
      const app = await appWith(async (_req, reply) => {
        async function* failing(): AsyncGenerator<object[]> {
          throw new DrizzleQueryError('select …', [], pgError('22008'));
        }
        return sendExport(reply, format, 'x', ['a'], failing());
      });
      const res = await app.inject({ method: 'GET', url: '/x' });
      expect(res.statusCode, format).toBe(422);
      expect(res.json().error.code).toBe('VALIDATION_ERROR');
    }
  });

  it('still streams an export in batches', async () => {
    const app = await appWith(async (_req, reply) => {
      async function* batches() {
        yield [{ a: 1 }, { a: 2 }];
        yield [{ a: 3 }];
      }
      return sendExport(reply, 'json', 'x', ['a'], batches());
    });
    const res = await app.inject({ method: 'GET', url: '/x' });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ data: [{ a: 1 }, { a: 2 }, { a: 3 }] });
    const empty = await appWith(async (_req, reply) => sendExport(reply, 'csv', 'x', ['a'], (async function* () {})()));
    const csv = await empty.inject({ method: 'GET', url: '/x' });
    expect(csv.statusCode).toBe(200);
  });
});

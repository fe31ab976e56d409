/** One info line per request, at completion, without the query string (docs/decisions.md, "One log line per request"). */
import { Writable } from 'node:stream';
import { describe, expect, it, test } from './fixture.js';

const lines: string[] = [];
const logStream = new Writable({
  write(chunk, _enc, done) {
    lines.push(...String(chunk).split('\n').filter(Boolean));
    done();
  },
});

test.override({ appEnv: { LOG_LEVEL: 'info' }, appOptions: { logStream } });

const linesOf = (reqId: string) => lines.map((l) => JSON.parse(l)).filter((l) => l.reqId === reqId);

describe('request log', () => {
  it('writes one line per request with method, path, status, duration and request id, never the query', async ({ org }) => {
    const res = await org.req({ method: 'GET', url: '/api/v1/teams?search=private-search-text', headers: { 'x-request-id': 'log-test-1' } });
    expect(res.statusCode).toBe(200);
    const mine = linesOf('log-test-1');
    expect(mine).toHaveLength(1);
    expect(mine[0]).toMatchObject({ level: 30, msg: 'request', method: 'GET', path: '/api/v1/teams', statusCode: 200 });
    expect(typeof mine[0].durationMs).toBe('number');
    expect(lines.join('\n')).not.toContain('private-search-text');
  });

  it('logs failed requests the same way, with the path the client sent', async ({ org }) => {
    const res = await org.req({ method: 'GET', url: '/api/agents/00000000-0000-0000-0000-000000000000?x=1', headers: { 'x-request-id': 'log-test-2' } });
    // The operation takes no query parameter, so `x` is refused (docs/decisions.md, "Strict inputs").
    expect(res.statusCode).toBe(422);
    expect(linesOf('log-test-2')).toEqual([
      expect.objectContaining({ msg: 'request', method: 'GET', path: '/api/agents/00000000-0000-0000-0000-000000000000', statusCode: 422 }),
    ]);
  });
});

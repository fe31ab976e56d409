/**
 * package.json `overrides` pin content-disposition (under @fastify/static, the docs UI's files) and
 * cookie (under light-my-request, the tests' inject) to versions that run on Node 20 (docs/decisions.md,
 * "Node 20 engine warnings"): the code paths that use them still work.
 */
import Fastify from 'fastify';
import { describe, expect, it } from './fixture.js';

describe('dependency overrides', () => {
  it('the docs UI serves its page and assets', async ({ app }) => {
    const page = await app.app.inject({ method: 'GET', url: '/api-docs' });
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('swagger');
    const css = await app.app.inject({ method: 'GET', url: '/api-docs/static/swagger-ui.css' });
    expect(css.statusCode).toBe(200);
    expect(css.headers['content-type']).toMatch(/text\/css/);
  });

  it('inject sends cookies (light-my-request serializes them with cookie)', async () => {
    const bare = Fastify();
    bare.get('/', async (req) => ({ cookie: req.headers.cookie ?? null }));
    try {
      const res = await bare.inject({ method: 'GET', url: '/', cookies: { a: '1', b: 'x y' } });
      expect(res.json()).toEqual({ cookie: 'a=1; b=x%20y' });
    } finally {
      await bare.close();
    }
  });
});

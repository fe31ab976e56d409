import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOrg, createTestApp, type TestApp, type TestOrg } from './helpers.js';

let t: TestApp;
let org: TestOrg;
beforeAll(async () => {
  t = await createTestApp();
  org = await createOrg(t);
});
afterAll(() => t.close());

describe('smoke', () => {
  it('serves health with the admin key', async () => {
    const res = await org.req({ method: 'GET', url: '/api/v1/health' });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ status: 'healthy', database: 'connected', redis: 'connected' });
  });
  it('serves the openapi document', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/api-docs.json' });
    expect(res.statusCode).toBe(200);
    const doc = res.json();
    expect(doc.openapi).toBe('3.1.0');
    console.log(Object.keys(doc.paths));
  });
});

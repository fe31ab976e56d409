/**
 * The shared test fixture: one app per test file (on that file's copy of the template database)
 * and one organization in it, handed to each test as `({ app, org })`. A file changes how its app
 * is built with `test.override({ appEnv: {...} })` (or `appOptions`) at its top level.
 */
import { test as base } from 'vitest';
import { createOrg, createTestApp, type TestApp, type TestOrg } from './helpers.js';

export interface AppFixtures {
  /** Extra env for createTestApp (file-scoped: one app per file, so overrides go at the top level). */
  appEnv: Record<string, string>;
  /** Extra options for createTestApp (a replaced shared state, a log stream). */
  appOptions: Parameters<typeof createTestApp>[1];
  /** The file's app: built before its first test, closed after its last. */
  app: TestApp;
  /** The file's organization (with an admin key), shared by every test of the file. */
  org: TestOrg;
}

/** vitest's `test` with the file's app and organization, and a fresh organization per test (`freshOrg`). */
export const test = base.extend<{ $file: AppFixtures; $test: { freshOrg: TestOrg } }>({
  appEnv: [async ({}, use) => use({}), { scope: 'file' }],
  appOptions: [async ({}, use) => use({}), { scope: 'file' }],
  app: [
    async ({ appEnv, appOptions }, use) => {
      const app = await createTestApp(appEnv, appOptions);
      try {
        await use(app);
      } finally {
        await app.close();
      }
    },
    { scope: 'file' },
  ],
  org: [async ({ app }, use) => use(await createOrg(app)), { scope: 'file' }],
  // A per-test organization, for tests that need one no other test has touched.
  freshOrg: async ({ app }, use) => use(await createOrg(app)),
});

export const it = test;
// The hooks read the fixtures through `this`, so they are bound to `test`: `beforeAll(({ app }) => …)`.
export const beforeAll: typeof test.beforeAll = test.beforeAll.bind(test);
export const afterAll: typeof test.afterAll = test.afterAll.bind(test);
export const beforeEach: typeof test.beforeEach = test.beforeEach.bind(test);
export const afterEach: typeof test.afterEach = test.afterEach.bind(test);
export { describe, expect } from 'vitest';

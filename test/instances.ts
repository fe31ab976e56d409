/**
 * Two app instances on one database and one Redis, for tests of what crosses instances (cache
 * invalidation over pub/sub, shared counters). Skipped unless DATABASE_URL and REDIS_URL are set:
 * on PGlite and the in-process state each app would have its own database and its own bus.
 */
import { afterAll, beforeAll, describe } from 'vitest';
import { createTestApp, type TestApp } from './helpers.js';

/** The two instances: set before the suite's first test. */
export interface Instances {
  a: TestApp;
  b: TestApp;
}

/** A describe block whose tests get two instances (`apps.a`, `apps.b`), built before its first test and closed after its last. */
export function describeOnTwoInstances(name: string, body: (apps: Instances) => void) {
  describe.skipIf(!process.env.DATABASE_URL || !process.env.REDIS_URL)(name, () => {
    const apps = {} as Instances;
    beforeAll(async () => {
      apps.a = await createTestApp();
      apps.b = await createTestApp(); // the same file database, its own Redis connections
    });
    afterAll(async () => {
      await apps.b?.close();
      await apps.a?.close();
    });
    body(apps);
  });
}

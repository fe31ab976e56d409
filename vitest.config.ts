import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 120_000,
    // Each test file gets its own app and (on PGlite) its own in-memory database.
    pool: 'forks',
  },
});

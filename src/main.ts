/**
 * Entry point: configuration, database (migrated), shared state, API, workers; graceful shutdown.
 */
import { openDatabase } from './db/client.js';
import { parseConfig } from './config.js';
import { buildApp } from './app.js';
import { memoryState, redisState, type SharedState } from './lib/shared-state.js';
import { createOrganization, isEmpty } from './domains/organizations/service.js';
import { acquireDataDirLock } from './lib/data-dir-lock.js';

async function main() {
  const config = parseConfig();
  if (!config.DATABASE_URL) acquireDataDirLock(config.DATA_DIR, 'server');
  const database = await openDatabase({ url: config.DATABASE_URL, dataDir: config.DATA_DIR, poolSize: config.DATABASE_POOL_SIZE });
  await database.migrate();
  const state: SharedState = config.REDIS_URL ? await redisState(config.REDIS_URL) : memoryState();
  const app = await buildApp({ config, database, state });

  if (config.AGOV_INIT_ORG_NAME && config.AGOV_INIT_ADMIN_KEY && (await isEmpty(database.db))) {
    const { organization } = await createOrganization(database.db, { name: config.AGOV_INIT_ORG_NAME, key: config.AGOV_INIT_ADMIN_KEY });
    app.log.info({ organizationId: organization.id }, `created organization "${organization.name}" with the admin key from AGOV_INIT_ADMIN_KEY`);
  } else if (config.AGOV_INIT_ORG_NAME || config.AGOV_INIT_ADMIN_KEY) {
    if (!(config.AGOV_INIT_ORG_NAME && config.AGOV_INIT_ADMIN_KEY)) app.log.warn('headless init needs both AGOV_INIT_ORG_NAME and AGOV_INIT_ADMIN_KEY; ignored');
    else app.log.info('headless init skipped: the database already has an organization');
  }

  app.deps.usage.start(config.USAGE_FLUSH_INTERVAL_MS);
  await app.listen({ port: config.PORT, host: config.HOST });
  app.log.info(
    { database: database.describe, cache: state.kind === 'redis' ? 'Redis' : 'in-process memory (single instance)' },
    `API listening on http://${config.HOST}:${config.PORT} (docs at /api-docs); database: ${database.describe}; cache: ${state.kind}`,
  );

  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    app.log.info(`${signal} received: draining requests and workers`);
    const force = setTimeout(() => {
      app.log.error('shutdown took too long; exiting');
      process.exit(1);
    }, 25_000);
    force.unref();
    try {
      await app.close(); // stops accepting, waits for in-flight requests, flushes usage (onClose)
      await state.close();
      await database.close();
    } finally {
      process.exit(0);
    }
  };
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));
}

main().catch((err) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});

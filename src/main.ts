/**
 * Entry point: configuration, the container (database migrated, shared state, services), API,
 * workers; graceful shutdown.
 */
import { parseConfig } from './config.js';
import { buildApp } from './app.js';
import { openContainer } from './container.js';
import { acquireDataDirLock } from './lib/data-dir-lock.js';

async function main() {
  const config = parseConfig();
  if (!config.DATABASE_URL) acquireDataDirLock(config.DATA_DIR, 'server');
  const container = await openContainer(config);
  const { database, state } = container;
  const app = await buildApp(container);

  const init = await container.services.organizations.headlessInit(config.AGOV_INIT_ORG_NAME, config.AGOV_INIT_ADMIN_KEY);
  if (init.created) app.log.info({ organizationId: init.organizationId }, `headless init: created organization "${init.name}" with the admin key from AGOV_INIT_ADMIN_KEY`);
  else if (init.reason !== 'not configured') app.log.warn(`headless init skipped: ${init.reason}`);

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
      await container.close(); // shared state, then the database
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

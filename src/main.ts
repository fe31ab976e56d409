/**
 * Entry point: configuration, database (migrated), shared state, API, workers; graceful shutdown.
 */
import { openDatabase } from './db/client.js';
import { parseConfig } from './config.js';
import { buildApp } from './app.js';
import { memoryState, redisState, type SharedState } from './lib/shared-state.js';
import { headlessInit } from './domains/organizations/service.js';
import { acquireDataDirLock } from './lib/data-dir-lock.js';
import { loadAuditSigner } from './domains/audit/signer.js';
import { createDueCheckpoints } from './domains/audit/checkpoint-signing.js';

async function main() {
  const config = parseConfig();
  if (!config.DATABASE_URL) acquireDataDirLock(config.DATA_DIR, 'server');
  const database = await openDatabase({ url: config.DATABASE_URL, dataDir: config.DATA_DIR, poolSize: config.DATABASE_POOL_SIZE });
  await database.migrate();
  const state: SharedState = config.REDIS_URL ? await redisState(config.REDIS_URL) : memoryState();
  // The logger exists once the app does: keep the signer's messages until then.
  const signerLog: Array<['info' | 'warn', string]> = [];
  const signer = loadAuditSigner(
    { AUDIT_SIGNING_KEY: config.AUDIT_SIGNING_KEY, DATA_DIR: config.DATA_DIR, production: config.production, postgres: Boolean(config.DATABASE_URL) },
    { info: (m) => signerLog.push(['info', m]), warn: (m) => signerLog.push(['warn', m]) },
  );
  const app = await buildApp({ config, database, state, audit: { signer } });
  for (const [level, msg] of signerLog) app.log[level](msg);

  const init = await headlessInit(database.db, config.AGOV_INIT_ORG_NAME, config.AGOV_INIT_ADMIN_KEY);
  if (init.created) app.log.info({ organizationId: init.organizationId }, `headless init: created organization "${init.name}" with the admin key from AGOV_INIT_ADMIN_KEY`);
  else if (init.reason !== 'not configured') app.log.warn(`headless init skipped: ${init.reason}`);

  // Contract: a checkpoint at start-up wherever the head moved. The schedule (every
  // AUDIT_CHECKPOINT_EVERY entries or AUDIT_CHECKPOINT_INTERVAL_SECONDS) belongs to the job runner.
  // Deliberate fail-open: the API starts even when signing fails; verify then shows the unsigned tail.
  try {
    const run = await createDueCheckpoints({ db: database.db, signer, now: new Date(), everyEntries: 1, everyMs: config.AUDIT_CHECKPOINT_INTERVAL_SECONDS * 1000 });
    if (run.created.length) app.log.info(`audit: signed ${run.created.length} checkpoint(s) at start-up`);
    for (const r of run.refused) app.log.error(r, 'audit: chain head not signed: it does not continue the last checkpoint');
  } catch (err) {
    app.log.error({ err }, 'audit: start-up checkpoints failed');
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

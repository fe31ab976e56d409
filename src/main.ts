/**
 * Entry point: configuration, the container (database migrated, shared state, services), then the
 * process's role (AGOV_ROLE: API, jobs, or both; see docs/decisions.md, "Process roles"); graceful shutdown.
 */
import { parseConfig } from './config.js';
import { openContainer } from './container.js';
import { acquireDataDirLock } from './lib/data-dir-lock.js';
import { roleRuns, startProcess } from './jobs/process.js';
import { loadAuditSigner } from './domains/audit/signer.js';

async function main() {
  const config = parseConfig();
  const runs = roleRuns(config.AGOV_ROLE);
  if (!config.DATABASE_URL) acquireDataDirLock(config.DATA_DIR, 'server');
  // The logger exists once the app does: keep the signer's messages until then.
  const signerLog: Array<['info' | 'warn', string]> = [];
  const auditSigner = loadAuditSigner(
    { AUDIT_SIGNING_KEY: config.AUDIT_SIGNING_KEY, DATA_DIR: config.DATA_DIR, production: config.production, postgres: Boolean(config.DATABASE_URL) },
    { info: (m) => signerLog.push(['info', m]), warn: (m) => signerLog.push(['warn', m]) },
  );
  const container = await openContainer(config, { auditSigner });
  const { database, state } = container;
  // The modules' jobs and schedules (audit checkpoints, trace retention) are registered by startProcess.
  const proc = await startProcess(container);
  const { app } = proc;
  for (const [level, msg] of signerLog) app.log[level](msg);

  // Contract: a checkpoint at start-up wherever the head moved.
  // Deliberate fail-open: the API starts even when signing fails; verify then shows the unsigned tail.
  try {
    const run = await container.services.audit.createDueCheckpoints({ everyEntries: 1 });
    if (run.created.length) app.log.info(`audit: signed ${run.created.length} checkpoint(s) at start-up`);
    for (const r of run.refused) app.log.error(r, 'audit: chain head not signed: it does not continue the last checkpoint');
  } catch (err) {
    app.log.error({ err }, 'audit: start-up checkpoints failed');
  }

  // The bootstrap belongs to the instances that serve the API, so a worker never races them to it.
  if (runs.api) {
    const init = await container.services.organizations.headlessInit(config.AGOV_INIT_ORG_NAME, config.AGOV_INIT_ADMIN_KEY);
    if (init.created) app.log.info({ organizationId: init.organizationId }, `headless init: created organization "${init.name}" with the admin key from AGOV_INIT_ADMIN_KEY`);
    else if (init.reason !== 'not configured') app.log.warn(`headless init skipped: ${init.reason}`);
    // Without AGOV_INIT_*, an empty database gets a default organization; one line names the key's file, never the key.
    const first = init.reason === 'not configured' ? await container.services.organizations.firstStart(config.DATA_DIR) : { created: false as const };
    if (first.created) app.log.info({ organizationId: first.organizationId }, `first start: created organization "${first.name}"; its admin key is in ${first.keyFile} (readable by this user only)`);
  }

  const where = { database: database.describe, cache: state.kind === 'redis' ? 'Redis' : 'in-process memory (single instance)', role: config.AGOV_ROLE };
  if (runs.api) {
    await app.listen({ port: config.PORT, host: config.HOST });
    app.log.info(where, `API listening on http://${config.HOST}:${config.PORT} (docs at /api-docs); role: ${config.AGOV_ROLE}; database: ${database.describe}; cache: ${state.kind}`);
  } else {
    // A worker has no port: it is watched through its logs and the jobs table (docs/decisions.md, "Process roles").
    app.log.info(where, `worker running jobs and schedules; database: ${database.describe}; cache: ${state.kind}`);
  }

  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    app.log.info(`${signal} received: draining jobs and requests`);
    const force = setTimeout(() => {
      app.log.error('shutdown took too long; exiting');
      process.exit(1);
    }, 25_000);
    force.unref();
    try {
      await proc.close(); // stops claiming, waits for running jobs, then drains requests and flushes usage
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

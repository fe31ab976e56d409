/** The audit module: the per-organization hash-chained audit log and its signed checkpoints. */
import { defineModule } from '../../core/module.js';
import { auditRoutes } from './routes.js';
import { initChain, verifyChain, VERIFY_PAGE_SIZE, writeAudit } from './service.js';
import { createDueCheckpoints } from './checkpoint-signing.js';

// Checked every 10 s (or the interval, if shorter): a head that moved AUDIT_CHECKPOINT_EVERY entries
// is signed within that time, one that moved at all within AUDIT_CHECKPOINT_INTERVAL_SECONDS.
const CHECKPOINT_CHECK_MAX_MS = 10_000;

export const auditModule = defineModule({
  name: 'audit',
  routes: auditRoutes,
  needs: ['db', 'config', 'clock', 'auditSigner', 'auditVerifyPageSize'],
  services: ({ db, config, clock, auditSigner, auditVerifyPageSize }) => {
    const everyMs = config.AUDIT_CHECKPOINT_INTERVAL_SECONDS * 1000;
    const pageSize = auditVerifyPageSize ?? VERIFY_PAGE_SIZE;
    return {
      /** Checks the organization's chain and its latest signed checkpoints, vouching with the container's signer. */
      verify: (orgId: string) => verifyChain(db, orgId, { signer: auditSigner, pageSize }),
      /**
       * Signs every chain head that is due at the clock's now (AUDIT_CHECKPOINT_EVERY entries or
       * AUDIT_CHECKPOINT_INTERVAL_SECONDS); `everyEntries: 1` signs every head that moved (start-up).
       */
      createDueCheckpoints: (opts: { everyEntries?: number } = {}) =>
        createDueCheckpoints({ db, signer: auditSigner, now: clock.now(), everyEntries: opts.everyEntries ?? config.AUDIT_CHECKPOINT_EVERY, everyMs, pageSize }),
      /** How often the schedule looks for due heads. */
      checkEveryMs: Math.min(everyMs, CHECKPOINT_CHECK_MAX_MS),
      initChain,
      writeAudit,
    };
  },
  schedules: (audit) => [
    {
      name: 'audit-checkpoints',
      everyMs: audit.checkEveryMs,
      run: async () => {
        await audit.createDueCheckpoints();
      },
    },
  ],
  caches: [],
});

/** The audit module: the per-organization hash-chained audit log and its signed checkpoints. */
import { defineModule } from '../../core/module.js';
import { auditRoutes } from './routes.js';
import { initChain, verifyChain, writeAudit } from './service.js';
import { createDueCheckpoints } from './checkpoint-signing.js';

// Checked every 10 s (or the interval, if shorter): a head that moved AUDIT_CHECKPOINT_EVERY entries
// is signed within that time, one that moved at all within AUDIT_CHECKPOINT_INTERVAL_SECONDS.
const CHECKPOINT_CHECK_MAX_MS = 10_000;

export const auditModule = defineModule({
  name: 'audit',
  routes: auditRoutes,
  needs: ['db', 'config', 'clock', 'auditSigner'],
  services: ({ db, config, clock, auditSigner }) => {
    const everyMs = config.AUDIT_CHECKPOINT_INTERVAL_SECONDS * 1000;
    return {
      /** The container's signer: the routes verify with it and the schedule signs with it. */
      signer: auditSigner,
      /** Checks the organization's chain and its latest signed checkpoints. */
      verify: (orgId: string, opts: Parameters<typeof verifyChain>[2]) => verifyChain(db, orgId, opts),
      /**
       * Signs every chain head that is due at the clock's now (AUDIT_CHECKPOINT_EVERY entries or
       * AUDIT_CHECKPOINT_INTERVAL_SECONDS); `everyEntries: 1` signs every head that moved (start-up).
       */
      createDueCheckpoints: (opts: { everyEntries?: number } = {}) =>
        createDueCheckpoints({ db, signer: auditSigner, now: clock.now(), everyEntries: opts.everyEntries ?? config.AUDIT_CHECKPOINT_EVERY, everyMs }),
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

/** The audit module: the per-organization hash-chained audit log. */
import { defineModule } from '../../core/module.js';
import { auditRoutes } from './routes.js';
import { initChain, verifyChain, writeAudit } from './service.js';

export const auditModule = defineModule({
  name: 'audit',
  routes: auditRoutes,
  needs: ['db'],
  services: ({ db }) => ({
    /** Checks the organization's chain and its latest signed checkpoints. */
    verify: (orgId: string, opts: Parameters<typeof verifyChain>[2]) => verifyChain(db, orgId, opts),
    initChain,
    writeAudit,
  }),
  jobs: [],
  schedules: [],
  caches: [],
});

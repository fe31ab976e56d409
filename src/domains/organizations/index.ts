/** The organizations module: creating an organization with its first admin key (CLI, headless first start). */
import { defineModule } from '../../core/module.js';
import type { Environment } from '../../http/validation.js';
import { createOrganization, headlessInit, isEmpty } from './service.js';

export { organizationIds } from './service.js';

export const organizationsModule = defineModule({
  name: 'organizations',
  needs: ['db', 'clock'],
  services: ({ db, clock }) => ({
    /** Creates an organization, its audit chain and an admin key (see createOrganization). */
    create: (input: { name: string; key?: string; environment?: Environment; actor?: string }) => createOrganization(db, { ...input, clock }),
    /** Headless first start from AGOV_INIT_ORG_NAME / AGOV_INIT_ADMIN_KEY. */
    headlessInit: (orgName: string | undefined, adminKey: string | undefined) => headlessInit(db, orgName, adminKey),
    /** True when no organization exists yet. */
    isEmpty: () => isEmpty(db),
  }),
  caches: [],
});

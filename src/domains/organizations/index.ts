/** The organizations module: creating an organization with its first admin key (CLI, headless and default first start). */
import { defineModule } from '../../core/module.js';
import type { Environment } from '../../http/validation.js';
import { createOrganization, headlessInit, isEmpty } from './service.js';
import { firstStart } from './first-start.js';

export { organizationIds } from './service.js';

export const organizationsModule = defineModule({
  name: 'organizations',
  needs: ['db', 'clock'],
  services: ({ db, clock }) => ({
    /** Creates an organization, its audit chain and an admin key (see createOrganization). */
    create: (input: { name: string; key?: string; environment?: Environment; actor?: string; allowDuplicateName?: boolean }) =>
      createOrganization(db, { ...input, clock }),
    /** Headless first start from AGOV_INIT_ORG_NAME / AGOV_INIT_ADMIN_KEY. */
    headlessInit: (orgName: string | undefined, adminKey: string | undefined) => headlessInit(db, orgName, adminKey, clock),
    /** First start without AGOV_INIT_*: the default organization, its admin key in `<dataDir>/admin-key` (see firstStart). */
    firstStart: (dataDir: string) => firstStart(db, { dataDir, clock }),
    /** True when no organization exists yet. */
    isEmpty: () => isEmpty(db),
  }),
  caches: [],
});

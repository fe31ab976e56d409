/** The users module: users known to an organization (JWT sign-ins, the CLI). */
import { defineModule } from '../../core/module.js';
import { createUser, findUser, upsertUserFromToken } from './service.js';

// What other domains call: the users table stays this module's.
export { findUser } from './service.js';

export const usersModule = defineModule({
  name: 'users',
  needs: ['db'],
  services: ({ db }) => ({
    /** Creates a user (CLI). */
    create: (u: { organizationId: string; email: string; name: string; role: string }) => createUser(db, u),
    /** A user of the organization, or undefined. */
    find: (organizationId: string, id: string) => findUser(db, organizationId, id),
    /** Creates or refreshes the user behind a token; answers its id. */
    upsertFromToken: (u: Parameters<typeof upsertUserFromToken>[1]) => upsertUserFromToken(db, u),
  }),
  caches: [],
});

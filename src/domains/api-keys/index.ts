/** The API keys module: /api-keys, and the key rows other domains create (agent keys, first admin key). */
import { defineModule } from '../../core/module.js';
import { AUTH_KEY_CACHE } from '../../core/cache-names.js';
import { apiKeyRoutes } from './routes.js';
import { apiKeyView, getApiKey, insertKey, resolveExpiry } from './service.js';

// What other domains call: the api_keys table stays this module's.
export { apiKeyView, deleteKeyOfAgent, insertKey, listKeysOfAgent, resolveExpiry } from './service.js';
export { environmentOfKey, generateKey, hashKey, looksLikeKey } from './key-material.js';
export { findKeyByHash, recordKeyUsage, type KeyUsage } from './lookup.js';
export { apiKeySchema, apiKeyWithSecretSchema } from './schemas.js';

export const apiKeysModule = defineModule({
  name: 'api-keys',
  routes: apiKeyRoutes,
  needs: ['db'],
  services: ({ db }) => ({
    /** One organization key, or NOT_FOUND. */
    get: (orgId: string, id: string) => getApiKey(db, orgId, id),
    insertKey,
    resolveExpiry,
    view: apiKeyView,
  }),
  caches: [AUTH_KEY_CACHE],
});

/** The policies module: policy CRUD and the per-organization cache of active policies. */
// The glob matcher and its input schema, which access grants use too (docs/decisions.md, "Access
// grants"). First: access grants build their schema from it while this module is still loading (the
// enforce route imports access grants, a cycle), so glob.ts must be evaluated before anything else here.
export { compileGlob, globInput, globProblem, MAX_GLOB_LENGTH, type Glob } from './glob.js';
import { defineModule } from '../../core/module.js';
import { ActivePolicyCache, POLICY_CACHE } from './cache.js';
import { policyRoutes } from './routes.js';
import { getPolicy, loadActivePolicies, policyView } from './service.js';

export { policySchema, type Policy } from './schemas.js';
export type { PolicySnapshot } from './cache.js';
// The enforce request and answer, for the decision log.
export type { EnforceDecision, EnforceRequest } from './enforce-schemas.js';
// The digest a bound grant stores and the engine computes: one definition for both.
export { parametersDigest } from './parameters-digest.js';
// What the decision log stores and the stats read (docs/decisions.md, "Decision log and policy stats").
export { policyViolationSchema, type PolicyViolation } from './enforce-schemas.js';
export { policyNames } from './names.js';

export const policiesModule = defineModule({
  name: 'policies',
  routes: policyRoutes,
  needs: ['db', 'state'],
  services: ({ db, state }) => {
    const cache = new ActivePolicyCache((orgId) => loadActivePolicies(db, orgId), state);
    return {
      /** A policy of the organization, or NOT_FOUND. */
      get: async (orgId: string, id: string) => policyView(await getPolicy(db, orgId, id)),
      /** The organization's active policies by ascending priority, then id (cached; see cache.ts). */
      activePolicies: (orgId: string) => cache.activePolicies(orgId),
      /** The same with its version, for memoizing what is compiled from them; at once (no promise) when cached. */
      activeSnapshot: (orgId: string) => cache.peek(orgId) ?? cache.snapshot(orgId),
      /** Forgets the organization's active policies on every instance (after a committed change). */
      invalidate: (orgId: string) => cache.invalidate(orgId),
    };
  },
  caches: [POLICY_CACHE],
});

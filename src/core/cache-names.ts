/** Names of the shared caches, as modules declare them (src/core/module.ts `caches`). */

/** Authenticated API keys, forgotten on a key change (src/http/auth.ts, channel auth:invalidate). */
export const AUTH_KEY_CACHE = 'auth:key';
/** Organizations' security settings as authentication reads them (same channel). */
export const AUTH_ORG_CACHE = 'auth:org';
/** Pages of GET /teams (src/lib/response-cache.ts, scope `teams`). */
export const TEAMS_RESPONSE_CACHE = 'response:teams';
/** Agents as the enforce route reads them (src/domains/agents/agent-cache.ts, channel agents:invalidate); ingest invalidates it too. */
export const AGENT_CACHE = 'agents:invalidate';

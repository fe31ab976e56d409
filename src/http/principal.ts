/** Who is calling: roles, scopes and the principal attached to every authenticated request. */
export const ROLES = ['viewer', 'developer', 'admin'] as const;
export type Role = (typeof ROLES)[number];

export const SCOPES = [
  'agent:read',
  'agent:write',
  'trace:read',
  'trace:write',
  'policy:read',
  'policy:write',
  'analytics:read',
] as const;
/** The seven documented scopes plus `admin`, which only an admin principal may grant. */
export const ALL_SCOPES = [...SCOPES, 'admin'] as const;
export type Scope = (typeof ALL_SCOPES)[number];

export interface Principal {
  kind: 'user' | 'api_key' | 'agent_key';
  organizationId: string;
  role: Role;
  scopes: ReadonlySet<Scope>;
  /** Stable id of the actor: the user's id, or the API key's id. */
  userId: string;
  userName: string | null;
  userEmail: string | null;
  keyId?: string;
  /** For agent-scoped keys: the only agent this principal may act for. */
  agentId?: string;
}

/** True when a route's auth names who may call it: a scope, any principal, or the public. */
export const declaresAccess = (a: RouteAuth | undefined): boolean => !!a && (a.public === true || a.anyPrincipal === true || a.scope !== undefined);

const RANK: Record<Role, number> = { viewer: 0, developer: 1, admin: 2 };

/** True when `have` is at least `need`. */
export const roleAtLeast = (have: Role, need: Role) => RANK[have] >= RANK[need];

/** The role an organization API key acts with, derived from its scopes (contract.md). */
export function roleForScopes(scopes: readonly string[]): Role {
  if (scopes.includes('admin')) return 'admin';
  if (scopes.some((s) => s.endsWith(':write'))) return 'developer';
  return 'viewer';
}

/**
 * What a route demands; declared in each route's `config.auth`. Every route must name a `scope`,
 * `anyPrincipal` or `public`, or the app refuses to start (deny by default).
 */
export interface RouteAuth {
  /** Open to anyone (probes, API docs). */
  public?: boolean;
  /** Any authenticated principal with the role for the method: for routes contract.md gives no scope. */
  anyPrincipal?: boolean;
  /** Minimum role; default: viewer for GET/HEAD, developer otherwise. */
  role?: Role;
  /** Scope an API key must hold (users hold all scopes). Scope `admin` also implies role admin. */
  scope?: Scope;
  /** Agent-scoped keys are refused unless a route opts in (deny by default). */
  agentKeys?: boolean;
  /** Rate-limit class; default control. */
  rateLimit?: 'control' | 'ingest' | 'enforce' | false;
}

declare module 'fastify' {
  interface FastifyContextConfig {
    auth?: RouteAuth;
  }
  interface FastifyRequest {
    principal?: Principal;
  }
}

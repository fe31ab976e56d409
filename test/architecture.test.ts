/**
 * Import direction, checked on the source: core knows nothing of HTTP or of domains; a domain (and
 * the HTTP layer, src/http) reaches a domain only through its module (src/domains/<name>/index.ts);
 * a domain reads and writes only the tables it owns, and src/http none. Today's exceptions are listed by name: the list may
 * only shrink (docs/decisions.md, "One shape for every domain").
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, resolve, dirname } from 'node:path';
import { describe, expect, it } from 'vitest';

const SRC = resolve(import.meta.dirname, '../src');

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? filesUnder(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : [],
  );
}

interface Import {
  from: string; // importing file, relative to src
  target: string; // resolved path relative to src, or the package name
  names: string[];
}

const IMPORT_RE = /import\s+(type\s+)?([^'";]*?)\s*from\s*['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)/g;

function importsOf(file: string): Import[] {
  const text = readFileSync(file, 'utf8');
  const out: Import[] = [];
  for (const m of text.matchAll(IMPORT_RE)) {
    const spec = m[3] ?? m[4];
    const clause = m[2] ?? '';
    const names = [...clause.replace(/^[^{]*\{|\}.*$/g, ' ').matchAll(/(?:type\s+)?([A-Za-z_$][\w$]*)(?:\s+as\s+[\w$]+)?/g)].map((x) => x[1]);
    const target = spec.startsWith('.') ? relative(SRC, resolve(dirname(file), spec)).replace(/\.js$/, '.ts') : spec;
    out.push({ from: relative(SRC, file), target, names: clause.includes('{') ? names : [] });
  }
  return out;
}

const files = filesUnder(SRC);
const all = files.flatMap(importsOf);

// Table names in raw SQL (`from traces`, `update agents a`), outside comments.
const SQL_TABLE_RE = /\b(?:from|join|update|into)\s+(organizations|users|teams|team_members|api_keys|api_key_hashes|agents|traces|audit_logs|audit_chain_heads|outbox_events|saved_filters)\b/g;
const SQL_OWNER: Record<string, string> = {
  organizations: 'organizations',
  users: 'users',
  teams: 'teams',
  team_members: 'teams',
  api_keys: 'api-keys',
  api_key_hashes: 'api-keys',
  access_grants: 'access-grants',
  policy_decisions: 'policy-decisions',
  policy_decision_counts: 'policy-decisions',
  agents: 'agents',
  traces: 'traces',
  audit_logs: 'audit',
  audit_chain_heads: 'audit',
  outbox_events: 'events',
  saved_filters: 'saved-filters',
};
const sqlUses = files.flatMap((file) => {
  const from = relative(SRC, file);
  const code = readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => !/^\s*(\/\/|\*|\/\*)/.test(l))
    .join('\n');
  return [...code.matchAll(SQL_TABLE_RE)].map((m) => ({ from, table: m[1] }));
});
const domainOf = (p: string) => (p.startsWith('domains/') ? p.split('/')[1] : null);

// Which domain owns each table object exported by src/db/schema.
const OWNER: Record<string, string> = {
  organizations: 'organizations',
  users: 'users',
  teams: 'teams',
  teamMembers: 'teams',
  apiKeys: 'api-keys',
  apiKeyHashes: 'api-keys',
  accessGrants: 'access-grants',
  policyDecisions: 'policy-decisions',
  policyDecisionCounts: 'policy-decisions',
  agents: 'agents',
  traces: 'traces',
  auditLogs: 'audit',
  auditChainHeads: 'audit',
  outboxEvents: 'events',
  savedFilters: 'saved-filters',
};
// The organizations row also carries the settings (one table, two modules of one owner).
const SHARED_OWNERS: Record<string, string[]> = { organizations: ['organizations', 'settings'] };

// Today's crossings, to be replaced by calls to the owner's module. Never add to these lists.
const KNOWN_DOMAIN_IMPORTS = new Set<string>([
  // JWT sign-in writes the user row; the users module's index.ts does not export the writer yet.
  'http/auth.ts -> domains/users/service.ts',
]);
const KNOWN_TABLE_USES = new Set([
  // Joins kept for speed: team members with their users' names, trace stats with agent names.
  'domains/teams/service.ts uses users',
  'domains/traces/queries.ts uses agents',
]);
// The same, in raw SQL: agent stats read traces.
const KNOWN_SQL_USES = new Set(['domains/agents/service.ts uses traces']);
// Every domain writes its audit entries and events in its own transaction: these are the audit and
// events modules' public functions, reached through their service files until they move to index.ts.
const SHARED_SERVICES = new Set(['domains/audit/service.ts', 'domains/events/outbox.ts', 'domains/events/subscriptions.ts']);

describe('import direction', () => {
  it('src/core imports nothing of HTTP, of the domains, or of the application', () => {
    const bad = all
      .filter((i) => i.from.startsWith('core/'))
      .filter((i) => /^(http|domains)\//.test(i.target) || ['app.ts', 'modules.ts', 'container.ts'].includes(i.target) || i.target.startsWith('fastify') || i.target.startsWith('@fastify'))
      .map((i) => `${i.from} -> ${i.target}`);
    expect(bad).toEqual([]);
  });

  it('a domain reaches another domain only through its module (index.ts)', () => {
    const bad = all
      .filter((i) => domainOf(i.from) && domainOf(i.target) && domainOf(i.from) !== domainOf(i.target))
      .filter((i) => !i.target.endsWith('/index.ts') && !SHARED_SERVICES.has(i.target))
      .map((i) => `${i.from} -> ${i.target}`)
      .filter((edge) => !KNOWN_DOMAIN_IMPORTS.has(edge));
    expect(bad).toEqual([]);
  });

  it('a domain uses only the tables it owns', () => {
    const bad = all
      .filter((i) => domainOf(i.from) && i.target.startsWith('db/schema/'))
      .flatMap((i) => i.names.filter((n) => n in OWNER).map((n) => ({ from: i.from, table: n })))
      .filter(({ from, table }) => !(SHARED_OWNERS[table] ?? [OWNER[table]]).includes(domainOf(from)!))
      .map(({ from, table }) => `${from} uses ${table}`)
      .filter((use) => !KNOWN_TABLE_USES.has(use));
    expect(bad).toEqual([]);
  });

  it('a domain names only its own tables in raw SQL', () => {
    const bad = sqlUses
      .filter(({ from }) => domainOf(from))
      .filter(({ from, table }) => !(SHARED_OWNERS[table] ?? [SQL_OWNER[table]]).includes(domainOf(from)!))
      .map(({ from, table }) => `${from} uses ${table}`)
      .filter((use) => !KNOWN_SQL_USES.has(use));
    expect([...new Set(bad)]).toEqual([]);
  });

  it('src/http reaches a domain only through its module (index.ts)', () => {
    const bad = all
      .filter((i) => i.from.startsWith('http/') && domainOf(i.target))
      .filter((i) => !i.target.endsWith('/index.ts') && !SHARED_SERVICES.has(i.target))
      .map((i) => `${i.from} -> ${i.target}`)
      .filter((edge) => !KNOWN_DOMAIN_IMPORTS.has(edge));
    expect(bad).toEqual([]);
  });

  it('src/http uses no table: it calls the owning module (the authenticator: api-keys and settings)', () => {
    const imported = all
      .filter((i) => i.from.startsWith('http/') && i.target.startsWith('db/schema/'))
      .flatMap((i) => i.names.filter((n) => n in OWNER).map((n) => `${i.from} uses ${n}`));
    const raw = sqlUses.filter(({ from }) => from.startsWith('http/')).map(({ from, table }) => `${from} uses ${table}`);
    expect([...new Set([...imported, ...raw])]).toEqual([]);
  });

  it('the lists of known crossings hold only crossings that still exist', () => {
    const edges = new Set(all.map((i) => `${i.from} -> ${i.target}`));
    const uses = new Set(all.flatMap((i) => i.names.map((n) => `${i.from} uses ${n}`)));
    expect([...KNOWN_DOMAIN_IMPORTS].filter((e) => !edges.has(e))).toEqual([]);
    expect([...KNOWN_TABLE_USES].filter((u) => !uses.has(u))).toEqual([]);
    const raw = new Set(sqlUses.map(({ from, table }) => `${from} uses ${table}`));
    expect([...KNOWN_SQL_USES].filter((u) => !raw.has(u))).toEqual([]);
  });
});

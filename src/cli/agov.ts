/**
 * `agov`: the operator's command line. Talks to the database directly (same configuration as the
 * server: DATABASE_URL, else the embedded PGlite in DATA_DIR).
 */
import { Command, InvalidArgumentError } from 'commander';
import { parseConfig } from '../config.js';
import { openContainer, type Container } from '../container.js';
import { memoryState } from '../lib/shared-state.js';
import { acquireDataDirLock } from '../lib/data-dir-lock.js';
import { ROLES } from '../http/principal.js';
import { sqlStateOf } from '../core/db-errors.js';
import { DomainError } from '../core/errors.js';
import { environmentEnum } from '../http/validation.js';

async function withDatabase<T>(fn: (c: Container) => Promise<T>): Promise<T> {
  const config = parseConfig();
  // The embedded database cannot be opened by two processes at once.
  if (!config.DATABASE_URL) acquireDataDirLock(config.DATA_DIR, 'agov CLI');
  // The CLI's commands publish no cache invalidation, so it needs no Redis (and works while it is down).
  const container = await openContainer(config, { poolSize: 2, state: memoryState() });
  try {
    return await fn(container);
  } finally {
    await container.close();
  }
}

const nonEmpty = (name: string) => (v: string) => {
  if (!v.trim()) throw new InvalidArgumentError(`${name} must not be empty`);
  if (v.length > 255) throw new InvalidArgumentError(`${name} is longer than 255 characters`);
  return v.trim();
};

const program = new Command()
  .name('agov')
  .description('Agent governance control plane: operator commands')
  .showHelpAfterError();

program
  .command('init')
  .description('Create an organization and print its admin API key (shown once)')
  .requiredOption('--org <name>', 'organization name', nonEmpty('--org'))
  .option('--environment <env>', 'environment of the admin key: production, staging or development', 'production')
  .option('--json', 'print the result as JSON')
  .option('--force', 'create it even when an organization of that name exists (refused otherwise)')
  .action(async (opts: { org: string; environment: string; json?: boolean; force?: boolean }) => {
    const env = environmentEnum.safeParse(opts.environment);
    if (!env.success) throw new InvalidArgumentError('--environment must be production, staging or development');
    const out = await withDatabase((c) =>
      c.services.organizations.create({ name: opts.org, environment: env.data, actor: 'cli', allowDuplicateName: opts.force }),
    ).catch((err: unknown) => {
      // A name another organization has (docs/decisions.md, "First start"): say how to go ahead anyway.
      if (err instanceof DomainError && err.code === 'CONFLICT') throw new Error(`${err.message}; pass --force to create another with the same name`);
      throw err;
    });
    if (out.duplicateOf) console.error(`agov: warning: organization "${out.organization.name}" already existed (${out.duplicateOf}); created another (--force)`);
    if (opts.json) {
      console.log(JSON.stringify({ organizationId: out.organization.id, name: out.organization.name, apiKeyId: out.apiKey.id, apiKey: out.key }));
      return;
    }
    console.log(`Organization "${out.organization.name}" created: ${out.organization.id}`);
    console.log(`Admin API key (shown once, store it now):\n\n  ${out.key}\n`);
    console.log(`Try: curl -H "X-API-Key: ${out.key}" http://localhost:${process.env.PORT ?? 3000}/api/v1/health`);
  });

program
  .command('add-user')
  .description('Add a user to an organization (users otherwise appear on their first JWT sign-in)')
  .requiredOption('--org-id <uuid>', 'organization id')
  .requiredOption('--email <email>', 'email address', nonEmpty('--email'))
  .requiredOption('--name <name>', 'display name', nonEmpty('--name'))
  .option('--role <role>', 'viewer, developer or admin', 'viewer')
  .action(async (opts: { orgId: string; email: string; name: string; role: string }) => {
    if (!(ROLES as readonly string[]).includes(opts.role)) throw new InvalidArgumentError('--role must be viewer, developer or admin');
    if (!/^[0-9a-f-]{36}$/i.test(opts.orgId)) throw new InvalidArgumentError('--org-id must be a uuid');
    const user = await withDatabase((c) => c.services.users.create({ organizationId: opts.orgId, email: opts.email, name: opts.name, role: opts.role }));
    console.log(JSON.stringify({ id: user.id, email: user.email, name: user.name, role: user.role }));
  });

program
  .command('migrate')
  .description('Apply database migrations (the server also does this on start)')
  .action(async () => {
    await withDatabase(async (c) => console.log(`Migrations applied to ${c.database.describe}`));
  });

program.parseAsync().catch((err: unknown) => {
  // Foreign key (unknown organization) and other database errors: a plain message, no SQL.
  const code = sqlStateOf(err);
  const message = code === '23503' ? 'unknown organization' : code === '23505' ? 'already exists' : code ? `database error ${code}` : (err as Error).message ?? String(err);
  console.error(`agov: ${message}`);
  process.exit(1);
});

/**
 * First start with no second step (docs/decisions.md, "First start"): on an empty database the API
 * creates a default organization and an admin key, and leaves the key in an owner-only file in
 * DATA_DIR, so `npm start` alone makes the API usable.
 */
import { existsSync, mkdirSync, unlinkSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { sql } from 'drizzle-orm';
import type { Db } from '../../db/client.js';
import type { Clock } from '../../core/clock.js';
import { createOrganizationIn, isEmpty } from './service.js';

/** The name of the organization a first start creates. */
export const DEFAULT_ORGANIZATION_NAME = 'Default';
/** The file in DATA_DIR that receives the first admin key. */
export const ADMIN_KEY_FILE = 'admin-key';

export type FirstStartResult =
  | { created: false }
  | { created: true; organizationId: string; name: string; keyFile: string };

/**
 * On an empty database, creates the default organization with an admin key and writes the key to
 * `<dataDir>/admin-key` (mode 0600, never overwritten); answers `created: false` otherwise. A
 * transaction-scoped advisory lock serializes instances starting together, so one of them creates.
 */
export async function firstStart(db: Db, opts: { dataDir: string; clock: Clock }): Promise<FirstStartResult> {
  // Cheap and lock-free for every start after the first.
  if (!(await isEmpty(db))) return { created: false };
  const keyFile = resolve(join(opts.dataDir, ADMIN_KEY_FILE));
  let written = false;
  try {
    return await db.transaction(async (tx) => {
      await tx.execute(sql`select pg_advisory_xact_lock(hashtextextended('organizations:first-start', 0))`);
      if (!(await isEmpty(tx))) return { created: false as const };
      if (existsSync(keyFile)) {
        throw new Error(
          `${keyFile} exists but the database has no organization: move the file away (it is never overwritten) or create one with agov init`,
        );
      }
      const out = await createOrganizationIn(tx, { name: DEFAULT_ORGANIZATION_NAME, actor: 'first-start', clock: opts.clock });
      mkdirSync(opts.dataDir, { recursive: true, mode: 0o700 });
      // 'wx' refuses an existing file; the mode is set at creation, so the key is never world-readable.
      writeFileSync(keyFile, `${out.key}\n`, { mode: 0o600, flag: 'wx' });
      written = true;
      return { created: true as const, organizationId: out.organization.id, name: out.organization.name, keyFile };
    });
  } catch (err) {
    // The file is written before the commit: a key whose organization was rolled back must not stay behind.
    if (written) unlinkSync(keyFile);
    throw err;
  }
}

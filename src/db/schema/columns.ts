/**
 * What every tenant table shares: the organization it belongs to, a time-ordered id, timestamps,
 * and the primary key (organization_id, id) that lets a table be distributed by organization
 * (docs/decisions.md, "Data model: keys by organization").
 */
import { numeric, primaryKey, timestamp, uuid, type PgColumn } from 'drizzle-orm/pg-core';
import { newId } from './ids.js';
import { organizations } from './organizations.js';

export { newId };

/** `id`: a UUIDv7 made by the application on insert. */
export const idColumn = () => uuid('id').notNull().$defaultFn(newId);

/** `organization_id`, referencing organizations with ON DELETE CASCADE unless `references` is false. */
export const organizationIdColumn = (opts: { references?: boolean } = {}) => {
  const col = uuid('organization_id').notNull();
  return opts.references === false ? col : col.references(() => organizations.id, { onDelete: 'cascade' });
};

/** `created_at`, set by the database on insert. */
export const createdAtColumn = () => timestamp('created_at', { withTimezone: true }).notNull().defaultNow();
/** `updated_at`, set on insert; services stamp it on every change. */
export const updatedAtColumn = () => timestamp('updated_at', { withTimezone: true }).notNull().defaultNow();

/** The key columns of a tenant table: organizationId (see organizationIdColumn) and id. */
export const tenantColumns = (opts: { references?: boolean } = {}) => ({
  organizationId: organizationIdColumn(opts),
  id: idColumn(),
});

/** createdAt and updatedAt, for tables that have both. */
export const timestampColumns = () => ({ createdAt: createdAtColumn(), updatedAt: updatedAtColumn() });

/** The primary key of a tenant table: (organization_id, id). Its index also serves every lookup by id. */
export const tenantPrimaryKey = (t: { organizationId: PgColumn; id: PgColumn }) =>
  primaryKey({ columns: [t.organizationId, t.id] });

/**
 * An amount in USD, exact: numeric(24, 10). Ten decimals keep the cost of a single token of the
 * cheapest models (about 1e-8 USD) with two more digits; fourteen integer digits hold the largest
 * budget accepted (1e12) and any month's accrued spend. Read as a JS number at the edge (JSON
 * carries numbers); sums are done in SQL, where they stay exact.
 */
export const usd = (name: string) => numeric(name, { precision: 24, scale: USD_SCALE, mode: 'number' });
/** Decimals of every USD column. */
export const USD_SCALE = 10;

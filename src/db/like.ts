/** Text search helpers for SQL LIKE / ILIKE. */

/** A LIKE pattern matching `text` literally anywhere: its `\`, `%` and `_` escaped (backslash is PostgreSQL's default LIKE escape). */
export const containsPattern = (text: string) => `%${text.replace(/[\\%_]/g, '\\$&')}%`;

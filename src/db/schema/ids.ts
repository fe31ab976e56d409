/** Id generation for every table (no schema imports here, so any module may import it first). */
import { v7 as uuidv7 } from 'uuid';

/**
 * A new id: a UUIDv7 (time-ordered, so new rows land at the right edge of the primary key index).
 * Ids are generated in the application, never by a column default: one way for every table and
 * both drivers (neither PGlite nor PostgreSQL 15 has uuidv7()). Raw SQL inserts pass ids from here.
 */
export const newId = (): string => uuidv7();

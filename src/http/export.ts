/**
 * Streamed exports (JSON `{ data: [...] }` or CSV with a header row), fed by batches read with
 * keyset pagination: memory stays flat however many rows are exported.
 */
import { Readable } from 'node:stream';
import type { FastifyReply } from 'fastify';
import { stringify } from 'csv-stringify';

export type ExportFormat = 'json' | 'csv';

async function* jsonChunks(batches: AsyncIterable<object[]>) {
  yield '{"data":[';
  let first = true;
  for await (const batch of batches) {
    let chunk = '';
    for (const row of batch) {
      chunk += (first ? '' : ',') + JSON.stringify(row);
      first = false;
    }
    if (chunk) yield chunk;
  }
  yield ']}';
}

async function* rowsOf(batches: AsyncIterable<object[]>, columns: string[]) {
  for await (const batch of batches) {
    for (const row of batch) {
      const r = row as Record<string, unknown>;
      // Objects and arrays become JSON text in their cell.
      yield columns.map((c) => {
        const v = r[c];
        return v === null || v === undefined ? '' : typeof v === 'object' ? JSON.stringify(v) : v;
      });
    }
  }
}

/**
 * Runs the first batch before anything is sent, so that a failing first query (a filter the
 * database rejects, an outage) is an ordinary error response rather than a 200 cut off mid-body.
 */
async function primed<T>(batches: AsyncIterable<T>): Promise<AsyncIterable<T>> {
  const it = batches[Symbol.asyncIterator]();
  const first = await it.next();
  return {
    async *[Symbol.asyncIterator]() {
      if (first.done) return;
      yield first.value;
      for (let n = await it.next(); !n.done; n = await it.next()) yield n.value;
    },
  };
}

/** Sends the batches as a streamed attachment in the requested format. */
export async function sendExport(reply: FastifyReply, format: ExportFormat, name: string, columns: string[], source: AsyncIterable<object[]>) {
  const batches = await primed(source);
  const stamp = new Date().toISOString().slice(0, 10);
  reply.header('Content-Disposition', `attachment; filename="${name}-${stamp}.${format}"`);
  if (format === 'csv') {
    reply.type('text/csv; charset=utf-8');
    // A cell starting with = + - @ tab or CR would run as a formula in a spreadsheet: the library
    // prefixes it with a quote (docs/decisions.md, "Security hardening").
    const csv = stringify({ header: true, columns, escape_formulas: true });
    const source = Readable.from(rowsOf(batches, columns));
    source.on('error', (err) => csv.destroy(err));
    return reply.send(source.pipe(csv));
  }
  reply.type('application/json; charset=utf-8');
  return reply.send(Readable.from(jsonChunks(batches)));
}

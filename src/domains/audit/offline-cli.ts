/**
 * `npm run audit:verify-offline -- <checkpoints.json> [<audit-export.json>] [--key-id HEX ...]`:
 * files saved from GET /audit-logs/checkpoints and GET /audit-logs/export?format=json (README
 * "Verifying the audit log offline"). Exit code 0 when everything verifies, 1 otherwise.
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { verifyOffline, type ExportedEntry, type ListedCheckpoint } from './offline.js';

const { values, positionals } = parseArgs({ allowPositionals: true, options: { 'key-id': { type: 'string', multiple: true } } });
if (positionals.length < 1) {
  console.error('usage: audit:verify-offline <checkpoints.json> [<audit-export.json>] [--key-id HEX ...]');
  process.exit(2);
}
function read(path: string): unknown[] {
  const { data } = JSON.parse(readFileSync(path, 'utf8')) as { data?: unknown };
  if (!Array.isArray(data)) throw new Error(`${path}: expected { "data": [...] } as the API answers`);
  return data;
}
const report = verifyOffline({
  checkpoints: read(positionals[0]) as ListedCheckpoint[],
  entries: positionals[1] ? (read(positionals[1]) as ExportedEntry[]) : undefined,
  trustedKeyIds: values['key-id'],
});
console.log(JSON.stringify(report, null, 2));
process.exit(report.ok ? 0 : 1);

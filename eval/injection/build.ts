/**
 * Writes dev.jsonl and test.jsonl from the two source files: within each (label, class), items
 * alternate dev, test, dev, ... so both halves hold every class. The lines are byte for byte those
 * the earlier Python builder wrote (`{"text": ..., "label": ..., "class": ...}`, keys in that order,
 * `": "` and `", "` separators, non-ASCII characters as they are).
 * Run: npx tsx eval/injection/build.ts
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { B } from './source-benign.js';
import { M } from './source-malicious.js';

interface Row {
  text: string;
  label: 'benign' | 'malicious';
  class: string;
}

const dev: Row[] = [];
const test: Row[] = [];
for (const [label, groups] of [['malicious', M], ['benign', B]] as const) {
  for (const [cls, items] of Object.entries(groups)) {
    if (new Set(items).size !== items.length) throw new Error(`duplicate items in ${label}/${cls}`);
    items.forEach((text, i) => (i % 2 === 0 ? dev : test).push({ text, label, class: cls }));
  }
}

const line = (r: Row) => `{"text": ${JSON.stringify(r.text)}, "label": ${JSON.stringify(r.label)}, "class": ${JSON.stringify(r.class)}}\n`;
for (const [name, rows] of [['dev', dev], ['test', test]] as const) writeFileSync(join(import.meta.dirname, `${name}.jsonl`), rows.map(line).join(''), 'utf8');

const count = (rows: Row[]) => ({ benign: rows.filter((r) => r.label === 'benign').length, malicious: rows.filter((r) => r.label === 'malicious').length });
console.log({ dev: count(dev), test: count(test) });

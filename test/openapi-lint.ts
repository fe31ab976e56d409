/**
 * Lints the OpenAPI document with Spectral (`spectral:oas`, rules set in .spectral.yaml) and Redocly
 * (`recommended`, rules set in redocly.yaml), as libraries: the same configuration files the CLIs
 * read. Run directly (`npm run lint:openapi`), it builds the app on an in-memory PGlite, writes the
 * document to openapi.json (or the path given) and lints it; the exit code is 1 on any error or
 * warning (docs/decisions.md, "OpenAPI document").
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import spectralCore, { type RulesetDefinition } from '@stoplight/spectral-core';
import spectralParsers from '@stoplight/spectral-parsers';
import spectralRulesets from '@stoplight/spectral-rulesets';
import { lintFromString, loadConfig } from '@redocly/openapi-core';

// CommonJS packages: their named exports are read from the default export.
const { Document, Spectral } = spectralCore;
const { Json, parseYaml } = spectralParsers;
const { oas } = spectralRulesets;
const ROOT = join(import.meta.dirname, '..');

export interface Finding {
  tool: 'spectral' | 'redocly';
  severity: 'error' | 'warning' | 'info';
  rule: string;
  message: string;
  path: string;
}

/** Spectral's findings for `doc`, with the rules of .spectral.yaml (its `extends: spectral:oas` and overrides). */
async function spectralFindings(doc: object): Promise<Finding[]> {
  const config = parseYaml(readFileSync(join(ROOT, '.spectral.yaml'), 'utf8')).data as { extends?: unknown; rules?: Record<string, unknown> };
  if (JSON.stringify(config.extends) !== JSON.stringify(['spectral:oas'])) throw new Error('.spectral.yaml must extend exactly ["spectral:oas"]');
  const spectral = new Spectral();
  spectral.setRuleset({ extends: [oas], rules: config.rules ?? {} } as RulesetDefinition);
  const results = await spectral.run(new Document(JSON.stringify(doc, null, 2), Json));
  const severities = ['error', 'warning', 'info', 'info'] as const;
  return results.map((r) => ({ tool: 'spectral', severity: severities[r.severity], rule: String(r.code), message: r.message, path: r.path.join('.') }));
}

/** Redocly's findings for `doc`, with the rules of redocly.yaml. */
async function redoclyFindings(doc: object): Promise<Finding[]> {
  const config = await loadConfig({ configPath: join(ROOT, 'redocly.yaml') });
  const problems = await lintFromString({ source: JSON.stringify(doc, null, 2), absoluteRef: join(ROOT, 'openapi.json'), config });
  return problems.map((p) => ({
    tool: 'redocly',
    severity: p.severity === 'error' ? 'error' : p.severity === 'warn' ? 'warning' : 'info',
    rule: p.ruleId,
    message: p.message,
    path: p.location[0]?.pointer ?? '',
  }));
}

/** Every finding of both linters (infos and hints included; the gate counts errors and warnings). */
export async function lintOpenApi(doc: object): Promise<Finding[]> {
  return [...(await spectralFindings(doc)), ...(await redoclyFindings(doc))];
}

/** `tool severity rule: count` lines, for reports and failure messages. */
export function summarize(findings: Finding[]): string[] {
  const counts = new Map<string, number>();
  for (const f of findings) counts.set(`${f.tool} ${f.severity} ${f.rule}`, (counts.get(`${f.tool} ${f.severity} ${f.rule}`) ?? 0) + 1);
  return [...counts].sort().map(([k, n]) => `${k}: ${n}`);
}

/** The served document of an app built on an in-memory PGlite (no migration: the document needs no data). */
export async function buildOpenApiDocument(): Promise<object> {
  const { parseConfig } = await import('../src/config.js');
  const { openDatabase } = await import('../src/db/client.js');
  const { memoryState } = await import('../src/lib/shared-state.js');
  const { assemble } = await import('../src/container.js');
  const { buildApp } = await import('../src/app.js');
  const config = parseConfig({ LOG_LEVEL: 'silent' });
  const database = await openDatabase({ dataDir: null });
  const container = assemble({ config, database, state: memoryState() });
  const app = await buildApp(container);
  try {
    const res = await app.inject({ method: 'GET', url: '/api-docs.json' });
    return res.json();
  } finally {
    await app.close();
    await container.close();
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const out = process.argv[2] ?? join(ROOT, 'openapi.json');
  const doc = await buildOpenApiDocument();
  writeFileSync(out, JSON.stringify(doc, null, 2) + '\n');
  const findings = (await lintOpenApi(doc)).filter((f) => f.severity !== 'info');
  for (const f of findings) console.log(`${f.tool} ${f.severity} ${f.rule} ${f.path}: ${f.message}`);
  console.log(`openapi: wrote ${out}; ${findings.length} error(s) and warning(s)`);
  for (const line of summarize(findings)) console.log(`  ${line}`);
  process.exit(findings.length ? 1 : 0);
}

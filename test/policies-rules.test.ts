/**
 * ruleDefinition validation per policy type (contract.md, "Policies and enforcement"), the regex
 * admission check and the glob matcher: what the policies routes will answer as 422 fields, and what
 * access_control and action_approval will match.
 */
import { describe, expect, it } from 'vitest';
import { compileGlob, globProblem } from '../src/domains/policies/glob.js';
import { regexProblem } from '../src/domains/policies/regex-safety.js';
import { parseRuleDefinition, POLICY_TYPES, type PolicyType } from '../src/domains/policies/rules.js';

const valid: Record<PolicyType, unknown> = {
  access_control: { allowActions: ['search_*'], denyActions: ['delete_*'], denyResources: ['s3://prod/**'] },
  data_restriction: { detect: ['email', 'credit_card'], patterns: ['EMP-\\d{6}'], scope: 'both' },
  action_approval: { actions: ['send_email'], grantTtlSeconds: 3600, bindParameters: true },
  cost_limit: { maxCostUsdPerRequest: 0.5, maxTokensPerRequest: 4000 },
  quality_threshold: { metric: 'error_rate', max: 0.05, windowMinutes: 60 },
  budget_cap: { maxMonthlyCostUsd: 1000 },
  injection_scan: { threshold: 0.5, scope: 'input' },
  output_classifier: { categories: ['pii', 'secrets', 'url'], blockOn: ['secrets'] },
  custom: { expression: 'request.action.name == "refund" && request.estimatedCostUsd > 10' },
};

describe('parseRuleDefinition', () => {
  it.each(POLICY_TYPES)('accepts the contract shape of %s', (type) => {
    const r = parseRuleDefinition(type, valid[type]);
    expect(r).toMatchObject({ ok: true });
  });

  it('accepts a custom external validator', () => {
    expect(parseRuleDefinition('custom', { validatorUrl: 'https://validator.example.com/check', timeoutMs: 500, failurePolicy: 'fail' })).toMatchObject({ ok: true });
  });

  it('names the offending field by path', () => {
    const r = parseRuleDefinition('data_restriction', { detect: ['email', 'passport'], scope: 'input' });
    expect(r).toEqual({ ok: false, fields: { 'ruleDefinition.detect.1': expect.stringContaining('expected one of') } });
  });

  it('refuses unknown fields by name', () => {
    const r = parseRuleDefinition('budget_cap', { maxMonthlyCostUsd: 10, maxMonthly: 5 });
    expect(r).toEqual({ ok: false, fields: { 'ruleDefinition.maxMonthly': 'is not a known field' } });
  });

  it('refuses a pattern that could backtrack catastrophically, and one that does not compile', () => {
    const r = parseRuleDefinition('data_restriction', { detect: [], patterns: ['EMP-\\d{6}', '(a+)+$', '(a|a){1,30}', '(unclosed'], scope: 'input' });
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(Object.keys(r.fields).sort()).toEqual(['ruleDefinition.patterns.1', 'ruleDefinition.patterns.2', 'ruleDefinition.patterns.3']);
    expect(r.fields['ruleDefinition.patterns.1']).toMatch(/bound every quantifier/);
    expect(r.fields['ruleDefinition.patterns.2']).toMatch(/backtrack/);
    expect(r.fields['ruleDefinition.patterns.3']).toMatch(/not a valid regular expression/);
  });

  it('refuses out-of-range and inconsistent values', () => {
    expect(parseRuleDefinition('injection_scan', { threshold: 1.5, scope: 'input' })).toMatchObject({ ok: false, fields: { 'ruleDefinition.threshold': expect.any(String) } });
    expect(parseRuleDefinition('quality_threshold', { metric: 'error_rate', max: 5, windowMinutes: 10 })).toMatchObject({ ok: false, fields: { 'ruleDefinition.max': expect.any(String) } });
    expect(parseRuleDefinition('output_classifier', { categories: ['pii'], blockOn: ['url'] })).toMatchObject({ ok: false, fields: { 'ruleDefinition.blockOn.0': 'url is not one of categories' } });
    expect(parseRuleDefinition('access_control', {})).toMatchObject({ ok: false, fields: { ruleDefinition: expect.stringContaining('at least one') } });
    expect(parseRuleDefinition('data_restriction', { detect: [], scope: 'input' })).toMatchObject({ ok: false, fields: { 'ruleDefinition.detect': expect.any(String) } });
    expect(parseRuleDefinition('action_approval', { actions: [] })).toMatchObject({ ok: false, fields: { 'ruleDefinition.actions': expect.any(String) } });
    expect(parseRuleDefinition('custom', { validatorUrl: 'ftp://x.example', timeoutMs: 100, failurePolicy: 'fail' })).toMatchObject({ ok: false, fields: { 'ruleDefinition.validatorUrl': expect.any(String) } });
    expect(parseRuleDefinition('access_control', { denyActions: ['x'.repeat(201)] })).toMatchObject({ ok: false, fields: { 'ruleDefinition.denyActions.0': expect.any(String) } });
  });

  it('refuses an unknown policy type', () => {
    expect(parseRuleDefinition('firewall' as PolicyType, {})).toMatchObject({ ok: false, fields: { policyType: expect.any(String) } });
  });
});

describe('regexProblem', () => {
  it('admits bounded patterns and refuses unbounded, backreferencing, lookaround and empty-matching ones', () => {
    for (const ok of ['\\d{3}-\\d{2}-\\d{4}', '[a-z0-9._]{1,64}@[a-z]{1,63}\\.[a-z]{2,10}', '(?:-\\d{4}){3}', '\\bP\\d{7}\\b', '(?:foo|bar)baz']) expect(regexProblem(ok), ok).toBeNull();
    for (const bad of ['a.*b', '(\\w)\\1', 'foo(?!bar)', '(?<=x)y', 'x?', '', 'a'.repeat(300)]) expect(regexProblem(bad), bad).not.toBeNull();
  });

  it('an admitted pattern scans adversarial text in bounded time', () => {
    const re = new RegExp('[a-z0-9._]{1,64}@[a-z]{1,63}\\.[a-z]{2,10}', 'g');
    const text = 'a'.repeat(64) + '@' + 'b'.repeat(63);
    const input = text.repeat(2000); // ~256 KB, every position a near miss
    const t0 = performance.now();
    while (re.exec(input));
    expect(performance.now() - t0).toBeLessThan(2000);
  });
});

describe('globs', () => {
  const m = (g: string, v: string) => compileGlob(g).test(v);
  it('matches *, ** and ? as documented', () => {
    expect(m('send_*', 'send_email')).toBe(true);
    expect(m('send_*', 'read_email')).toBe(false);
    expect(m('db.*', 'db.query')).toBe(true);
    expect(m('s3://bucket/*', 's3://bucket/a')).toBe(true);
    expect(m('s3://bucket/*', 's3://bucket/a/b')).toBe(false);
    expect(m('s3://bucket/**', 's3://bucket/a/b')).toBe(true);
    expect(m('**/secrets/*', 'repo/config/secrets/key')).toBe(true);
    expect(m('**/secrets/*', 'repo/config/secrets/key/more')).toBe(false);
    expect(m('file-?.txt', 'file-1.txt')).toBe(true);
    expect(m('file-?.txt', 'file-12.txt')).toBe(false);
    expect(m('exact_name', 'exact_name')).toBe(true);
    expect(m('exact_name', 'Exact_name')).toBe(false);
    expect(m('lit\\*', 'lit*')).toBe(true);
    expect(m('lit\\*', 'lits')).toBe(false);
    expect(m('*a*b', 'xxaxxb')).toBe(true);
    expect(m('*a*b', 'xxaxxbc')).toBe(false);
  });

  it('never backtracks: many stars against a long near miss', () => {
    const g = compileGlob('*a*a*a*a*a*a*b');
    const t0 = performance.now();
    expect(g.test('a'.repeat(2048))).toBe(false);
    expect(performance.now() - t0).toBeLessThan(500);
  });

  it('refuses empty, too long and dangling-escape globs', () => {
    expect(globProblem('')).not.toBeNull();
    expect(globProblem('x'.repeat(201))).not.toBeNull();
    expect(globProblem('abc\\')).not.toBeNull();
    expect(globProblem('abc\\\\')).toBeNull();
  });
});

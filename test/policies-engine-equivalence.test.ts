/**
 * The engine's answers do not move with its speed work: every decision of a fixed corpus (test/engine-corpus.ts:
 * the injection evaluation set, seeded random texts and JSON, caps-sized inputs; policies of every scanning type,
 * scope and mode) matches the digest the engine gave before (test/fixtures/engine-decisions.json), on a scan-cache
 * miss and on a hit (docs/decisions.md, "Detector speed").
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { corpusDigests, corpusRequests, FIXTURE } from './engine-corpus.js';

describe('engine answers over the corpus', () => {
  it('are those of the reference engine, request by request (violations, warnings, codes, evidence, events)', () => {
    const expected = JSON.parse(readFileSync(FIXTURE, 'utf8')) as string[];
    const actual = corpusDigests();
    expect(actual.length).toBe(expected.length);
    const differ = actual.flatMap((d, i) => (d === expected[i] ? [] : [i]));
    // The first differing request, to reproduce it (its index in corpusRequests()).
    expect(differ.length === 0 ? null : { count: differ.length, first: differ[0], request: JSON.stringify(corpusRequests()[differ[0]]).slice(0, 500) }).toBeNull();
  }, 120_000);
});

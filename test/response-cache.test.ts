/** The response cache is bounded by bytes and evicts the least recent page, never everything at once. */
import { describe, expect, it } from 'vitest';
import { ResponseCache } from '../src/lib/response-cache.js';
import { memoryState } from '../src/lib/shared-state.js';

describe('ResponseCache', () => {
  it('bounds its entries by size in bytes, evicting the least recently used', async () => {
    const state = memoryState();
    const cache = new ResponseCache(state, 60_000, 1000);
    const page = (n: number) => `${n}`.padEnd(300, '.');
    for (const n of [1, 2, 3]) cache.set('org', 'teams', 0, `q${n}`, page(n));
    expect(cache.get('org', 'teams', 'q1')).toBe(page(1)); // now the most recent
    cache.set('org', 'teams', 0, 'q4', page(4)); // 1,200 bytes would not fit: q2 goes
    expect(cache.get('org', 'teams', 'q2')).toBeUndefined();
    expect([1, 3, 4].map((n) => cache.get('org', 'teams', `q${n}`))).toEqual([page(1), page(3), page(4)]);
    // A page larger than the whole budget is not stored at all.
    cache.set('org', 'teams', 0, 'big', 'x'.repeat(1001));
    expect(cache.get('org', 'teams', 'big')).toBeUndefined();
    await state.close();
  });
});

/**
 * Cost estimation from a shipped price table (src/domains/traces/prices.json, USD per million
 * tokens), overridable by PRICE_TABLE_PATH. Model names match exactly, else by the longest known
 * prefix after dropping a provider prefix ("openai/gpt-4o-2024-08-06" is priced as "gpt-4o").
 */
import { readFileSync } from 'node:fs';
import { LRUCache } from 'lru-cache';

type Table = Map<string, [number, number]>;

/** Loads a price table file: `{ models: { name: [inputPerMTok, outputPerMTok] } }`. */
export function loadPriceTable(path?: string): Table {
  const file = path ?? new URL('./prices.json', import.meta.url);
  const json = JSON.parse(readFileSync(file, 'utf8')) as { models: Record<string, [number, number]> };
  const table: Table = new Map();
  for (const [name, pair] of Object.entries(json.models)) {
    if (!Array.isArray(pair) || pair.length !== 2 || !pair.every((n) => typeof n === 'number' && n >= 0)) {
      throw new Error(`price table: ${name} must be [inputPerMillion, outputPerMillion]`);
    }
    table.set(name.toLowerCase(), pair);
  }
  return table;
}

export class Pricing {
  private byLength: string[];
  // Model names come from callers: a bounded LRU, so many distinct names evict the rarest rather
  // than emptying the memo (docs/decisions.md, "Security hardening"). `false` marks unknown models.
  private memo = new LRUCache<string, [number, number] | false>({ max: 10_000 });

  constructor(private table: Table) {
    this.byLength = [...table.keys()].sort((a, b) => b.length - a.length);
  }

  /** Per-million prices of a model, or null when unknown. */
  pricesOf(model: string): [number, number] | null {
    const key = model.toLowerCase().trim();
    const hit = this.memo.get(key);
    if (hit !== undefined) return hit || null;
    const bare = key.includes('/') ? key.slice(key.lastIndexOf('/') + 1) : key;
    let found = this.table.get(bare) ?? null;
    if (!found) {
      // The prefix must end at a separator: "gpt-4" does not price "gpt-4o".
      const prefix = this.byLength.find((name) => bare.startsWith(name) && /^($|[-@:._])/.test(bare.slice(name.length)));
      found = prefix ? this.table.get(prefix)! : null;
    }
    this.memo.set(key, found ?? false);
    return found;
  }

  /**
   * Estimated cost in USD, or null when the model is unknown or there are no token counts.
   * With only totalTokens, all tokens are priced as input (the lower, conservative price).
   */
  estimate(model: string | null | undefined, prompt?: number | null, completion?: number | null, total?: number | null): number | null {
    if (!model) return null;
    const p = this.pricesOf(model);
    if (!p) return null;
    if (prompt == null && completion == null) {
      if (total == null) return null;
      return (total * p[0]) / 1e6;
    }
    return ((prompt ?? 0) * p[0] + (completion ?? 0) * p[1]) / 1e6;
  }
}

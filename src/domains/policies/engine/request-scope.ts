/**
 * Work shared by the policies of one decision, each piece computed on first use and kept for the
 * rest of the request (docs/decisions.md, "Enforcement engine" and "Detector speed"):
 *  - the string leaves of `input` and `output`, walked once per root for every detector;
 *  - each PII kind scanned once per root, whatever the number of data_restriction policies naming
 *    it, in one call over the root's leaves joined (see `joined`);
 *  - the injection scan once per root, for injection_scan policies and the output classifier's
 *    injection category alike;
 *  - each output classifier category once per leaf for all classifiers, pii and secrets taken from
 *    the per-kind scans above;
 *  - one SHA-256 per root: one scan-cache entry holds the root's PII kinds (raw, and located leaf by
 *    leaf), its injection analysis and its output classifier categories, so a repeated text is not
 *    scanned, sorted nor mapped again: only the paths of the findings reported are built;
 *  - the CEL view of the request (`request` + `request.agent`) and the parameters digest.
 */
import { analyseJoined, cachedByText, INJECTION_CAPS, LEAF_GAP, leavesResult, scanInjection, scanInjectionLeaves, type InjectionAnalysis, type InjectionResult } from '../detectors/injection.js';
import { CATEGORY_KINDS, rawLeafFindings, withPath, type LeafCategory, type LeafFinding, type LeafSource, type OutputClassification, type OutputClassifier, type RawLeafFinding } from '../detectors/output-classifier.js';
import { compilePiiDetector, CUSTOM_PATTERN_CHARS, MAX_FINDINGS, textSignals, type PiiDetector, type TextSignals } from '../detectors/pii.js';
import { cachedScan, textDigest, worthCaching } from '../detectors/scan-cache.js';
import type { Finding } from '../detectors/types.js';
import { collectStrings, DEFAULT_CAPS, leafAt, leafStarts, type Leaves } from '../detectors/walk.js';
import { PII_KINDS, type PiiKind } from '../rules.js';
import type { EnforceRequest } from '../enforce-schemas.js';
import type { EngineAgent } from './types.js';
import { parametersDigest } from '../parameters-digest.js';

export type Root = 'input' | 'output';

/**
 * A finding located in one leaf: the leaf's index, offsets in that leaf's string. No path: a path
 * names the request's structure, which the scan-cache key does not, so it is built from the current
 * request's leaves and only for a finding that is reported.
 */
interface LeafHit {
  readonly leaf: number;
  readonly code: string;
  readonly start: number;
  readonly end: number;
  readonly score: number;
}

/** Per leaf, the findings of one output classifier category (`NO_LEAVES`: none in any leaf). */
type RawCategory = ReadonlyArray<readonly RawLeafFinding[] | undefined>;

/**
 * What the scan cache keeps per agent and root text (one entry, filled as the scans run): raw PII
 * findings by kind index (offsets in the joined text), the injection analysis and, valid only for
 * leaves without a NUL (the joined text then names the leaves: see `shared`), each kind's findings
 * located leaf by leaf in the order reported and each output classifier category's findings per leaf.
 */
interface ScanEntry {
  /**
   * What was computed and found nothing, one bit each: PII kind k scanned (bit k), located (bit 8 +
   * k), category c (bit 16 + c). Most texts find nothing: their entry then holds no list at all (an
   * entry lives until evicted, so its size is paid on every miss: see "Fourth pass" in
   * docs/decisions.md); the lists below are made for the first result with a finding.
   */
  none: number;
  pii: Array<readonly Finding[] | undefined> | undefined;
  hits: Array<readonly LeafHit[] | undefined> | undefined;
  categories: Array<RawCategory | undefined> | undefined;
  injection: InjectionAnalysis | undefined;
  /**
   * Per list of custom patterns (its key: compile.ts), its first finding (null: none), as pairs (fewer
   * bytes than a Map for the few such policies), at most MAX_CUSTOM_LISTS; same rule as `hits`.
   */
  custom: Array<string | CustomHit | null> | undefined;
}

const HITS_BIT = 8;
const CATEGORY_BIT = 16;

/** Kind k's raw findings kept in the entry, or undefined: not scanned yet. */
const rawOf = (e: ScanEntry, k: number): readonly Finding[] | undefined => e.pii?.[k] ?? ((e.none >>> k) & 1 ? NO_FINDINGS : undefined);
/** Kind k's findings located leaf by leaf kept in the entry, or undefined. */
const hitsOf = (e: ScanEntry, k: number): readonly LeafHit[] | undefined => e.hits?.[k] ?? ((e.none >>> (HITS_BIT + k)) & 1 ? NO_HITS : undefined);
/** Category c's findings per leaf kept in the entry, or undefined. */
const categoryOf = (e: ScanEntry, c: number): RawCategory | undefined => e.categories?.[c] ?? ((e.none >>> (CATEGORY_BIT + c)) & 1 ? NO_LEAVES : undefined);

/**
 * Lists of custom patterns an entry keeps a first finding for: a hot entry (an agent's resent system
 * prompt) stays in the cache while its organization's patterns change and dry runs try others, so
 * the oldest list goes beyond this.
 */
const MAX_CUSTOM_LISTS = 8;

/** The first finding kept for the list of custom patterns `key` in an entry's pairs, or undefined: not scanned yet. */
function customOf(pairs: ReadonlyArray<string | CustomHit | null>, key: string): CustomHit | null | undefined {
  for (let i = 0; i < pairs.length; i += 2) if (pairs[i] === key) return pairs[i + 1] as CustomHit | null;
  return undefined;
}

/** Keeps a list's first finding in an entry, the oldest list out beyond MAX_CUSTOM_LISTS. */
function keepCustom(e: ScanEntry, key: string, hit: CustomHit | null): void {
  const pairs = (e.custom ??= []);
  if (pairs.length >= 2 * MAX_CUSTOM_LISTS) pairs.splice(0, 2);
  pairs.push(key, hit);
}

function keepRaw(e: ScanEntry, k: number, found: readonly Finding[]): void {
  if (found.length === 0) e.none |= 1 << k;
  else (e.pii ??= new Array(PII_KINDS.length))[k] = found;
}

function keepHits(e: ScanEntry, k: number, hits: readonly LeafHit[]): void {
  if (hits.length === 0) e.none |= 1 << (HITS_BIT + k);
  else (e.hits ??= new Array(PII_KINDS.length))[k] = hits;
}

function keepCategory(e: ScanEntry, c: number, raw: RawCategory): void {
  if (raw === NO_LEAVES) e.none |= 1 << (CATEGORY_BIT + c);
  else (e.categories ??= new Array(LEAF_CATEGORY_COUNT))[c] = raw;
}

/** The first finding of a detector of custom patterns, located in its leaf. */
interface CustomHit extends LeafHit {
  readonly pattern: number;
}

/** A root's state for this request. */
interface RootState {
  leaves: Leaves;
  /** The leaves joined by NUL characters (see `joined`). */
  text?: string;
  /** Each leaf's offset in `text`, computed when a finding is to be mapped back to its leaf. */
  starts?: number[];
  /** Whether some leaf holds a NUL: the joined text then does not tell the leaves apart. */
  nul?: boolean;
  entry?: ScanEntry;
  /** Computed on the first kind that needs them, then shared by every kind (pii.ts, textSignals). */
  signals?: TextSignals;
  /** Per kind, this request's located findings when they cannot be kept in the entry (a leaf holds a NUL). */
  hits?: Array<readonly LeafHit[] | undefined>;
  /** Per kind, the first finding with its path (null: none), as data_restriction reports it. */
  first?: Array<Finding | null | undefined>;
  injection?: InjectionResult;
}

const KIND_INDEX = new Map<PiiKind, number>(PII_KINDS.map((k, i) => [k, i]));
const CATEGORY_INDEX: Readonly<Record<LeafCategory, number>> = { pii: 0, secrets: 1, profanity: 2, url: 3, code: 4 };
const LEAF_CATEGORY_COUNT = 5;

/** The index of a PII kind for `RequestScope.firstPii` (looked up once per policy version, not per request). */
export const piiKindIndex = (kind: PiiKind): number => KIND_INDEX.get(kind)!;
// Shared by every request and cache entry: frozen, so a write by mistake throws instead of leaking.
const NO_HITS: readonly LeafHit[] = Object.freeze([]);
const NO_FINDINGS: readonly Finding[] = Object.freeze([]);
const NO_LEAF_FINDINGS: readonly LeafFinding[] = Object.freeze([]);
const NO_LEAVES: RawCategory = Object.freeze([]);
const noCue = (truncated: boolean): InjectionResult => Object.freeze({ score: 0, top: null, findings: Object.freeze([]) as unknown as Finding[], truncated });
const NO_CUE = noCue(false);
const NO_CUE_TRUNCATED = noCue(true);
const newEntry = (): ScanEntry => ({ none: 0, pii: undefined, hits: undefined, categories: undefined, injection: undefined, custom: undefined });

/** One single-kind detector per PII kind, shared by every policy (compiled at load). */
const KIND_DETECTORS: PiiDetector[] = PII_KINDS.map((kind) => compilePiiDetector({ detect: [kind] }));

/**
 * The injection scan reads the leaves of the engine's walk when they hold fewer characters than its
 * own cap: the two walks then visit the same nodes and cut nothing (same depth and node caps).
 */
const SAME_WALK = INJECTION_CAPS.maxDepth === DEFAULT_CAPS.maxDepth && INJECTION_CAPS.maxNodes === DEFAULT_CAPS.maxNodes;

/** Whether some text holds a NUL. */
function anyNul(texts: readonly string[]): boolean {
  for (let i = 0; i < texts.length; i++) if (texts[i].includes('\0')) return true;
  return false;
}

/** The first match of a detector of custom patterns over `texts`, scanned leaf by leaf within its budget, located in its leaf; null: none. */
function firstCustomHit(detector: PiiDetector, texts: readonly string[]): CustomHit | null {
  const found: Finding[] = [];
  const budget = { custom: CUSTOM_PATTERN_CHARS };
  let i = 0;
  for (; i < texts.length && found.length === 0 && budget.custom > 0; i++) detector.scanText(texts[i], '', found, budget);
  const f = found[0];
  // Found in the leaf just scanned.
  return f ? { leaf: i - 1, code: f.code, start: f.start, end: f.end, score: f.score, pattern: f.pattern ?? 0 } : null;
}

/** A located finding with its leaf's path: the keys and order of a finding scanned leaf by leaf. */
const findingOf = (h: LeafHit, leaves: Leaves): Finding => ({ code: h.code, path: leaves.path(h.leaf), start: h.start, end: h.end, score: h.score });

export class RequestScope implements LeafSource {
  private input?: RootState;
  private output?: RootState;
  /** Per leaf category, per output leaf, its findings with their paths (built on first ask). */
  private categories?: Array<Array<readonly LeafFinding[] | undefined> | undefined>;
  /** Per leaf category, this request's raw findings when the entry cannot keep them (an output leaf holds a NUL). */
  private ownCategories?: Array<RawCategory | undefined>;
  /** Classifications by classifier key: key, classification, key, ... */
  private classifyMemo?: Array<string | OutputClassification>;
  private celMemo: { request: Record<string, unknown> } | null = null;
  private digestMemo: string | null | undefined;

  constructor(
    readonly request: EnforceRequest,
    readonly agent: EngineAgent,
  ) {}

  private root(root: Root): RootState {
    const r = root === 'input' ? this.input : this.output;
    if (r) return r;
    // Every field from the start: one shape, no property store grown as the request fills them in.
    const fresh: RootState = {
      leaves: collectStrings(this.request[root], root),
      text: undefined,
      starts: undefined,
      nul: undefined,
      entry: undefined,
      signals: undefined,
      hits: undefined,
      first: undefined,
      injection: undefined,
    };
    if (root === 'input') this.input = fresh;
    else this.output = fresh;
    return fresh;
  }

  /** The string leaves of `input` or `output`, walked once. */
  leaves(root: Root): Leaves {
    return this.root(root).leaves;
  }

  /**
   * The leaves of `root` joined by NUL characters, for the PII kinds to scan in one call each: no
   * kind's pattern matches a NUL, and each treats it as it treats the end of a string (its
   * lookarounds exclude word characters and separators, never NUL), so the matches are exactly
   * those of a scan leaf by leaf, in the same order (docs/decisions.md, "Detector speed"). The
   * root's scan-cache entry is keyed by this text's digest.
   */
  private joined(r: RootState): ScanEntry {
    if (r.entry) return r.entry;
    const text = r.leaves.texts.join('\0');
    r.text = text;
    // One cache entry per text for all kinds and the injection analysis: one digest per root and request.
    r.entry = worthCaching(text.length) ? cachedScan<ScanEntry>(`${this.agent.id}:${textDigest(text)}`, newEntry) : newEntry();
    return r.entry;
  }

  /**
   * Whether the entry may hold (and answer) what is located leaf by leaf: only when no leaf holds a
   * NUL, since the joined text then names the leaves (its NULs are exactly the separators). Two roots
   * of one text with a NUL in a leaf may split it differently: theirs stays per request.
   */
  private shared(r: RootState): boolean {
    return !(r.nul ??= anyNul(r.leaves.texts));
  }

  /** The first finding of one PII kind over `root` (what data_restriction reports), its path built only for it; undefined: none. */
  firstPii(kind: number, root: Root): Finding | undefined {
    const r = this.root(root);
    const memo = (r.first ??= new Array(PII_KINDS.length));
    let f = memo[kind];
    if (f === undefined) {
      const hits = this.kindHits(kind, r);
      f = memo[kind] = hits.length === 0 ? null : findingOf(hits[0], r.leaves);
    }
    return f ?? undefined;
  }

  /**
   * The first finding of a data_restriction policy's custom patterns (`detector`) over `root`: leaf
   * by leaf, within the detector's character budget (pii.ts, CUSTOM_PATTERN_CHARS), never over the
   * joined text (a user's pattern may match a NUL or use `^`/`$`). Kept in the root's scan-cache
   * entry per list of patterns (`key`, the same list is the same detector) when the PII kinds made one for this request and no
   * leaf holds a NUL: a custom-only policy does not pay a digest for it.
   */
  firstCustom(detector: PiiDetector, key: string, root: Root): Finding | undefined {
    const r = this.root(root);
    const { leaves } = r;
    const entry = r.entry !== undefined && this.shared(r) ? r.entry : undefined;
    let hit = entry?.custom ? customOf(entry.custom, key) : undefined;
    if (hit === undefined) {
      hit = firstCustomHit(detector, leaves.texts);
      if (entry) keepCustom(entry, key, hit);
    }
    // Its path is built now, only for a match (walk.ts builds paths on demand).
    return hit === null ? undefined : { code: 'pii.custom', path: leaves.path(hit.leaf), start: hit.start, end: hit.end, score: hit.score, pattern: hit.pattern };
  }

  /** One kind's findings located leaf by leaf: from the entry when it may hold them, else scanned (once per request and kind). */
  private kindHits(k: number, r: RootState): readonly LeafHit[] {
    const entry = this.joined(r);
    const shared = this.shared(r);
    let hits = shared ? hitsOf(entry, k) : r.hits?.[k];
    if (hits) return hits;
    hits = this.locate(k, r, entry);
    if (shared) keepHits(entry, k, hits);
    else (r.hits ??= new Array(PII_KINDS.length))[k] = hits;
    return hits;
  }

  /** Scans one kind over the joined text (or takes the entry's raw findings) and maps each finding back to its leaf. */
  private locate(k: number, r: RootState, entry: ScanEntry): readonly LeafHit[] {
    const text = r.text!;
    let raw = rawOf(entry, k);
    if (!raw) {
      const found: Finding[] = [];
      KIND_DETECTORS[k].scanText(text, '', found, undefined, (r.signals ??= textSignals(text)));
      keepRaw(entry, k, found);
      raw = found;
    }
    if (raw.length === 0) return NO_HITS;
    const { texts } = r.leaves;
    if (raw.length >= MAX_FINDINGS) {
      // At the cap, which findings are kept depends on the order of the scan: leaf by leaf, as before.
      const found: Finding[] = [];
      const out: LeafHit[] = [];
      for (let i = 0; i < texts.length && found.length < MAX_FINDINGS; i++) {
        const before = found.length;
        KIND_DETECTORS[k].scanText(texts[i], '', found);
        for (let n = before; n < found.length; n++) out.push({ leaf: i, code: found[n].code, start: found[n].start, end: found[n].end, score: found[n].score });
      }
      return out;
    }
    // A kind of several patterns finds pattern by pattern; leaf by leaf it found leaf by leaf:
    // a stable sort by leaf restores that order (the first finding is the policy's evidence).
    const starts = (r.starts ??= leafStarts(texts, 1));
    const order = raw.map((x, n) => ({ n, leaf: leafAt(starts, x.start) })).sort((a, b) => a.leaf - b.leaf || a.n - b.n);
    const out: LeafHit[] = new Array(order.length);
    for (let n = 0; n < order.length; n++) {
      const { n: at, leaf: i } = order[n];
      const x = raw[at];
      out[n] = { leaf: i, code: x.code, start: x.start - starts[i], end: Math.min(x.end - starts[i], texts[i].length), score: x.score };
    }
    return out;
  }

  /** The injection scan of `root`, once per request (and once per repeated text for this agent, scan-cache.ts). */
  injection(root: Root): InjectionResult {
    const r = this.root(root);
    if (r.injection) return r.injection;
    if (!SAME_WALK || r.leaves.chars >= INJECTION_CAPS.maxChars) {
      // Beyond the injection cap the detector reads a shorter walk of its own.
      return (r.injection = scanInjection(this.request[root], root, INJECTION_CAPS, this.agent.id));
    }
    const { leaves } = r;
    if (leaves.texts.length === 0) return (r.injection = scanInjectionLeaves(leaves));
    const entry = this.joined(r);
    // The entry's key names the leaves only when none holds a NUL; otherwise the analysis is cached by its own text.
    // On a hit the blank-line-joined text is not built.
    const analysis = this.shared(r) ? (entry.injection ??= analyseJoined(leaves.texts.join(LEAF_GAP))) : cachedByText(this.agent.id, leaves.texts.join(LEAF_GAP));
    // The usual answer, no cue: one shared (frozen) result, read and never changed by the policies.
    if (analysis.hits.length === 0 && analysis.score === 0) return (r.injection = leaves.truncated ? NO_CUE_TRUNCATED : NO_CUE);
    return (r.injection = leavesResult(leaves, analysis));
  }

  /** Runs `classifier` (named by `key`, its categories) over `output` once per request, its categories' findings shared with the other classifiers. */
  classify(key: string, classifier: OutputClassifier): OutputClassification {
    // A request meets a few classifier keys at most: a list of pairs, not a Map per request.
    const memo = (this.classifyMemo ??= []);
    for (let i = 0; i < memo.length; i += 2) if (memo[i] === key) return memo[i + 1] as OutputClassification;
    // The scope is the classifier's source (leafCategory, outputInjection): no closures per call.
    const c = classifier.classifyLeaves(this.leaves('output'), this);
    memo.push(key, c);
    return c;
  }

  /** The output injection scan, for the classifiers' injection category (LeafSource). */
  outputInjection(): InjectionResult {
    return this.injection('output');
  }

  /** The findings of an output classifier category in one output leaf, with the leaf's path (built only when there is a finding; LeafSource). */
  leafCategory(c: LeafCategory, leaf: number): readonly LeafFinding[] {
    const k = CATEGORY_INDEX[c];
    const raw = this.rawCategory(c, k)[leaf];
    if (raw === undefined || raw.length === 0) return NO_LEAF_FINDINGS;
    const memo = ((this.categories ??= [])[k] ??= []);
    return (memo[leaf] ??= withPath(raw, this.root('output').leaves.path(leaf)));
  }

  /** A category's findings in every output leaf, without paths: from the entry when it may hold them, else computed (once per request). */
  private rawCategory(c: LeafCategory, k: number): RawCategory {
    const r = this.root('output');
    const entry = this.joined(r);
    const shared = this.shared(r);
    let raw = shared ? categoryOf(entry, k) : this.ownCategories?.[k];
    if (raw) return raw;
    const { texts } = r.leaves;
    const computed = (c === 'pii' || c === 'secrets' ? this.kindsByLeaf(CATEGORY_KINDS[c], r) : null) ?? texts.map((t) => rawLeafFindings(c, t));
    raw = computed.every((l) => l === undefined || l.length === 0) ? NO_LEAVES : computed;
    if (shared) keepCategory(entry, k, raw);
    else (this.ownCategories ??= [])[k] = raw;
    return raw;
  }

  /**
   * For each output leaf, the findings of `kinds` as one detector of those kinds finds them in that
   * leaf (kind by kind, at most MAX_FINDINGS), from the per-kind scans; null when a kind reached
   * MAX_FINDINGS over the root, since its list then lacks the later leaves.
   */
  private kindsByLeaf(kinds: readonly PiiKind[], r: RootState): RawCategory | null {
    const lists = kinds.map((kind) => this.kindHits(KIND_INDEX.get(kind)!, r));
    if (lists.some((l) => l.length >= MAX_FINDINGS)) return null;
    const out: RawLeafFinding[][] = new Array(r.leaves.texts.length);
    for (const hits of lists) {
      for (let n = 0; n < hits.length; n++) {
        const h = hits[n];
        const at = (out[h.leaf] ??= []);
        if (at.length < MAX_FINDINGS) at.push({ start: h.start, end: h.end, score: h.score, kind: h.code });
      }
    }
    return out;
  }

  /** The CEL variables: `request`, the enforce body plus `agent` (one object for every expression of the request). */
  cel(): { request: Record<string, unknown> } {
    // Object.assign, not a spread: the same keys in the same order (the body's keys are the schema's, none
    // a setter's name), five times faster here on the parsed body (docs/decisions.md, "Detector speed").
    return (this.celMemo ??= { request: Object.assign({}, this.request, { agent: this.agent }) });
  }

  /** Hex SHA-256 of the canonical JSON of `action.parameters` (`{}` when absent). */
  parametersDigest(): string {
    return (this.digestMemo ??= parametersDigest(this.request.action.parameters));
  }
}

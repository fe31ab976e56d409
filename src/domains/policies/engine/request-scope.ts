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
 *  - one SHA-256 per root: one scan-cache entry holds the root's PII kinds and its injection analysis;
 *  - the CEL view of the request (`request` + `request.agent`) and the parameters digest.
 */
import { analyseJoined, cachedByText, INJECTION_CAPS, scanInjection, scanInjectionLeaves, type InjectionAnalysis, type InjectionResult } from '../detectors/injection.js';
import { CATEGORY_KINDS, LEAF_CATEGORIES, leafFindings, type LeafCategory, type LeafFinding, type OutputClassification, type OutputClassifier } from '../detectors/output-classifier.js';
import { compilePiiDetector, MAX_FINDINGS, textSignals, type PiiDetector, type TextSignals } from '../detectors/pii.js';
import { cachedScan, textDigest, worthCaching } from '../detectors/scan-cache.js';
import type { Finding } from '../detectors/types.js';
import { collectStrings, DEFAULT_CAPS, leafAt, leafStarts, type Leaves } from '../detectors/walk.js';
import { PII_KINDS, type PiiKind } from '../rules.js';
import type { EnforceRequest } from '../enforce-schemas.js';
import type { EngineAgent } from './types.js';
import { parametersDigest } from '../parameters-digest.js';

export type Root = 'input' | 'output';

/** What the scan cache keeps per agent and root text (one entry, filled as the scans run): raw PII findings by kind index, the injection analysis. */
interface ScanEntry {
  pii: Array<Finding[] | undefined>;
  injection?: InjectionAnalysis;
}

/** The findings of one PII kind over a root, with the leaf each lies in. */
interface KindFindings {
  findings: Finding[];
  leaves: number[];
}

/** A root's state for this request. */
interface RootState {
  leaves: Leaves;
  /** The leaves joined by NUL characters (see `joined`). */
  text?: string;
  /** Each leaf's offset in `text`, computed when a finding is to be mapped back to its leaf. */
  starts?: number[];
  /** Whether some leaf holds a NUL: the joined text then does not tell the leaves apart (asked by the injection scan). */
  nul?: boolean;
  entry?: ScanEntry;
  /** Computed on the first kind that needs them, then shared by every kind (pii.ts, textSignals). */
  signals?: TextSignals;
  pii: Array<KindFindings | undefined>;
  injection?: InjectionResult;
}

const KIND_INDEX = new Map<PiiKind, number>(PII_KINDS.map((k, i) => [k, i]));

/** The index of a PII kind for `RequestScope.pii` (looked up once per policy version, not per request). */
export const piiKindIndex = (kind: PiiKind): number => KIND_INDEX.get(kind)!;
const EMPTY: KindFindings = { findings: [], leaves: [] };
const NO_LEAF_FINDINGS: readonly LeafFinding[] = [];

/** One single-kind detector per PII kind, shared by every policy (compiled at load). */
const KIND_DETECTORS: PiiDetector[] = PII_KINDS.map((kind) => compilePiiDetector({ detect: [kind] }));

/**
 * The injection scan reads the leaves of the engine's walk when they hold fewer characters than its
 * own cap: the two walks then visit the same nodes and cut nothing (same depth and node caps).
 */
const SAME_WALK = INJECTION_CAPS.maxDepth === DEFAULT_CAPS.maxDepth && INJECTION_CAPS.maxNodes === DEFAULT_CAPS.maxNodes;

export class RequestScope {
  private input?: RootState;
  private output?: RootState;
  private categories?: Array<ReadonlyArray<readonly LeafFinding[]> | undefined>;
  private classifyMemo?: Map<string, OutputClassification>;
  private celMemo: { request: Record<string, unknown> } | null = null;
  private digestMemo: string | null | undefined;

  constructor(
    readonly request: EnforceRequest,
    readonly agent: EngineAgent,
  ) {}

  private root(root: Root): RootState {
    const r = root === 'input' ? this.input : this.output;
    if (r) return r;
    const fresh: RootState = { leaves: collectStrings(this.request[root], root), pii: [] };
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
    r.entry = worthCaching(text.length) ? cachedScan<ScanEntry>(`${this.agent.id}:${textDigest(text)}`, () => ({ pii: [] })) : { pii: [] };
    return r.entry;
  }

  /** Findings of one PII kind (its piiKindIndex) over `root`, scanned once per request (and once per repeated text, scan-cache.ts). */
  pii(kind: number, root: Root): Finding[] {
    return this.kindFindings(kind, this.root(root)).findings;
  }

  private kindFindings(k: number, r: RootState): KindFindings {
    let f = r.pii[k];
    if (f) return f;
    const entry = this.joined(r);
    const text = r.text!;
    let raw = entry.pii[k];
    if (!raw) {
      raw = [];
      KIND_DETECTORS[k].scanText(text, '', raw, undefined, (r.signals ??= textSignals(text)));
      entry.pii[k] = raw;
    }
    const { leaves } = r;
    const { texts } = leaves;
    if (raw.length === 0) f = EMPTY;
    else if (raw.length >= MAX_FINDINGS) {
      // At the cap, which findings are kept depends on the order of the scan: leaf by leaf, as before.
      f = { findings: [], leaves: [] };
      for (let i = 0; i < texts.length && f.findings.length < MAX_FINDINGS; i++) {
        const before = f.findings.length;
        KIND_DETECTORS[k].scanText(texts[i], leaves.path(i), f.findings);
        for (let n = before; n < f.findings.length; n++) f.leaves.push(i);
      }
    } else {
      // A kind of several patterns finds pattern by pattern; leaf by leaf it found leaf by leaf:
      // a stable sort by leaf restores that order (the first finding is the policy's evidence).
      const starts = (r.starts ??= leafStarts(texts, 1));
      const order = raw.map((x, n) => ({ n, leaf: leafAt(starts, x.start) })).sort((a, b) => a.leaf - b.leaf || a.n - b.n);
      f = { findings: new Array(order.length), leaves: new Array(order.length) };
      for (let n = 0; n < order.length; n++) {
        const { n: at, leaf: i } = order[n];
        const x = raw[at];
        f.findings[n] = { ...x, path: leaves.path(i), start: x.start - starts[i], end: Math.min(x.end - starts[i], texts[i].length) };
        f.leaves[n] = i;
      }
    }
    r.pii[k] = f;
    return f;
  }

  /** The injection scan of `root`, once per request (and once per repeated text for this agent, scan-cache.ts). */
  injection(root: Root): InjectionResult {
    const r = this.root(root);
    if (r.injection) return r.injection;
    if (!SAME_WALK || r.leaves.chars >= INJECTION_CAPS.maxChars) {
      // Beyond the injection cap the detector reads a shorter walk of its own.
      return (r.injection = scanInjection(this.request[root], root, INJECTION_CAPS, this.agent.id));
    }
    const entry = this.joined(r);
    // The entry's key names the leaves only when none holds a NUL; otherwise the analysis is cached by its own text.
    const agentId = this.agent.id;
    const nul = (r.nul ??= r.leaves.texts.some((t) => t.includes('\0')));
    return (r.injection = scanInjectionLeaves(r.leaves, nul ? (join) => cachedByText(agentId, join()) : (join) => (entry.injection ??= analyseJoined(join()))));
  }

  /** Runs `classifier` (named by `key`, its categories) over `output` once per request, its categories' findings shared with the other classifiers. */
  classify(key: string, classifier: OutputClassifier): OutputClassification {
    const memo = (this.classifyMemo ??= new Map());
    let c = memo.get(key);
    if (!c) {
      c = classifier.classifyLeaves(this.leaves('output'), (category, leaf) => this.category(category)[leaf], () => this.injection('output'));
      memo.set(key, c);
    }
    return c;
  }

  /** The findings of an output classifier category, leaf by leaf (computed for every leaf on first use). */
  private category(c: LeafCategory): ReadonlyArray<readonly LeafFinding[]> {
    const memo = (this.categories ??= []);
    const k = LEAF_CATEGORIES.indexOf(c);
    let byLeaf = memo[k];
    if (!byLeaf) {
      const leaves = this.leaves('output');
      byLeaf = (c === 'pii' || c === 'secrets' ? this.kindsByLeaf(CATEGORY_KINDS[c]) : null) ?? leaves.texts.map((_, i) => leafFindings(c, leaves, i));
      memo[k] = byLeaf;
    }
    return byLeaf;
  }

  /**
   * For each output leaf, the findings of `kinds` as one detector of those kinds finds them in that
   * leaf (kind by kind, at most MAX_FINDINGS), from the per-kind scans; null when a kind reached
   * MAX_FINDINGS over the root, since its list then lacks the later leaves.
   */
  private kindsByLeaf(kinds: readonly PiiKind[]): Array<readonly LeafFinding[]> | null {
    const r = this.root('output');
    const lists = kinds.map((kind) => this.kindFindings(KIND_INDEX.get(kind)!, r));
    if (lists.some((l) => l.findings.length >= MAX_FINDINGS)) return null;
    const out: Array<readonly LeafFinding[]> = new Array(r.leaves.texts.length).fill(NO_LEAF_FINDINGS);
    for (const { findings, leaves } of lists) {
      for (let n = 0; n < findings.length; n++) {
        const f = findings[n];
        let at = out[leaves[n]] as LeafFinding[];
        if (at === NO_LEAF_FINDINGS) out[leaves[n]] = at = [];
        if (at.length < MAX_FINDINGS) at.push({ path: f.path, start: f.start, end: f.end, score: f.score, kind: f.code });
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

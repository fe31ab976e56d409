/**
 * Work shared by the policies of one decision, each piece computed on first use and kept for the
 * rest of the request (docs/decisions.md, "Enforcement engine"):
 *  - the string leaves of `input` and `output`, walked once (walk.ts caps);
 *  - each PII kind scanned once per root, whatever the number of data_restriction policies naming it,
 *    in one call over the root's leaves joined (see `joined`);
 *  - the injection scan once per root, for injection_scan policies and the output classifier's
 *    injection category alike;
 *  - each distinct output classifier (same categories) run once;
 *  - the CEL view of the request (`request` + `request.agent`) and the parameters digest.
 */
import { INJECTION_CAPS, scanInjection, type InjectionResult } from '../detectors/injection.js';
import type { OutputClassification, OutputClassifier } from '../detectors/output-classifier.js';
import { compilePiiDetector, MAX_FINDINGS, textSignals, type PiiDetector, type TextSignals } from '../detectors/pii.js';
import { cachedScan, textDigest, worthCaching } from '../detectors/scan-cache.js';
import type { Finding } from '../detectors/types.js';
import { walkStrings } from '../detectors/walk.js';
import type { PiiKind } from '../rules.js';
import type { EnforceRequest } from '../enforce-schemas.js';
import type { EngineAgent } from './types.js';
import { parametersDigest } from '../parameters-digest.js';

export type Root = 'input' | 'output';

interface Leaves {
  texts: string[];
  paths: string[];
  truncated: boolean;
}

/** The leaves joined by NUL characters, with each leaf's offset in the joined text. */
interface Joined {
  text: string;
  starts: number[];
  /** Raw findings by PII kind for this text: shared through the scan cache when the text is worth caching. */
  byKind: Map<PiiKind, Finding[]>;
  /** Computed on the first kind that needs them, then shared by every kind (pii.ts, textSignals). */
  signals?: TextSignals;
}

/** One single-kind detector per PII kind, shared by every policy (compiled on first use). */
const kindDetectors = new Map<PiiKind, PiiDetector>();
const kindDetector = (kind: PiiKind): PiiDetector => {
  let d = kindDetectors.get(kind);
  if (!d) kindDetectors.set(kind, (d = compilePiiDetector({ detect: [kind] })));
  return d;
};

/** Index of the leaf holding joined offset `at` (the last start at or before it). */
function leafAt(starts: number[], at: number): number {
  let lo = 0;
  let hi = starts.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (starts[mid] <= at) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

export class RequestScope {
  private leavesMemo: Partial<Record<Root, Leaves>> = {};
  private joinedMemo: Partial<Record<Root, Joined>> = {};
  private piiMemo = new Map<string, Finding[]>();
  private injectionMemo: Partial<Record<Root, InjectionResult>> = {};
  private classifyMemo = new Map<string, OutputClassification>();
  private celMemo: Record<string, unknown> | null = null;
  private digestMemo: string | null | undefined;

  constructor(
    readonly request: EnforceRequest,
    readonly agent: EngineAgent,
  ) {}

  /** The string leaves of `input` or `output`, walked once. */
  leaves(root: Root): Leaves {
    let l = this.leavesMemo[root];
    if (!l) {
      const texts: string[] = [];
      const paths: string[] = [];
      const value = this.request[root];
      const { truncated } = value === undefined ? { truncated: false } : walkStrings(value, root, (t, p) => (texts.push(t), paths.push(p)));
      this.leavesMemo[root] = l = { texts, paths, truncated };
    }
    return l;
  }

  /**
   * The leaves of `root` joined by NUL characters, for the PII kinds to scan in one call each: no
   * kind's pattern matches a NUL, and each treats it as it treats the end of a string (its
   * lookarounds exclude word characters and separators, never NUL), so the matches are exactly
   * those of a scan leaf by leaf, in the same order (docs/decisions.md, "Detector speed").
   */
  private joined(root: Root): Joined {
    let j = this.joinedMemo[root];
    if (!j) {
      const { texts } = this.leaves(root);
      const starts: number[] = [];
      let at = 0;
      for (const t of texts) (starts.push(at), (at += t.length + 1));
      const text = texts.join('\0');
      // One cache entry per text for all kinds (filled kind by kind): one lookup per root and request.
      const byKind = worthCaching(text.length) ? cachedScan(`${this.agent.id}:pii:${textDigest(text)}`, () => new Map<PiiKind, Finding[]>()) : new Map<PiiKind, Finding[]>();
      this.joinedMemo[root] = j = { text, starts, byKind };
    }
    return j;
  }

  /** Findings of one PII kind over `root`, scanned once per request (and once per repeated text, scan-cache.ts). */
  pii(kind: PiiKind, root: Root): Finding[] {
    const key = `${kind}:${root}`;
    let f = this.piiMemo.get(key);
    if (!f) {
      const j = this.joined(root);
      let raw = j.byKind.get(kind);
      if (!raw) {
        raw = [];
        kindDetector(kind).scanText(j.text, '', raw, undefined, (j.signals ??= textSignals(j.text)));
        j.byKind.set(kind, raw);
      }
      const { paths, texts } = this.leaves(root);
      if (raw.length >= MAX_FINDINGS) {
        // At the cap, which findings are kept depends on the order of the scan: leaf by leaf, as before.
        f = [];
        const d = kindDetector(kind);
        for (let i = 0; i < texts.length && f.length < MAX_FINDINGS; i++) d.scanText(texts[i], paths[i], f);
      } else {
        // A kind of several patterns finds pattern by pattern; leaf by leaf it found leaf by leaf:
        // a stable sort by leaf restores that order (the first finding is the policy's evidence).
        const leaf = raw.map((r) => leafAt(j.starts, r.start));
        f = raw
          .map((r, k) => ({ k, leaf: leaf[k] }))
          .sort((a, b) => a.leaf - b.leaf || a.k - b.k)
          .map(({ k, leaf: i }) => ({ ...raw[k], path: paths[i], start: raw[k].start - j.starts[i], end: Math.min(raw[k].end - j.starts[i], texts[i].length) }));
      }
      this.piiMemo.set(key, f);
    }
    return f;
  }

  /** The injection scan of `root`, once per request (and once per repeated text for this agent, scan-cache.ts). */
  injection(root: Root): InjectionResult {
    return (this.injectionMemo[root] ??= scanInjection(this.request[root], root, INJECTION_CAPS, this.agent.id));
  }

  /** Runs `classifier` (named by `key`, its categories) over `output` once per request. */
  classify(key: string, classifier: OutputClassifier): OutputClassification {
    let c = this.classifyMemo.get(key);
    if (!c) {
      c = classifier.classify(this.request.output, 'output', (_v, root) => this.injection(root as Root));
      this.classifyMemo.set(key, c);
    }
    return c;
  }

  /** The CEL variable `request`: the enforce body plus `agent`. */
  cel(): Record<string, unknown> {
    return (this.celMemo ??= { ...this.request, agent: this.agent });
  }

  /** Hex SHA-256 of the canonical JSON of `action.parameters` (`{}` when absent). */
  parametersDigest(): string {
    return (this.digestMemo ??= parametersDigest(this.request.action.parameters));
  }
}

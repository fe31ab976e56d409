/**
 * Work shared by the policies of one decision, each piece computed on first use and kept for the
 * rest of the request (docs/decisions.md, "Enforcement engine"):
 *  - the string leaves of `input` and `output`, walked once (walk.ts caps);
 *  - each PII kind scanned once per root, whatever the number of data_restriction policies naming it;
 *  - the injection scan once per root, for injection_scan policies and the output classifier's
 *    injection category alike;
 *  - each distinct output classifier (same categories) run once;
 *  - the CEL view of the request (`request` + `request.agent`) and the parameters digest.
 */
import { scanInjection, type InjectionResult } from '../detectors/injection.js';
import type { OutputClassification, OutputClassifier } from '../detectors/output-classifier.js';
import { compilePiiDetector, MAX_FINDINGS, type PiiDetector } from '../detectors/pii.js';
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

/** One single-kind detector per PII kind, shared by every policy (compiled on first use). */
const kindDetectors = new Map<PiiKind, PiiDetector>();
const kindDetector = (kind: PiiKind): PiiDetector => {
  let d = kindDetectors.get(kind);
  if (!d) kindDetectors.set(kind, (d = compilePiiDetector({ detect: [kind] })));
  return d;
};

export class RequestScope {
  private leavesMemo: Partial<Record<Root, Leaves>> = {};
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

  /** Findings of one PII kind over `root`, scanned once per request. */
  pii(kind: PiiKind, root: Root): Finding[] {
    const key = `${kind}:${root}`;
    let f = this.piiMemo.get(key);
    if (!f) {
      f = [];
      const { texts, paths } = this.leaves(root);
      const d = kindDetector(kind);
      for (let i = 0; i < texts.length && f.length < MAX_FINDINGS; i++) d.scanText(texts[i], paths[i], f);
      this.piiMemo.set(key, f);
    }
    return f;
  }

  /** The injection scan of `root`, once per request. */
  injection(root: Root): InjectionResult {
    return (this.injectionMemo[root] ??= scanInjection(this.request[root], root));
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

/**
 * STUB of the decision log module (the lead replaces it with the real one on merge): `record` keeps
 * the last inputs in memory for tests, `flush` does nothing. The real module stores denials, counts
 * every decision and writes the decision's events to the outbox in batches, off the hot path.
 */
import { defineModule } from '../../core/module.js';
import type { EventType } from '../events/outbox.js';
import type { PolicyViolation } from '../policies/index.js';

export interface DecisionRecordInput {
  organizationId: string;
  decisionId: string;
  agentId: string;
  environment: string;
  action: { type: string; name: string; resource: string | null };
  decision: 'allow' | 'deny' | 'require_approval';
  violations: PolicyViolation[];
  warnings: PolicyViolation[];
  evaluatedPolicyIds: readonly string[];
  evaluationMs: number;
  accessGrantId: string | null;
  sessionId: string | null;
  traceId: string | null;
  userId: string | null;
  events: readonly { type: EventType; policyId: string | null; data: Record<string, unknown> }[];
  at: Date;
}

/** Inputs the stub keeps (the newest last). */
const KEEP = 1000;

export const policyDecisionsModule = defineModule({
  name: 'policyDecisions',
  needs: [],
  services: () => {
    const recorded: DecisionRecordInput[] = [];
    return {
      /** Records one decision (sync, no I/O). */
      record(input: DecisionRecordInput): void {
        recorded.push(input);
        if (recorded.length > KEEP) recorded.shift();
      },
      /** Writes what is buffered (the stub has nothing to write). */
      flush: async (): Promise<void> => {},
      /** Test hook of the stub: the inputs recorded so far. */
      recorded: recorded as readonly DecisionRecordInput[],
    };
  },
  caches: [],
});

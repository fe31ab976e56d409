/**
 * Custom validators (custom policies with `validatorUrl`): the HTTP call the route plugs into
 * `EngineContext.callValidator`, and the engine's reading of the answer. The call is bounded twice:
 * `AbortSignal.timeout` on the request, and a timer racing it, so that a validator that stalls never
 * holds a decision past `timeoutMs` (docs/decisions.md, "Enforcement engine").
 */
import { sendOutbound } from '../../../lib/outbound.js';
import type { ValidatorAnswer } from './types.js';

/** Characters of a validator's answer that are read; a longer answer is unreadable. */
export const MAX_VALIDATOR_ANSWER = 16 * 1024;
/** Characters of a validator's `message` copied into the violation. */
export const MAX_VALIDATOR_MESSAGE = 500;

export type ValidatorOutcome = { ok: true; allowed: boolean; message: string | null } | { ok: false; reason: string };

/**
 * A plain `callValidator` through the outbound guard (src/lib/outbound.ts): POST of `body` with
 * `content-type: application/json` and the headers `sign(body)` answers (the enforce route signs
 * with the policy's secret; tests and benchmarks call it unsigned).
 */
export function createHttpValidator(opts: { allowPrivate: boolean; sign?: (body: string) => Record<string, string> }) {
  return async (url: string, body: string, timeoutMs: number): Promise<ValidatorAnswer> => {
    const res = await sendOutbound({
      url,
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(opts.sign?.(body) ?? {}) },
      body,
      timeoutMs,
      maxResponseBytes: MAX_VALIDATOR_ANSWER,
      allowPrivate: opts.allowPrivate,
    });
    return { status: res.status, text: res.truncated ? '' : res.body };
  };
}

/** Calls the validator and reads `{ allowed: boolean, message?: string }`; any other outcome is a failure with its reason. */
export async function askValidator(
  call: (url: string, body: string, timeoutMs: number) => Promise<ValidatorAnswer>,
  url: string,
  body: string,
  timeoutMs: number,
): Promise<ValidatorOutcome> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<'timeout'>((resolve) => (timer = setTimeout(() => resolve('timeout'), timeoutMs)));
  try {
    const answer = await Promise.race([call(url, body, timeoutMs), late]);
    if (answer === 'timeout') return { ok: false, reason: 'timeout' };
    if (answer.status < 200 || answer.status > 299) return { ok: false, reason: `status ${answer.status}` };
    let parsed: unknown;
    try {
      parsed = JSON.parse(answer.text);
    } catch {
      return { ok: false, reason: 'unreadable answer' };
    }
    const a = parsed as { allowed?: unknown; message?: unknown } | null;
    if (!a || typeof a !== 'object' || typeof a.allowed !== 'boolean') return { ok: false, reason: 'unreadable answer' };
    const message = typeof a.message === 'string' ? a.message.slice(0, MAX_VALIDATOR_MESSAGE) : null;
    return { ok: true, allowed: a.allowed, message };
  } catch (err) {
    const name = (err as Error)?.name;
    // The outbound guard names a refused private address (docs/decisions.md, "Outbound calls").
    const kind = (err as { kind?: unknown })?.kind;
    const timedOut = name === 'TimeoutError' || name === 'AbortError' || kind === 'timeout';
    return { ok: false, reason: timedOut ? 'timeout' : kind === 'private_target' ? 'private target refused' : 'unreachable' };
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Outbound HTTP calls to addresses our users give us (webhooks, notification channels, custom
 * validators), guarded against server-side request forgery (docs/decisions.md, "Outbound calls").
 *
 * - Only http and https URLs, without credentials in them.
 * - Unless private targets are allowed (ALLOW_PRIVATE_TARGETS; refused by default in production),
 *   every address the name resolves to must be public unicast: loopback, private, link-local (cloud
 *   metadata 169.254.169.254), unique-local, carrier-grade NAT, multicast and reserved ranges are
 *   refused. The check runs in the socket's own DNS lookup, so the address checked is the address
 *   connected to: a name that resolves to a public address once and a private one later (DNS
 *   rebinding) cannot slip through. An IP literal is checked before connecting (no lookup runs).
 * - Redirects are never followed: a 3xx is answered as it is, and callers treat it as a failure.
 * - One deadline bounds the whole call (DNS, connect, TLS, headers, body), and the response body is
 *   read up to a cap, so a slow or huge answer never holds a worker.
 */
import dns from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import { performance } from 'node:perf_hooks';
import ipaddr from 'ipaddr.js';

/** Why an outbound call failed, as callers report it (webhook deliveries, channel tests). */
export type OutboundErrorKind = 'invalid_url' | 'private_target' | 'dns' | 'refused' | 'timeout' | 'tls' | 'network';

/** A call that got no HTTP answer. `message` is safe to show and store: it holds no payload. */
export class OutboundError extends Error {
  constructor(
    readonly kind: OutboundErrorKind,
    message: string,
  ) {
    super(message);
    this.name = 'OutboundError';
  }
}

export interface OutboundRequest {
  url: string;
  method?: 'GET' | 'POST' | 'PUT';
  headers?: Record<string, string>;
  body?: string;
  /** Deadline of the whole call, from DNS to the last byte read. */
  timeoutMs: number;
  /** Bytes of the response body kept; the rest is discarded and `truncated` is set (default 64 KiB). */
  maxResponseBytes?: number;
  /** True to reach loopback and private addresses (config `allowPrivateTargets`). */
  allowPrivate: boolean;
}

export interface OutboundResponse {
  status: number;
  statusText: string;
  headers: http.IncomingHttpHeaders;
  /** The body as UTF-8, at most maxResponseBytes bytes of it. */
  body: string;
  truncated: boolean;
  durationMs: number;
}

const DEFAULT_MAX_RESPONSE_BYTES = 64 * 1024;

// Sockets are kept alive per origin, so a busy receiver costs one TLS handshake, not one per event.
// Reused sockets were checked when they connected (the lookup below runs on every new connection).
const agents = {
  http: new http.Agent({ keepAlive: true, maxSockets: 64 }),
  https: new https.Agent({ keepAlive: true, maxSockets: 64 }),
};

/** True when `address` is a public unicast address (IPv4-mapped IPv6 is judged as the IPv4 it maps). */
export function isPublicAddress(address: string): boolean {
  let a: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    a = ipaddr.process(address);
  } catch {
    return false;
  }
  // ipaddr.js names every special range (loopback, private, linkLocal, uniqueLocal, carrierGradeNat,
  // multicast, reserved, unspecified, 6to4, teredo, ...); only plain unicast is public.
  return a.range() === 'unicast';
}

const isLocalName = (host: string) => host === 'localhost' || host.endsWith('.localhost');

/** The hostname of a URL without IPv6 brackets. */
const bareHost = (u: URL) => u.hostname.replace(/^\[(.*)\]$/, '$1');

/** True when the URL names localhost or a non-public IP literal (a name is judged only after DNS, at send time). */
export function isPrivateHost(u: URL): boolean {
  const host = bareHost(u);
  return isLocalName(host) || (ipaddr.isValid(host) && !isPublicAddress(host));
}

/**
 * What is wrong with `url` as an outbound target, or null: the check at creation time (422 naming the
 * field). Names are resolved only at send time, where the address connected to is what counts.
 */
export function targetUrlProblem(url: string, opts: { allowPrivate: boolean }): string | null {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return 'must be an absolute http or https URL';
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') return 'must use http or https';
  if (u.username || u.password) return 'must not carry credentials';
  if (!opts.allowPrivate && isPrivateHost(u)) return 'must not target a loopback or private address';
  return null;
}

/** A socket lookup that answers only public addresses (every address of the name must be public). */
export const publicOnlyLookup: LookupFunction = (hostname, options, callback) => {
  dns.lookup(hostname, { ...options, all: true }, (err, addresses) => {
    if (err) return callback(err, '', 0);
    const list = addresses as dns.LookupAddress[];
    const refused = list.find((a) => !isPublicAddress(a.address));
    if (refused || list.length === 0) {
      const e = new OutboundError('private_target', `${hostname} resolves to a loopback, private or reserved address`);
      return callback(e as NodeJS.ErrnoException, '', 0);
    }
    if ((options as dns.LookupOptions).all) (callback as unknown as (e: null, a: dns.LookupAddress[]) => void)(null, list);
    else callback(null, list[0].address, list[0].family);
  });
};

const TLS_CODES = /^(EPROTO|ERR_TLS|ERR_SSL|CERT_|UNABLE_TO_|DEPTH_ZERO|SELF_SIGNED|HOSTNAME_MISMATCH)/;

/** Maps a socket error to a kind and a message that names no payload. */
function classify(err: NodeJS.ErrnoException): OutboundError {
  if (err instanceof OutboundError) return err;
  const code = err.code ?? '';
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN' || code === 'EAI_FAIL') return new OutboundError('dns', `DNS lookup failed (${code})`);
  if (code === 'ECONNREFUSED') return new OutboundError('refused', 'connection refused');
  if (code === 'ETIMEDOUT') return new OutboundError('timeout', 'connect timed out');
  if (TLS_CODES.test(code)) return new OutboundError('tls', `TLS failed (${code})`);
  if (code === 'ECONNRESET' || code === 'EPIPE') return new OutboundError('network', `connection reset (${code})`);
  return new OutboundError('network', code ? `network error (${code})` : 'network error');
}

/**
 * Sends one request under the guard and answers the HTTP response (any status, 3xx included), or
 * throws OutboundError when there was none.
 */
export function sendOutbound(req: OutboundRequest): Promise<OutboundResponse> {
  const problem = targetUrlProblem(req.url, { allowPrivate: req.allowPrivate });
  if (problem) {
    const kind = problem.includes('private') ? 'private_target' : 'invalid_url';
    return Promise.reject(new OutboundError(kind, `The URL ${problem}`));
  }
  const u = new URL(req.url);
  const secure = u.protocol === 'https:';
  const max = req.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES;
  const started = performance.now();
  const body = req.body === undefined ? undefined : Buffer.from(req.body);
  const headers: Record<string, string> = { ...req.headers };
  if (body) headers['content-length'] = String(body.length);

  return new Promise((resolve, reject) => {
    let settled = false;
    const finish = (f: () => void) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      f();
    };
    const request = (secure ? https : http).request(
      u,
      {
        method: req.method ?? 'POST',
        headers,
        agent: secure ? agents.https : agents.http,
        // The guard: every new connection resolves through it (IP literals were checked above).
        lookup: req.allowPrivate ? undefined : publicOnlyLookup,
      },
      (res) => {
        const chunks: Buffer[] = [];
        let kept = 0;
        let truncated = false;
        res.on('data', (chunk: Buffer) => {
          if (kept >= max) {
            truncated = true;
            // Enough read: stop the transfer instead of draining a huge body.
            res.destroy();
            return;
          }
          const part = chunk.length > max - kept ? chunk.subarray(0, max - kept) : chunk;
          if (part.length < chunk.length) truncated = true;
          chunks.push(part);
          kept += part.length;
        });
        const done = () =>
          finish(() =>
            resolve({
              status: res.statusCode ?? 0,
              statusText: res.statusMessage ?? '',
              headers: res.headers,
              body: Buffer.concat(chunks).toString('utf8'),
              truncated,
              durationMs: performance.now() - started,
            }),
          );
        res.on('end', done);
        // A body cut short by the receiver is no answer; one we cut at the cap is.
        res.on('close', () => (res.complete || truncated ? done() : finish(() => reject(new OutboundError('network', 'the response ended early')))));
        res.on('error', (err) => (truncated ? done() : finish(() => reject(classify(err)))));
      },
    );
    const timer = setTimeout(() => {
      finish(() => reject(new OutboundError('timeout', `no answer within ${req.timeoutMs} ms`)));
      request.destroy();
    }, req.timeoutMs);
    request.on('error', (err) => finish(() => reject(classify(err))));
    request.end(body);
  });
}

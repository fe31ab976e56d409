/**
 * The outbound guard (src/lib/outbound.ts) against real local servers: answers of every kind,
 * redirects not followed, the body cap, the deadline, refused and TLS-failing targets, and private
 * targets refused both as literals and after DNS.
 */
import { once } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { hostname } from 'node:os';
import dns from 'node:dns/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isPublicAddress, OutboundError, sendOutbound, targetUrlProblem } from '../src/lib/outbound.js';

let server: http.Server;
let base: string;
const received: { method: string; body: string; headers: http.IncomingHttpHeaders }[] = [];

beforeAll(async () => {
  server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      received.push({ method: req.method!, body, headers: req.headers });
      if (req.url === '/ok') res.writeHead(200, { 'content-type': 'text/plain' }).end('fine');
      else if (req.url === '/redirect') res.writeHead(302, { location: '/ok' }).end();
      else if (req.url === '/huge') {
        res.writeHead(200);
        const chunk = Buffer.alloc(64 * 1024, 'x');
        let sent = 0;
        const pump = () => {
          while (sent < 50 && res.write(chunk)) sent++;
          if (sent < 50) res.once('drain', pump);
          else res.end();
        };
        pump();
      } else if (req.url === '/slow') setTimeout(() => res.writeHead(200).end('late'), 2_000).unref();
      else if (req.url === '/cut') {
        res.writeHead(200, { 'content-length': '100' });
        res.write('partial');
        setTimeout(() => res.destroy(), 20);
      } else res.writeHead(500, 'Boom').end('no');
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  server.close();
});

const send = (path: string, extra: Partial<Parameters<typeof sendOutbound>[0]> = {}) =>
  sendOutbound({ url: `${base}${path}`, body: '{"a":1}', headers: { 'content-type': 'application/json' }, timeoutMs: 1_000, allowPrivate: true, ...extra });

const failure = async (p: Promise<unknown>) => {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(OutboundError);
  return err as OutboundError;
};

describe('outbound calls', () => {
  it('answers the status, text and body, and sends the body and headers', async () => {
    const res = await send('/ok');
    expect(res).toMatchObject({ status: 200, statusText: 'OK', body: 'fine', truncated: false });
    expect(received.at(-1)).toMatchObject({ method: 'POST', body: '{"a":1}', headers: { 'content-type': 'application/json' } });
    expect((await send('/error')).status).toBe(500);
  });

  it('does not follow redirects', async () => {
    const res = await send('/redirect');
    expect(res.status).toBe(302);
    expect(received.at(-1)!.headers.host).toContain('127.0.0.1');
  });

  it('keeps at most maxResponseBytes of a huge body', async () => {
    const res = await send('/huge', { maxResponseBytes: 1000 });
    expect(res.status).toBe(200);
    expect(res.body.length).toBe(1000);
    expect(res.truncated).toBe(true);
  });

  it('gives up at the deadline', async () => {
    expect((await failure(send('/slow', { timeoutMs: 100 }))).kind).toBe('timeout');
  });

  it('reports a body cut short as a network failure', async () => {
    expect((await failure(send('/cut'))).kind).toBe('network');
  });

  it('reports a refused connection and a TLS failure', async () => {
    const closed = http.createServer();
    closed.listen(0, '127.0.0.1');
    await once(closed, 'listening');
    const port = (closed.address() as AddressInfo).port;
    closed.close();
    await once(closed, 'close');
    expect((await failure(sendOutbound({ url: `http://127.0.0.1:${port}/`, timeoutMs: 1_000, allowPrivate: true }))).kind).toBe('refused');
    // An https call to a plain-http server fails its handshake.
    const tls = await failure(sendOutbound({ url: base.replace('http:', 'https:') + '/ok', timeoutMs: 1_000, allowPrivate: true }));
    expect(tls.kind).toBe('tls');
  });

  it('refuses private literals, local names and bad schemes before connecting', async () => {
    const before = received.length;
    expect((await failure(send('/ok', { allowPrivate: false }))).kind).toBe('private_target');
    for (const url of ['http://localhost:1/', 'http://[::1]/', 'http://169.254.169.254/latest/meta-data', 'http://10.1.2.3/', 'http://[::ffff:127.0.0.1]/']) {
      expect(targetUrlProblem(url, { allowPrivate: false }), url).toMatch(/private/);
    }
    expect(targetUrlProblem('ftp://example.com/', { allowPrivate: true })).toMatch(/http/);
    expect(targetUrlProblem('https://user:pw@example.com/', { allowPrivate: true })).toMatch(/credentials/);
    expect(targetUrlProblem('not a url', { allowPrivate: true })).toMatch(/absolute/);
    expect(targetUrlProblem('https://example.com/hook', { allowPrivate: false })).toBeNull();
    expect(received.length).toBe(before);
  });

  it('refuses a name that resolves to a private address, checked at connect time', async () => {
    const name = hostname();
    const addresses = await dns.lookup(name, { all: true }).catch(() => []);
    // This machine's own name resolves to a loopback or private address in every set-up we run on.
    if (addresses.length === 0 || addresses.some((a) => isPublicAddress(a.address))) return;
    const port = new URL(base).port;
    const before = received.length;
    expect(targetUrlProblem(`http://${name}:${port}/ok`, { allowPrivate: false })).toBeNull();
    const err = await failure(sendOutbound({ url: `http://${name}:${port}/ok`, timeoutMs: 1_000, allowPrivate: false }));
    expect(err.kind).toBe('private_target');
    expect(received.length).toBe(before);
    // The same name with private targets allowed reaches the server.
    expect((await sendOutbound({ url: `http://${name}:${port}/ok`, timeoutMs: 1_000, allowPrivate: true })).status).toBe(200);
  });

  it('classifies public and special addresses', () => {
    expect(isPublicAddress('93.184.216.34')).toBe(true);
    expect(isPublicAddress('2606:4700:4700::1111')).toBe(true);
    for (const a of ['127.0.0.1', '10.0.0.1', '172.16.0.1', '192.168.1.1', '169.254.169.254', '100.64.0.1', '0.0.0.0', '::1', 'fd00::1', 'fe80::1', '::ffff:10.0.0.1', '224.0.0.1', 'nonsense']) {
      expect(isPublicAddress(a), a).toBe(false);
    }
  });
});

/**
 * The audit checkpoint signer: an Ed25519 key held outside the database (docs/decisions.md
 * "Audit checkpoints"). The key id is the hex SHA-256 of the public key's DER (SPKI) encoding.
 */
import { createHash, createPrivateKey, createPublicKey, generateKeyPairSync, sign, verify, type KeyObject } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { CheckpointSigner } from '../../core/module.js';

/** An Ed25519 signer: the shape core declares for the container (src/core/module.ts). */
export type AuditSigner = CheckpointSigner;

/** The key id of a public key: hex SHA-256 of its DER (SPKI) encoding. */
export function keyIdOf(publicKey: KeyObject | string): string {
  const key = typeof publicKey === 'string' ? createPublicKey(publicKey) : publicKey;
  return createHash('sha256').update(key.export({ type: 'spki', format: 'der' })).digest('hex');
}

/** A signer over an Ed25519 private key (throws when the key is not Ed25519). */
export function signerFromPrivateKey(privateKey: KeyObject): AuditSigner {
  if (privateKey.asymmetricKeyType !== 'ed25519') {
    throw new Error(`AUDIT_SIGNING_KEY must be an Ed25519 private key, got ${privateKey.asymmetricKeyType ?? 'a non-asymmetric key'}`);
  }
  const publicKey = createPublicKey(privateKey);
  return {
    keyId: keyIdOf(publicKey),
    publicKeyPem: publicKey.export({ type: 'spki', format: 'pem' }).toString(),
    sign: (message) => sign(null, Buffer.from(message, 'utf8'), privateKey).toString('base64'),
  };
}

/** A fresh in-memory signer (tests, and an app built without one: see buildApp). */
export const ephemeralSigner = () => signerFromPrivateKey(generateKeyPairSync('ed25519').privateKey);

/** True when `signature` (base64) is a valid Ed25519 signature of `message` by `publicKeyPem`. */
export function signatureVerifies(publicKeyPem: string, message: string, signature: string): boolean {
  try {
    return verify(null, Buffer.from(message, 'utf8'), createPublicKey(publicKeyPem), Buffer.from(signature, 'base64'));
  } catch {
    return false; // an unreadable key or signature verifies nothing
  }
}

function parsePem(pem: string, from: string): KeyObject {
  try {
    return createPrivateKey(pem);
  } catch {
    throw new Error(`AUDIT_SIGNING_KEY: ${from} is not a readable PKCS#8 PEM private key`);
  }
}

export const KEY_FILE_NAME = 'audit-signing-key.pem';

export interface SignerLog {
  info(msg: string): void;
  warn(msg: string): void;
}

/**
 * The server's signer: `AUDIT_SIGNING_KEY` holds a PKCS#8 PEM, or a path to a file holding one;
 * unset, the key is read from `<DATA_DIR>/audit-signing-key.pem`, generated there (mode 0600) on first
 * start. Never refuses to start for want of a key; warns where a generated key is a weak choice.
 */
export function loadAuditSigner(
  opts: { AUDIT_SIGNING_KEY?: string; DATA_DIR: string; production: boolean; postgres: boolean },
  log: SignerLog,
): AuditSigner {
  const given = opts.AUDIT_SIGNING_KEY;
  if (given) {
    if (given.includes('-----BEGIN')) return signerFromPrivateKey(parsePem(given, 'the value'));
    const path = resolve(given);
    if (!existsSync(path)) throw new Error(`AUDIT_SIGNING_KEY: neither a PEM key nor an existing file: ${path}`);
    return signerFromPrivateKey(parsePem(readFileSync(path, 'utf8'), path));
  }
  const path = resolve(join(opts.DATA_DIR, KEY_FILE_NAME));
  let signer: AuditSigner;
  if (existsSync(path)) {
    signer = signerFromPrivateKey(parsePem(readFileSync(path, 'utf8'), path));
    log.info(`audit signing key loaded from ${path} (keyId ${signer.keyId})`);
  } else {
    mkdirSync(opts.DATA_DIR, { recursive: true });
    const { privateKey } = generateKeyPairSync('ed25519');
    // 'wx': never overwrite a key another process wrote meanwhile; 0600: owner-only.
    writeFileSync(path, privateKey.export({ type: 'pkcs8', format: 'pem' }), { mode: 0o600, flag: 'wx' });
    signer = signerFromPrivateKey(privateKey);
    log.info(`audit signing key generated at ${path} (keyId ${signer.keyId}); back it up outside the database`);
  }
  // Deliberate: warn, do not refuse (contract: "with a warning in production"). See docs/decisions.md.
  if (opts.production || opts.postgres) {
    log.warn(
      `AUDIT_SIGNING_KEY is not set: audit checkpoints are signed with the key file ${path}. ` +
        'Set AUDIT_SIGNING_KEY to one key shared by every instance and kept outside the database host; ' +
        'instances with different keys cannot vouch for each other\'s checkpoints.',
    );
  }
  return signer;
}

/** Generating, hashing and recognising API key strings. */
import { createHash, randomBytes } from 'node:crypto';
import type { Environment } from '../../http/validation.js';

export const KEY_PREFIX: Record<Environment, string> = {
  production: 'svc_prod_',
  staging: 'svc_stg_',
  development: 'svc_dev_',
};

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const KEY_RE = /^svc_(prod|stg|dev)_[0-9A-Za-z_-]{32,200}$/;

/** A new key: environment prefix + 43 base62 characters (256 bits of randomness). */
export function generateKey(environment: Environment): string {
  let out = '';
  // Rejection sampling keeps every character equally likely (248 = 4 * 62).
  while (out.length < 43) {
    for (const b of randomBytes(64)) {
      if (b < 248) out += BASE62[b % 62];
      if (out.length === 43) break;
    }
  }
  return KEY_PREFIX[environment] + out;
}

/** SHA-256 (hex) of a key: what is stored and looked up. */
export const hashKey = (key: string) => createHash('sha256').update(key).digest('hex');

/** The first 15 characters, shown in listings. */
export const prefixOf = (key: string) => key.slice(0, 15);

/** True when a string has the key form (so a Bearer token is a key, not a JWT). */
export const looksLikeKey = (s: string) => s.startsWith('svc_');

/** Validates a caller-provided key (headless init) and answers its environment, or null. */
export function environmentOfKey(key: string): Environment | null {
  const m = KEY_RE.exec(key);
  if (!m) return null;
  return m[1] === 'prod' ? 'production' : m[1] === 'stg' ? 'staging' : 'development';
}

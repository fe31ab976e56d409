/**
 * PII and credential detectors for data_restriction (and the output classifier's pii and secrets
 * categories). Each kind is one linear regular expression (bounded quantifiers, no nested ones)
 * plus a validator where the format has one: Luhn and issuer prefixes for cards, area/group/serial
 * ranges for SSNs, the country length and mod-97 checksum for IBANs, ipaddr.js for IPv6, a decodable
 * JSON header for JWTs, entropy for keyword-anchored generic secrets. What each does not catch is in
 * docs/decisions.md ("Policy detectors").
 */
import ipaddr from 'ipaddr.js';
import type { PiiKind } from '../rules.js';
import type { Finding, ScanResult } from './types.js';
import { collectStrings, DEFAULT_CAPS, type WalkCaps } from './walk.js';

/** Findings per scan beyond which the scan stops (the first are enough to decide and to show). */
export const MAX_FINDINGS = 100;
/**
 * Characters per scan that custom patterns read: an admitted pattern may still try up to
 * MAX_AMBIGUITY paths per position (regex-safety.ts), so they read less than the built-in kinds.
 */
export const CUSTOM_PATTERN_CHARS = 64 * 1024;

interface Kind {
  code: string;
  re: RegExp;
  /** Cheap test on the whole string before running `re`. */
  pre?: (text: string) => boolean;
  /** Test on the text's signals (one pass shared by every kind) before running `re`; never false when `re` could match. */
  gate?: (s: TextSignals) => boolean;
  /** The next match from `from`, when a search around an anchor character is cheaper than `re` over the whole text (same matches). */
  find?: (text: string, from: number) => RegExpExecArray | null;
  /** Score of a candidate match, 0 to drop it. `m[1]`, when the regex has a group, locates the secret. */
  score: (m: RegExpExecArray) => number;
}

const hasDigit = (t: string) => /\d/.test(t);

/**
 * What one pass over a text tells the kinds' gates (docs/decisions.md, "Detector speed"). Each gate
 * is a necessary condition of its kind's pattern, so a closed gate skips only texts the pattern
 * cannot match (or whose matches its validator would drop).
 */
export interface TextSignals {
  /** Most digits in one cluster: digits at most two of ` .()-/` apart (cards 12+, SSNs 9, phones 8+). */
  digitCluster: number;
  /** A digit-dot-digit chain with three dots (the shape of an IPv4 address). */
  dotted: boolean;
  /** Most colons in one run of hex digits, colons and dots (an IPv6 address has two or more). */
  colons: number;
  /** Two capitals followed by two digits (the opening of an IBAN). */
  ibanStart: boolean;
  plus: boolean;
  /** One of PROVIDER_TRIGRAMS, which every provider key pattern contains. */
  provider: boolean;
}

/** Three characters each provider key pattern (PROVIDER_KEY) contains, in the order of its alternatives. */
const PROVIDER_TRIGRAMS = ['sk-', 'AKI', 'ASI', 'ABI', 'ACC', 'hp_', 'ho_', 'hu_', 'hs_', 'hr_', 'ub_', 'at-', 'xox', 'AIz', 'sk_', 'rk_', 'pm_', 'hf_', 'SG.', 'vc_', '---'];
const TRIGRAM = new Set(PROVIDER_TRIGRAMS.map((t) => (t.charCodeAt(0) << 16) | (t.charCodeAt(1) << 8) | t.charCodeAt(2)));

// Character classes of the signals pass.
const DIGIT = 1;
const SEP = 2; // ` .()-/`
const HEX = 4; // hex digits, ':' and '.'
const UPPER = 8;
const TRIGRAM_END = 16; // the last character of some provider trigram
const SIGNAL_CLASS = new Uint8Array(128);
for (let c = 0; c < 128; c++) {
  const ch = String.fromCharCode(c);
  SIGNAL_CLASS[c] =
    (/\d/.test(ch) ? DIGIT : 0) | (/[ .()\-/]/.test(ch) ? SEP : 0) | (/[0-9A-Fa-f:.]/.test(ch) ? HEX : 0) | (/[A-Z]/.test(ch) ? UPPER : 0) | (PROVIDER_TRIGRAMS.some((t) => t[2] === ch) ? TRIGRAM_END : 0);
}

/** The signals of `text` in one pass. */
export function textSignals(text: string): TextSignals {
  let digitCluster = 0;
  let cluster = 0;
  let gap = 3;
  let chainDots = 0;
  let dotted = false;
  let colons = 0;
  let runColons = 0;
  let ibanStart = false;
  let plus = false;
  let provider = false;
  let c2 = 0; // the character before the previous one
  let p1 = 0; // classes of the previous three characters
  let p2 = 0;
  let p3 = 0;
  let c1 = 0; // the previous character
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    const k = c < 128 ? SIGNAL_CLASS[c] : 0;
    if (k & DIGIT) {
      cluster = gap <= 2 ? cluster + 1 : 1;
      gap = 0;
      if (cluster > digitCluster) digitCluster = cluster;
      if (c1 === 46 && p2 & DIGIT) {
        if (++chainDots >= 3) dotted = true;
      } else if (!(p1 & DIGIT)) chainDots = 0;
      if (p1 & DIGIT && p2 & UPPER && p3 & UPPER) ibanStart = true;
    } else {
      gap = k & SEP ? gap + 1 : 3;
      if (c !== 46) chainDots = 0;
      else if (c1 === 46) chainDots = 0;
    }
    if (k & HEX) {
      if (c === 58 && ++runColons > colons) colons = runColons;
    } else runColons = 0;
    if (c === 43) plus = true;
    if (k & TRIGRAM_END && !provider && TRIGRAM.has((c2 << 16) | (c1 << 8) | c)) provider = true;
    c2 = c1;
    p3 = p2;
    p2 = p1;
    p1 = k;
    c1 = c;
  }
  return { digitCluster, dotted, colons, ibanStart, plus, provider };
}

// The email pattern's local part: the characters its lookbehind excludes before a match.
const LOCAL = new Uint8Array(128);
for (let c = 0; c < 128; c++) LOCAL[c] = /[\w.%+-]/.test(String.fromCharCode(c)) ? 1 : 0;
const EMAIL = /(?<![\w.%+-])[A-Za-z0-9][A-Za-z0-9._%+-]{0,63}@(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.){1,8}[A-Za-z]{2,24}(?![\w-])/g;
const EMAIL_AT = new RegExp(EMAIL.source, 'y');

/**
 * The next email from `from`, found from its '@': a match must start where the run of local-part
 * characters before an '@' starts (its lookbehind refuses any later start), at most 64 characters
 * back, so one anchored attempt per '@' finds what the pattern finds scanning every position.
 */
function nextEmail(text: string, from: number): RegExpExecArray | null {
  for (let at = text.indexOf('@', from); at >= 0; at = text.indexOf('@', at + 1)) {
    let s = at;
    while (s > 0 && at - s <= 64) {
      const c = text.charCodeAt(s - 1);
      if (c >= 128 || LOCAL[c] === 0) break;
      s--;
    }
    if (s === at || at - s > 64 || s < from) continue;
    EMAIL_AT.lastIndex = s;
    const m = EMAIL_AT.exec(text);
    if (m) return m;
  }
  return null;
}

export function luhn(digits: string): boolean {
  let sum = 0;
  let double = false;
  for (let i = digits.length - 1; i >= 0; i--) {
    let d = digits.charCodeAt(i) - 48;
    if (double) d = d * 2 > 9 ? d * 2 - 9 : d * 2;
    sum += d;
    double = !double;
  }
  return sum % 10 === 0;
}

/** Issuer prefixes (IIN ranges) of the networks that issue most cards, with their lengths. */
function cardNetwork(d: string): boolean {
  const n = d.length;
  const p2 = +d.slice(0, 2);
  const p3 = +d.slice(0, 3);
  const p4 = +d.slice(0, 4);
  const p6 = +d.slice(0, 6);
  if (d[0] === '4') return n === 13 || n === 16 || n === 19; // Visa
  if ((p2 >= 51 && p2 <= 55) || (p4 >= 2221 && p4 <= 2720)) return n === 16; // Mastercard
  if (p2 === 34 || p2 === 37) return n === 15; // American Express
  if (p4 === 6011 || p2 === 65 || (p3 >= 644 && p3 <= 649) || (p6 >= 622126 && p6 <= 622925)) return n >= 16 && n <= 19; // Discover
  if (p4 >= 3528 && p4 <= 3589) return n >= 16 && n <= 19; // JCB
  if (p2 === 36 || p2 === 38 || p2 === 39 || (p3 >= 300 && p3 <= 305) || p2 === 30) return n >= 14 && n <= 19; // Diners
  if (p2 === 62) return n >= 16 && n <= 19; // UnionPay
  if (p2 === 50 || (p2 >= 56 && p2 <= 69)) return n >= 12 && n <= 19; // Maestro
  return false;
}

/** Valid US SSN ranges: area 001-899 except 666, group 01-99, serial 0001-9999; two advertised numbers excluded. */
export function validSsn(area: string, group: string, serial: string): boolean {
  const a = +area;
  if (a === 0 || a === 666 || a >= 900) return false;
  if (+group === 0 || +serial === 0) return false;
  const whole = area + group + serial;
  return whole !== '078051120' && whole !== '219099999';
}

const IBAN_LENGTHS: Record<string, number> = Object.fromEntries(
  ('AD24 AE23 AL28 AT20 AZ28 BA20 BE16 BG22 BH22 BR29 BY28 CH21 CR22 CY28 CZ24 DE22 DK18 DO28 EE20 EG29 ES24 FI18 FO18 FR27 ' +
    'GB22 GE22 GI23 GL18 GR27 GT28 HR21 HU28 IE22 IL23 IQ23 IS26 IT27 JO30 KW30 KZ20 LB28 LC32 LI21 LT20 LU20 LV21 MC27 MD24 ' +
    'ME22 MK19 MR27 MT31 MU30 NL18 NO15 PK24 PL28 PS29 PT25 QA29 RO24 RS22 SA24 SC31 SE24 SI19 SK24 SM27 ST25 SV28 TL23 TN24 ' +
    'TR26 UA29 VA22 VG24 XK20')
    .split(' ')
    .map((e) => [e.slice(0, 2), +e.slice(2)]),
);

/** IBAN check: known country, its length, and the ISO 7064 mod-97 remainder 1. */
export function validIban(raw: string): boolean {
  const s = raw.replace(/ /g, '').toUpperCase();
  if (IBAN_LENGTHS[s.slice(0, 2)] !== s.length) return false;
  const r = s.slice(4) + s.slice(0, 4);
  let rem = 0;
  for (let i = 0; i < r.length; i++) {
    const c = r.charCodeAt(i);
    const v = c >= 65 ? c - 55 : c - 48;
    if (v < 0 || v > 35) return false;
    rem = v > 9 ? (rem * 100 + v) % 97 : (rem * 10 + v) % 97;
  }
  return rem === 1;
}

/** Shannon entropy in bits per character. */
export function entropy(s: string): number {
  const counts = new Map<string, number>();
  for (const c of s) counts.set(c, (counts.get(c) ?? 0) + 1);
  let h = 0;
  for (const n of counts.values()) {
    const p = n / s.length;
    h -= p * Math.log2(p);
  }
  return h;
}

function jwtHeaderOk(token: string): boolean {
  try {
    const header = JSON.parse(Buffer.from(token.slice(0, token.indexOf('.')), 'base64url').toString('utf8'));
    return header !== null && typeof header === 'object' && typeof header.alg === 'string';
  } catch {
    return false;
  }
}

const OCTET = '(?:25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]?\\d)';

// Provider prefixes: OpenAI, Anthropic, AWS access key ids, GitHub, GitLab, Slack, Google, Stripe,
// npm, Hugging Face, SendGrid, this service's own keys (svc_<env>_), PEM private keys.
const PROVIDER_KEY = new RegExp(
  [
    'sk-ant-(?:api|admin)\\d{2}-[A-Za-z0-9_-]{20,200}',
    'sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,200}',
    '(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}',
    'gh[pousr]_[A-Za-z0-9]{36,251}',
    'github_pat_[A-Za-z0-9_]{22,251}',
    'glpat-[A-Za-z0-9_-]{20,50}',
    'xox[abposre]-[A-Za-z0-9-]{10,250}',
    'AIza[0-9A-Za-z_-]{35}',
    '(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{20,247}',
    'npm_[A-Za-z0-9]{36}',
    'hf_[A-Za-z]{34}',
    'SG\\.[A-Za-z0-9_-]{22}\\.[A-Za-z0-9_-]{43}',
    'svc_(?:prod|stg|dev)_[0-9A-Za-z_-]{32,200}',
    '-----BEGIN (?:RSA |EC |DSA |OPENSSH |ENCRYPTED |PGP )?PRIVATE KEY(?: BLOCK)?-----',
  ]
    .map((p) => `(?:${p})`)
    .join('|'),
);

const KINDS: Record<PiiKind, Kind[]> = {
  email: [
    {
      code: 'pii.email',
      re: EMAIL,
      find: nextEmail,
      score: () => 0.95,
    },
  ],
  phone: [
    {
      // International form: + country code, 8-15 digits in all (E.164), separators allowed.
      code: 'pii.phone',
      gate: (g) => g.plus && g.digitCluster >= 8,
      re: /(?<![\w+])\+\d{1,3}(?:[ .-]?\(\d{1,4}\))?(?:[ .-]?\d{1,5}){2,6}(?![\d])/g,
      score: (m) => {
        const n = m[0].replace(/\D/g, '').length;
        return n >= 8 && n <= 15 ? 0.85 : 0;
      },
    },
    {
      // North American form with separators: (212) 555-0142, 212-555-0142, 212.555.0142.
      code: 'pii.phone',
      gate: (g) => g.digitCluster >= 10,
      re: /(?<![\w+.-])(?:\([2-9]\d{2}\) ?|[2-9]\d{2}[-. ])[2-9]\d{2}[-. ]\d{4}(?![\w-]|\.\d)/g,
      score: () => 0.75,
    },
    {
      // National forms starting with a trunk 0 and grouped digits: 06 12 34 56 78, 030 1234 5678, 07700 900123.
      code: 'pii.phone',
      gate: (g) => g.digitCluster >= 10,
      re: /(?<![\w+.-])0\d{1,4}(?:[ .-]\d{2,4}){2,4}(?![\w-]|\.\d)/g,
      score: (m) => {
        const n = m[0].replace(/\D/g, '').length;
        return n >= 10 && n <= 11 ? 0.6 : 0;
      },
    },
  ],
  credit_card: [
    {
      code: 'pii.credit_card',
      gate: (g) => g.digitCluster >= 12,
      re: /(?<![\d-])\d(?:[ -]?\d){11,18}(?![\d-])/g,
      score: (m) => {
        const d = m[0].replace(/[ -]/g, '');
        if (/^(\d)\1+$/.test(d)) return 0;
        return cardNetwork(d) && luhn(d) ? 0.95 : 0;
      },
    },
  ],
  ssn: [
    {
      code: 'pii.ssn',
      gate: (g) => g.digitCluster >= 9,
      re: /(?<![\w-])(\d{3})([- ])(\d{2})\2(\d{4})(?![\w-])/g,
      score: (m) => (validSsn(m[1], m[3], m[4]) ? (m[2] === '-' ? 0.85 : 0.6) : 0),
    },
    {
      // Nine digits without separators, only right after a label.
      code: 'pii.ssn',
      gate: (g) => g.digitCluster >= 9,
      pre: (t) => /ssn|social security/i.test(t),
      re: /(?:ssn|social security(?: number| no\.?)?)[\s:#=-]{0,4}(\d{9})(?!\d)/dgi,
      score: (m) => (validSsn(m[1].slice(0, 3), m[1].slice(3, 5), m[1].slice(5)) ? 0.9 : 0),
    },
  ],
  iban: [
    {
      code: 'pii.iban',
      gate: (g) => g.ibanStart,
      re: /(?<![A-Za-z0-9])[A-Z]{2}\d{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,3})?(?![A-Za-z0-9])/g,
      score: (m) => (validIban(m[0]) ? 0.95 : 0),
    },
  ],
  ip_address: [
    {
      code: 'pii.ip_address',
      gate: (g) => g.dotted,
      re: new RegExp(`(?<![\\w.])(?:${OCTET}\\.){3}${OCTET}(?![\\w]|\\.\\d)`, 'g'),
      score: () => 0.7,
    },
    {
      code: 'pii.ip_address',
      gate: (g) => g.colons >= 2,
      re: /(?<![\w:.])(?:[0-9A-Fa-f]{0,4}:){2,7}(?:[0-9A-Fa-f]{1,4}|(?:\d{1,3}\.){3}\d{1,3})?(?![\w:.])/g,
      score: (m) => (m[0].length >= 3 && /[0-9a-fA-F]/.test(m[0]) && ipaddr.IPv6.isValid(m[0]) ? 0.8 : 0),
    },
  ],
  api_key: [
    {
      code: 'pii.api_key',
      gate: (g) => g.provider,
      re: new RegExp(`(?<![A-Za-z0-9_-])(?:${PROVIDER_KEY.source})`, 'g'),
      score: () => 0.95,
    },
    {
      // Generic: a value right after a secret-sounding label, long, mixed and random-looking.
      code: 'pii.api_key',
      pre: (t) => /key|secret|token|passw|pwd|bearer|credential/i.test(t),
      re: /(?:api[_-]?key|apikey|secret|token|passw(?:or)?d|pwd|access[_-]?key|client[_-]?secret|credentials?)["']?\s{0,3}[:=]\s{0,3}["']?([A-Za-z0-9_\-+/=.~]{16,200})|bearer\s{1,3}([A-Za-z0-9_\-+/=.~]{20,200})/dgi,
      score: (m) => {
        const v = m[1] ?? m[2];
        if (!/[A-Za-z]/.test(v) || !/\d/.test(v)) return 0;
        return entropy(v) >= 3.5 ? 0.7 : 0;
      },
    },
  ],
  jwt: [
    {
      code: 'pii.jwt',
      pre: (t) => t.includes('eyJ'),
      re: /(?<![\w-])eyJ[A-Za-z0-9_-]{4,2000}\.[A-Za-z0-9_-]{4,8000}\.[A-Za-z0-9_-]{0,2000}(?![\w-])/g,
      score: (m) => (jwtHeaderOk(m[0]) ? 0.95 : 0),
    },
  ],
};

export interface PiiDetectorOptions {
  detect: readonly PiiKind[];
  /** Custom patterns, already admitted by regexProblem (rules.ts). */
  patterns?: readonly string[];
  caps?: WalkCaps;
}

export interface PiiDetector {
  /** Scans `value` (string or JSON) whose field is named `root` (`input` or `output`). */
  scan(value: unknown, root: string): ScanResult;
  /**
   * Scans one string at `path`, appending to `out`; answers false once MAX_FINDINGS is reached.
   * `budget.custom` counts down the characters custom patterns may still read in this scan.
   */
  scanText(text: string, path: string, out: Finding[], budget?: { custom: number }, signals?: TextSignals): boolean;
}

/** Compiles a detector for the chosen kinds and custom patterns (once per policy version). */
export function compilePiiDetector(options: PiiDetectorOptions): PiiDetector {
  const kinds: Kind[] = options.detect.flatMap((k) => KINDS[k]);
  const custom = (options.patterns ?? []).map((p) => new RegExp(p, 'g'));
  const caps = options.caps ?? DEFAULT_CAPS;

  // No default budget object per call: the engine's per-kind detectors have no custom pattern and scan once per kind and root.
  const scanText = (text: string, path: string, out: Finding[], budget?: { custom: number }, signals?: TextSignals): boolean => {
    let sig = signals;
    for (const k of kinds) {
      if (k.gate && !k.gate((sig ??= textSignals(text)))) continue;
      if (k.pre && !k.pre(text)) continue;
      const re = k.re;
      re.lastIndex = 0;
      // The next match: from the anchor search when the kind has one, else the regex's own scan.
      const find = k.find;
      for (let m = find ? find(text, 0) : re.exec(text); m; m = find ? find(text, m.index + m[0].length) : re.exec(text)) {
        const score = k.score(m);
        if (score > 0) {
          // A labelled match locates the value, not the label (its group when the regex has one).
          const g = m.indices?.[1] ?? m.indices?.[2];
          const [start, end] = g ?? [m.index, m.index + m[0].length];
          out.push({ code: k.code, path, start, end, score });
          if (out.length >= MAX_FINDINGS) return false;
        }
      }
    }
    if (custom.length === 0) return true;
    budget ??= { custom: CUSTOM_PATTERN_CHARS };
    if (budget.custom <= 0) return true;
    const slice = text.length > budget.custom ? text.slice(0, budget.custom) : text;
    budget.custom -= slice.length;
    for (let i = 0; i < custom.length; i++) {
      const re = custom[i];
      re.lastIndex = 0;
      for (let m = re.exec(slice); m; m = re.exec(slice)) {
        if (m[0].length === 0) re.lastIndex++;
        else out.push({ code: 'pii.custom', path, start: m.index, end: m.index + m[0].length, score: 1, pattern: i });
        if (out.length >= MAX_FINDINGS) return false;
      }
    }
    return true;
  };

  return {
    scanText,
    scan(value, root) {
      const findings: Finding[] = [];
      const budget = { custom: CUSTOM_PATTERN_CHARS };
      let full = true;
      let customCut = false;
      const leaves = collectStrings(value, root, caps);
      const { texts, truncated } = leaves;
      for (let i = 0; i < texts.length; i++) {
        if (custom.length > 0 && texts[i].length > budget.custom) customCut = true;
        if (full) full = scanText(texts[i], leaves.path(i), findings, budget);
      }
      return { findings, truncated: truncated || !full || customCut };
    },
  };
}

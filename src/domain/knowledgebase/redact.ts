/**
 * Redaction of a page's text for a copilot with `enhanced_privacy = 1` (DESIGN §3: keep no data
 * beyond what search needs). Runs where passages are made (the task thread, before splitting),
 * so the stored passages and their search terms never hold what it replaces:
 *
 *   - e-mail addresses → `[email]`;
 *   - phone numbers → `[phone]`: libphonenumber-js finds numbers written in international form
 *     (`+44 20 7946 0958`) and in the North American national form (`(415) 555-0132`); other
 *     national forms without a `+` cannot be told from other digit runs without knowing the
 *     country, and are left (as order numbers, versions and dates are);
 *   - strings shaped like credentials → `[secret]`: provider API keys with a known prefix
 *     (`sk-…`, `ghp_…`/`github_pat_…`, `AKIA…`/`ASIA…`, `xox?-…`, `AIza…`, Stripe `sk_live_…`,
 *     …), the token after `Bearer`/`Basic`, JSON Web Tokens, private-key blocks, and a long
 *     random-looking value assigned to a key named like a secret (`api_key=…`, `"token": "…"`).
 *
 * No library covers credential shapes for text in a form that runs here (secret scanners are
 * command-line programs or rule engines around files), so they are the patterns below: each is
 * anchored on a prefix or a structure that ordinary prose does not have.
 */
import { findPhoneNumbersInText } from 'libphonenumber-js';

export const REDACTED = { email: '[email]', phone: '[phone]', secret: '[secret]' } as const;

const EMAIL = /[A-Za-z0-9](?:[A-Za-z0-9._%+-]{0,63})@(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,62}[A-Za-z0-9])?\.)+[A-Za-z]{2,24}\b/g;

// Each: a credential with a recognisable shape. Word boundaries keep them off longer words.
const SECRETS: RegExp[] = [
  // -----BEGIN … PRIVATE KEY----- … -----END … PRIVATE KEY-----
  /-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----/g,
  // JSON Web Tokens (header.payload.signature, base64url, the header starts with {" → eyJ).
  /\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*/g,
  // OpenAI / Anthropic style: sk-…, sk-proj-…, sk-ant-…
  /\bsk-[A-Za-z0-9_-]{20,}/g,
  // GitHub tokens: ghp_, gho_, ghu_, ghs_, ghr_, and fine-grained github_pat_.
  /\bgh[pousr]_[A-Za-z0-9]{30,}\b/g,
  /\bgithub_pat_[A-Za-z0-9_]{22,}\b/g,
  // AWS access key ids.
  /\b(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[A-Z0-9]{16}\b/g,
  // Slack tokens: xoxb-, xoxp-, xoxa-, xoxr-, xoxs-, xoxe-.
  /\bxox[abeprs]-[A-Za-z0-9-]{10,}/g,
  // Google API keys.
  /\bAIza[0-9A-Za-z_-]{35}\b/g,
  // Stripe keys.
  /\b(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}\b/g,
  // GitLab personal access tokens.
  /\bglpat-[A-Za-z0-9_-]{20,}\b/g,
];

// The credential after an Authorization scheme: "Bearer abc…", "Authorization: Basic dXNl…".
const AUTH_SCHEME = /\b(Bearer|Basic|Token)(\s+)([A-Za-z0-9\-._~+/]{16,}=*)/g;

// A value assigned to a key named like a secret: api_key=…, "client_secret": "…", password: …
const ASSIGNED =
  /\b((?:api[_-]?key|apikey|access[_-]?token|auth[_-]?token|refresh[_-]?token|client[_-]?secret|secret[_-]?key|secret|token|password|passwd)["']?\s*[:=]\s*["']?)([A-Za-z0-9\-._~+/]{16,}=*)/gi;

/** Whether a value looks random (a credential) rather than a word: letters and digits mixed. */
const looksRandom = (value: string) => /[0-9]/.test(value) && /[A-Za-z]/.test(value);

/** The text with e-mail addresses, phone numbers and credential-shaped strings replaced (rules above). */
export function redactText(text: string): string {
  let out = text;
  for (const pattern of SECRETS) out = out.replace(pattern, REDACTED.secret);
  out = out.replace(AUTH_SCHEME, (_m, scheme: string, space: string) => `${scheme}${space}${REDACTED.secret}`);
  out = out.replace(ASSIGNED, (match, key: string, value: string) => (looksRandom(value) ? `${key}${REDACTED.secret}` : match));
  out = out.replace(EMAIL, REDACTED.email);
  return redactPhones(out);
}

// A run that may hold a phone number: digits with the separators numbers are written with.
// Only runs of at least 7 digits go to libphonenumber-js, whose scan of a whole page full of
// digits (versions, dates, counts) took seconds per megabyte.
const PHONE_CANDIDATE = /\+?\(?\d[\d \t\u00a0().\-/]{5,24}\d/g;

function redactPhones(text: string): string {
  return text.replace(PHONE_CANDIDATE, (span) => {
    if ((span.match(/\d/g)?.length ?? 0) < 7) return span;
    // 'US' as the default country: international numbers are found whatever it is, and
    // North American national numbers too.
    const found = findPhoneNumbersInText(span, 'US');
    if (found.length === 0) return span;
    let out = '';
    let at = 0;
    for (const { startsAt, endsAt } of found) {
      if (startsAt < at) continue;
      out += span.slice(at, startsAt) + REDACTED.phone;
      at = endsAt;
    }
    return out + span.slice(at);
  });
}

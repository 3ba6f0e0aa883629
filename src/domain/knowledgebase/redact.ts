/**
 * Redaction of a page's text for a copilot with `enhanced_privacy = 1` (DESIGN §3: keep no data
 * beyond what search needs). Runs where passages are made (the task thread, before splitting),
 * so the stored passages and their search terms never hold what it replaces. In this order:
 *
 *   - strings shaped like credentials → `[secret]`:
 *     - private-key blocks (`-----BEGIN … PRIVATE KEY-----`, PGP's `… PRIVATE KEY BLOCK-----`) up to
 *       their END line; a block without one, up to the end of its base64 run (a blank line, a
 *       short word, the end of the text);
 *     - the password in a URL's userinfo (`postgres://user:[secret]@host`, `redis://:[secret]@…`),
 *       before the e-mail rule would take `user:pw@host.com` for an address;
 *     - provider keys with a known prefix (`sk-…`, `ghp_…`/`github_pat_…`, `AKIA…`/`ASIA…`, `xox?-…`,
 *       `AIza…`, Stripe `sk_live_…`, GitLab `glpat-…`, npm `npm_…`, SendGrid `SG.….…`, Mailgun
 *       `key-…`, Shopify `shpat_…`, Twilio `SK…`), Azure `AccountKey=`/`SharedAccessKey=`/
 *       `SharedAccessSignature=`/`sig=` values, the secret path of Slack and Discord webhook URLs,
 *       JSON Web Tokens (`eyJ….eyJ…`, with or without a signature);
 *     - the token after an Authorization scheme in any case (`Bearer`, `basic`, `TOKEN`): 16+
 *       characters that look random (so "Bearer token authentication" stays);
 *     - a value assigned to a key whose name has a secret word as a part (`secret`, `password`,
 *       `passwd`, `passphrase`, `pwd`, `pass`, `token`, `api_key`, `access_key`, `private_key`,
 *       `credential(s)`, `auth`; as a `_`/`-`/`.` part, a camel-case part or the whole name:
 *       `aws_secret_access_key`, `DB_PASSWORD`, `dbPassword`, `x-api-key`, but not `author`,
 *       `compass`, `secretary`), after `=`, `:`, `:=` or `=>`. A quoted value runs to its closing
 *       quote, an unquoted one to white space or `&,;()[]{}<>`. It is a secret when it has 6+
 *       characters, no white space, a letter and a digit or a symbol other than `._-`, whatever
 *       its length: `password=hunter2`, `pwd: shortpw1`; so prose ("the password: see below",
 *       "token: short-lived"), code (`token = getToken()`, `apiKey: process.env.API_KEY`),
 *       placeholders (`${…}`, `<…>`, `$VAR`, `YOUR_TOKEN`), URLs, plain numbers and all-letter
 *       values stay, and so do keys that name or describe a secret rather than hold it
 *       (`secret_name`, `token_type`, `auth_url`, `password_policy`, `SharedAccessKeyName`, `…_id`, `…_path`);
 *   - e-mail addresses → `[email]`, in any script (`émile@exämple.de`, `用户@例子.广告`), with a
 *     full-width `＠`, URL-encoded (`%40`, `%2E`), a quoted local part, an address literal
 *     (`user@[192.168.1.1]`) or `@localhost`; the local part may hold `'` and the invisible
 *     U+200B–U+200D and U+00AD. Obfuscated forms too: `(at)`/`[at]`/`{at}`/`<at>` with `(dot)`… or
 *     `.`, and the bare `name at example dot com` only when it ends in ` dot ` and a common TLD
 *     (com, org, net, io, de, co, uk, fr, …, not words like "in" or "me"), so "look at the docs dot
 *     by dot" stays;
 *   - phone numbers → `[phone]`: libphonenumber-js finds numbers written in international form
 *     (`+44 20 7946 0958`, or with `00` for the `+`: `0044 20 7946 0958`) and in the North American
 *     national form (`(415) 555-0132`); other national forms without a `+` cannot be told from
 *     other digit runs without knowing the country, and are left (as order numbers, versions and
 *     dates are).
 *
 * No library covers credential shapes for text in a form that runs here (secret scanners are
 * command-line programs or rule engines around files), so they are the patterns below: each is
 * anchored on a prefix or a structure that ordinary prose does not have, and none nests
 * quantifiers over the same characters (a page is scanned in linear time).
 */
import { findPhoneNumbersInText } from 'libphonenumber-js';

export const REDACTED = { email: '[email]', phone: '[phone]', secret: '[secret]' } as const;

const S = REDACTED.secret;

// Private-key blocks: BEGIN up to END, never across another BEGIN/END line; then a block with no
// END, up to the end of its base64 run (chunks of 16+ characters, or a padded tail, separated by
// spaces or one line break: a blank line or a short word ends it).
const KEY_BLOCK = /-----BEGIN [A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----(?:(?!-----(?:BEGIN|END) )[\s\S])*-----END [A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----/g;
const UNCLOSED_KEY_BLOCK =
  /-----BEGIN [A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----(?:[ \t]*\r?\n[A-Z][A-Za-z-]{0,30}: [^\r\n]*)*(?:[ \t]*\r?\n(?=[ \t]*\r?\n[A-Za-z0-9+/]{16}))?(?:(?:[ \t]*\r?\n[ \t]*|[ \t]+)(?:[A-Za-z0-9+/]{16,}={0,2}|[A-Za-z0-9+/]{1,15}={1,2})(?![A-Za-z0-9+/=]))*/g;

// The password in a URL's userinfo: scheme://user:password@host (the last @ before the path).
const URL_PASSWORD = /(\/\/[^\s:/?#@"'<>]*:)[^\s/?#"'<>]+@/g;

// Each: a credential with a recognisable shape, and what replaces it. Word boundaries keep them
// off longer words.
const SECRETS: Array<[RegExp, string]> = [
  // JSON Web Tokens: header.payload[.signature], base64url, header and payload start with {" → eyJ.
  [/\beyJ[A-Za-z0-9_-]{8,}\.(?:eyJ[A-Za-z0-9_-]{4,}|[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*)(?:\.[A-Za-z0-9_-]+)*/g, S],
  // OpenAI / Anthropic style: sk-…, sk-proj-…, sk-ant-…
  [/\bsk-[A-Za-z0-9_-]{20,}/g, S],
  // GitHub tokens: ghp_, gho_, ghu_, ghs_, ghr_, and fine-grained github_pat_.
  [/\bgh[pousr]_[A-Za-z0-9]{30,}\b/g, S],
  [/\bgithub_pat_[A-Za-z0-9_]{22,}\b/g, S],
  // AWS access key ids.
  [/\b(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[A-Z0-9]{16}\b/g, S],
  // Slack tokens: xoxb-, xoxp-, xoxa-, xoxr-, xoxs-, xoxe-.
  [/\bxox[abeprs]-[A-Za-z0-9-]{10,}/g, S],
  // Google API keys.
  [/\bAIza[0-9A-Za-z_-]{35}\b/g, S],
  // Stripe keys.
  [/\b(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}\b/g, S],
  // GitLab tokens: personal (glpat-), deploy, runner, trigger, OAuth, CI job, … tokens.
  [/\bgl(?:pat|dt|rt|ptt|soat|oas|cbt|imt|agent|ft|ffct|wt)-[A-Za-z0-9_-]{10,}/g, S],
  // npm access tokens.
  [/\bnpm_[A-Za-z0-9]{36}\b/g, S],
  // SendGrid: SG.<22>.<43>.
  [/\bSG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{32,}/g, S],
  // Mailgun: key-<32>, with a digit in it.
  [/\bkey-(?=[A-Za-z]*[0-9])[0-9A-Za-z]{32}\b/g, S],
  // Shopify: shpat_, shpca_, shppa_, shpss_ and 32 hex digits.
  [/\bshp(?:at|ca|pa|ss)_[0-9a-fA-F]{32}\b/g, S],
  // Twilio API keys: SK and 32 hex digits.
  [/\bSK[0-9a-fA-F]{32}\b/g, S],
  // Azure connection strings and SAS URLs: the value of AccountKey=, SharedAccessKey=,
  // SharedAccessSignature= (up to the next ;) and a signature parameter sig=.
  [/\b(AccountKey|SharedAccessKey|SharedAccessSignature)=[^;\s"'<>]+/g, `$1=${S}`],
  [/([?&;]sig=)[^&;\s"'<>]{16,}/g, `$1${S}`],
  // Webhook URLs whose path is the credential: Slack and Discord.
  [/(\bhooks\.slack\.com\/(?:services|workflows|triggers)\/)[A-Za-z0-9_/-]+/g, `$1${S}`],
  [/(\b(?:discord|discordapp)\.com\/api\/webhooks\/)[0-9]+\/[A-Za-z0-9_-]+/g, `$1${S}`],
];

// The credential after an Authorization scheme: "Bearer abc…", "authorization: basic dXNl…".
const AUTH_SCHEME = /\b(Bearer|Basic|Token)(\s+)([A-Za-z0-9\-._~+/]{16,}=*)/gi;

// A key name with a secret word as a part: each word lower-case after a non-letter (client_secret,
// x-api-key), upper-case after a non-letter (DB_PASSWORD), capitalised anywhere (dbPassword,
// ClientSecret), and a multi-part word in camel case after a non-letter (apiKey); then not
// followed by a lower-case letter (author, secretary, tokenizer).
const SECRET_WORDS = [
  ['secret'],
  ['password'],
  ['passwd'],
  ['passphrase'],
  ['pwd'],
  ['pass'],
  ['token'],
  ['api', 'key'],
  ['access', 'key'],
  ['private', 'key'],
  ['credentials'],
  ['credential'],
  ['auth'],
];
const capitalised = (word: string) => word[0].toUpperCase() + word.slice(1);
const SECRET_KEY_NAME = SECRET_WORDS.flatMap((parts) => {
  const forms = [
    `(?<![A-Za-z])${parts.join('[_-]?')}(?![a-z])`,
    `(?<![A-Za-z])${parts.map((p) => p.toUpperCase()).join('[_-]?')}(?![A-Z])`,
    `${parts.map(capitalised).join('[_-]?')}(?![a-z])`,
  ];
  if (parts.length > 1) forms.push(`(?<![A-Za-z])${[parts[0], ...parts.slice(1).map(capitalised)].join('[_-]?')}(?![a-z])`);
  return forms;
}).join('|');

// key (the rest of its name), an optional closing quote, = : := or =>, then the value: "…", '…'
// (up to the closing quote or white space) or unquoted (up to white space or &,;()[]{}<>).
const ASSIGNED = new RegExp(
  String.raw`((?:${SECRET_KEY_NAME})[A-Za-z0-9_.-]{0,64}\\?["']?[ \t]*(?:=>|:=|[:=])[ \t]*)(?:(\\?")([^"\s\\]+)|(\\?')([^'\s\\]+)|([^\s&,;()[\]{}<>"'${'`'}=\\][^\s&,;()[\]{}<>"'${'`'}\\]*))`,
  'g',
);

/** Whether a token after an Authorization scheme looks random: letters and digits, or base64 with mixed case. */
const looksRandom = (value: string) => (/[0-9]/.test(value) && /[A-Za-z]/.test(value)) || (/[A-Z]/.test(value) && /[a-z]/.test(value) && /[+/=]/.test(value));

/** Whether a value assigned to a secret-named key is a secret (rules in the comment at the top). */
function isSecretValue(value: string): boolean {
  if (value.length < 6 || value.includes('://') || /^(?:\$|%[A-Za-z(])/.test(value)) return false;
  return /[A-Za-z]/.test(value) && /[^A-Za-z._-]/.test(value); // a letter, and a digit or a symbol besides . _ -
}

// A key that names, locates or describes a secret rather than holding it: secret_name, token_type, auth_url, …
const DESCRIBES_SECRET = /(?:name|id|type|url|uri|path|file|length|count|policy|hint|field|header|param|format|mode|label|prompt)$/i;

function redactAssigned(text: string): string {
  return text.replace(ASSIGNED, (match, key: string, dq?: string, dqValue?: string, sq?: string, sqValue?: string, bare?: string, ...rest) => {
    if (DESCRIBES_SECRET.test(key.replace(/\\?["']?[ \t]*(?:=>|:=|[:=])[ \t]*$/, ''))) return match;
    const offset = rest[rest.length - 2] as number;
    const whole = rest[rest.length - 1] as string;
    if (bare !== undefined) {
      if (whole[offset + match.length] === '(') return match; // a call: token = getToken()
      const value = bare.replace(/\.+$/, '');
      return isSecretValue(value) ? `${key}${S}${bare.slice(value.length)}` : match;
    }
    const value = (dqValue ?? sqValue) as string;
    return isSecretValue(value) ? `${key}${dq ?? sq}${S}` : match;
  });
}

// E-mail addresses. Letters, digits and combining marks of any script; @ or full-width ＠ or %40;
// . or full-width ． or %2E. A local part starts at the beginning of a word.
const WORD_CHAR = String.raw`\p{L}\p{M}\p{N}`;
const LOCAL_PART = String.raw`(?:"[^"\r\n@]{1,62}"|[${WORD_CHAR}_][${WORD_CHAR}._%+'\u200b-\u200d\u00ad-]{0,63})`;
const LABEL = `[${WORD_CHAR}](?:[${WORD_CHAR}-]{0,61}[${WORD_CHAR}])?`;
const DOMAIN = String.raw`(?:(?:${LABEL}(?:[.\uff0e]|%2[Ee])){1,16}\p{L}[\p{L}\p{M}]{1,23}(?![${WORD_CHAR}_])|\[(?:IPv6:[0-9A-Fa-f:.]{2,45}|(?:\d{1,3}\.){3}\d{1,3})\]|localhost(?![${WORD_CHAR}_-]))`;
const AT_SIGN = String.raw`(?:[@\uff20]|%40)`;
// Matched from the at-sign (which the engine scans for quickly), the local part in a lookbehind (group 1).
const EMAIL = new RegExp(`${AT_SIGN}(?<=(?<![${WORD_CHAR}_])(${LOCAL_PART})${AT_SIGN})${DOMAIN}`, 'gu');

// Obfuscated: "(at)", "[at]", "{at}", "<at>" with "(dot)"… or "." between the domain's labels.
const OPEN = String.raw`[ \t]*[(\[{<][ \t]*`;
const CLOSE = String.raw`[ \t]*[)\]}>][ \t]*`;
const BRACKETED_DOT = String.raw`(?:${OPEN}dot${CLOSE}|\.)`;
const OBFUSCATED_LOCAL = `[${WORD_CHAR}_][${WORD_CHAR}._%+'-]{0,63}(?:${OPEN}dot${CLOSE}[${WORD_CHAR}_][${WORD_CHAR}._%+'-]{0,63}){0,4}`;
const EMAIL_BRACKETED = new RegExp(
  String.raw`(?<![${WORD_CHAR}_])${OBFUSCATED_LOCAL}${OPEN}at${CLOSE}${LABEL}(?:${BRACKETED_DOT}${LABEL}){0,8}${BRACKETED_DOT}\p{L}{2,24}(?![${WORD_CHAR}_])`,
  'giu',
);
const HAS_BRACKETED_AT = /[([{<][ \t]*at[ \t]*[)\]}>]/i;
// The bare form: "carol at example dot com", the last label one of these TLDs.
const TLDS = 'com|org|net|edu|gov|io|co|uk|de|fr|es|nl|ch|se|dk|fi|pl|ru|cn|jp|kr|au|ca|eu|br|mx|info|biz|dev|app|ai';
const BARE_WORD = `[${WORD_CHAR}_][${WORD_CHAR}_'-]{0,62}`;
// Matched from "at", what comes before it in a lookbehind (group 1).
const EMAIL_BARE = new RegExp(
  String.raw`at(?<=(?<![${WORD_CHAR}_.@-])([${WORD_CHAR}_][${WORD_CHAR}_.'+-]{0,63}(?:[ \t]+dot[ \t]+${BARE_WORD}){0,4}[ \t]+)at)[ \t]+${BARE_WORD}(?:[ \t]+dot[ \t]+${BARE_WORD}){0,8}[ \t]+dot[ \t]+(?:${TLDS})(?![${WORD_CHAR}_@-])`,
  'giu',
);
const HAS_BARE_DOT = new RegExp(String.raw`[ \t]dot[ \t]+(?:${TLDS})(?![\p{L}\p{N}])`, 'iu');
const HAS_AT = /[@\uff20]|%40/;

/** The text with e-mail addresses, phone numbers and credential-shaped strings replaced (rules above). */
export function redactText(text: string): string {
  return redactPhones(redactSecretsAndEmails(text));
}

/**
 * The text with credential-shaped strings and e-mail addresses replaced, phone numbers left: the
 * rules above but the last, for text where digit runs are mostly not numbers to call (the path of
 * a URL as logs show it, links.ts `loggedUrl`).
 */
export function redactSecretsAndEmails(text: string): string {
  let out = text;
  if (out.includes('-----BEGIN ')) out = out.replace(KEY_BLOCK, S).replace(UNCLOSED_KEY_BLOCK, S);
  out = out.replace(URL_PASSWORD, `$1${S}@`);
  for (const [pattern, replacement] of SECRETS) out = out.replace(pattern, replacement);
  out = out.replace(AUTH_SCHEME, (match, scheme: string, space: string, token: string) => (looksRandom(token) ? `${scheme}${space}${S}` : match));
  out = redactAssigned(out);
  if (HAS_BRACKETED_AT.test(out)) out = out.replace(EMAIL_BRACKETED, REDACTED.email);
  if (HAS_BARE_DOT.test(out)) out = replaceFromLookbehind(out, EMAIL_BARE, REDACTED.email);
  if (HAS_AT.test(out)) out = replaceFromLookbehind(out, EMAIL, REDACTED.email);
  return out;
}

/** The text with each match of the pattern replaced, together with the text before it that the pattern's lookbehind captured (group 1). */
function replaceFromLookbehind(text: string, pattern: RegExp, replacement: string): string {
  let out = '';
  let at = 0;
  for (const match of text.matchAll(pattern)) {
    const start = match.index - match[1].length;
    if (start < at) continue;
    out += text.slice(at, start) + replacement;
    at = match.index + match[0].length;
  }
  return at === 0 ? text : out + text.slice(at);
}

// A run that may hold a phone number: digits with the separators numbers are written with.
// Only runs of at least 7 digits go to libphonenumber-js, whose scan of a whole page full of
// digits (versions, dates, counts) took seconds per megabyte.
const PHONE_CANDIDATE = /\+?\(?\d[\d \t\u00a0().\-/]{5,24}\d/g;
// 00 for + (the international prefix of most countries): 0044 20 7946 0958.
const DOUBLE_ZERO = /(^|[^\d])00(?=[1-9])/g;

function redactPhones(text: string): string {
  return text.replace(PHONE_CANDIDATE, (span) => {
    if ((span.match(/\d/g)?.length ?? 0) < 7) return span;
    // The copy parsed has " +" for each international 00 (the same length, so the same positions).
    const plus = new Set<number>();
    const parsed = span.includes('00')
      ? span.replace(DOUBLE_ZERO, (_m, before: string, at: number) => {
          plus.add(at + before.length + 1);
          return `${before} +`;
        })
      : span;
    // 'US' as the default country: international numbers are found whatever it is, and
    // North American national numbers too.
    const found = findPhoneNumbersInText(parsed, 'US');
    if (found.length === 0) return span;
    let out = '';
    let at = 0;
    for (const { startsAt, endsAt } of found) {
      const start = plus.has(startsAt) ? startsAt - 1 : startsAt;
      if (start < at) continue;
      out += span.slice(at, start) + REDACTED.phone;
      at = endsAt;
    }
    return out + span.slice(at);
  });
}

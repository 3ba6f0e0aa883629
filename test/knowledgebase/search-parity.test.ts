/**
 * Issue 14 §4: one search behaviour on both databases. The same pages are indexed by the
 * service on SQLite and on PostgreSQL, and one query set is run on both: the hit lists must
 * be the same passages in the same order, with the same scores (within rounding).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DialectName } from '../../src/storage/database.js';
import { buildTestApp, type TestApp } from '../support/app.js';
import { DIALECTS } from '../support/databases.js';
import { createCopilot } from '../support/http.js';
import { postLinks, search, waitForLinks } from '../support/knowledge-base.js';
import { PageServer } from '../support/pages.js';

export const PARITY_PAGES: Record<string, string> = {
  '/api-keys': 'API keys can be rotated: create a new key, deploy it, then revoke the old key. Rotating keys often limits the damage of a leaked key.',
  '/password': 'To reset your password, open Settings and choose Reset password. A link is sent by e-mail. Passwords are never shown.',
  '/password-faq': 'How do I reset my password? Ask an administrator to reset it, or use the reset link on the sign-in page.',
  '/dashboard': 'The dashboard shows usage per copilot. The API usage chart and the key list are on the same page.',
  '/cafe-fr': 'Le café est servi à la terrasse. Crème brûlée et pâtisseries à volonté.',
  '/cafe-en': 'The cafe opens at eight; coffee and tea are served until noon.',
  '/de': 'Die Straße ÜBER dem Fluss heißt Brückenstraße. Grüße aus München!',
  '/el': 'Η ΟΔΟΣ είναι μεγάλη. Ο δρόμος και η οδός οδηγούν στην πόλη.',
  '/ru': 'Привет, мир! Это ПРОСТОЙ текст на русском языке о ключах API.',
  '/ja': '日本語のテキストです。東京の天気は晴れ。カタカナのテキストもあります。',
  '/hi': 'हिन्दी पाठ का एक उदाहरण। यह पाठ खोज के लिए है।',
  '/ar': 'مرحبا بالعالم. هذا نص عربي للبحث.',
  '/numbers': 'Version 3.14 was released in 2024. HTTP 404 means not found; HTTP 500 is a server error. Call 555-0100.',
  '/code': "Install with npm. Node.js 20 or newer is required; don't use Node 18. Use snake_case names and e-mail addresses.",
  '/compat': 'Ｆｕｌｌ‑width ＡＰＩ text, the ﬁle ligature, x² and Ⅻ in compatibility forms.',
  '/stopwords': 'The and of to in it is that was for on are as with his they at be this from.',
  '/long': Array.from({ length: 30 }, (_, i) => `Section ${i}: the key rotation schedule and the password policy are reviewed here every quarter.`).join(
    '\n\n',
  ),
};

export const PARITY_QUERIES = [
  // single words, case
  'password',
  'PASSWORD',
  'key',
  'dashboard',
  'copilot',
  // stop words
  'the',
  'the of and',
  'to be or not to be',
  // diacritics both ways, case folding beyond ASCII
  'cafe',
  'café',
  'CAFÉ',
  'cafe\u0301',
  'creme brulee',
  'strasse',
  'STRASSE',
  'straße',
  'über',
  'uber',
  'UBER',
  'grusse',
  // questions
  'how do I rotate an api key',
  'How do I reset my password?',
  'where is the api usage chart',
  // phrases and stemming
  '"reset your password"',
  'rotating keys',
  'rotate key',
  'passwords reset',
  // punctuation and search syntax
  'node.js',
  'e-mail',
  "don't",
  'dont',
  'snake_case',
  '(password) OR key*',
  'api!!!',
  'NEAR(key password)',
  '"unterminated',
  // non-Latin scripts
  'οδος',
  'ΟΔΟΣ',
  'οδός',
  'привет',
  'ПРИВЕТ мир',
  '日本語',
  'テキスト',
  '東京',
  'हिन्दी',
  'पाठ',
  'مرحبا',
  // numbers and compatibility forms
  '3.14',
  '404',
  '2024',
  'version 3',
  '555 0100',
  'api',
  'file',
  'full width',
  'x2',
  'xii',
  // nothing to find
  'zzzznotthere',
  '🚀',
  '',
];

interface Hit {
  url: string;
  passage: number;
  score: number;
}

const origin = (url: string) => new URL(url).pathname;

describe.skipIf(!DIALECTS.includes('postgres'))('knowledge-base search: the same answers on SQLite and PostgreSQL', () => {
  let pages: PageServer;
  const apps = new Map<DialectName, { t: TestApp; bot: string }>();

  beforeAll(async () => {
    pages = await PageServer.start();
    for (const [path, body] of Object.entries(PARITY_PAGES)) pages.set(path, { type: 'text/plain; charset=utf-8', body });
    const urls = Object.keys(PARITY_PAGES).map((p) => pages.url(p));
    for (const dialect of ['sqlite', 'postgres'] as const) {
      const t = await buildTestApp(dialect, { worker: true });
      const bot = (await createCopilot(t)).id;
      apps.set(dialect, { t, bot });
      expect((await postLinks(t, bot, urls)).statusCode).toBe(202);
      const done = await waitForLinks(t, bot, urls);
      for (const u of urls) expect(done.get(u)!.status, u).toBe('indexed');
    }
  });
  afterAll(async () => {
    for (const { t } of apps.values()) await t.close();
    await pages?.close();
  });

  async function hits(dialect: DialectName, q: string): Promise<Hit[]> {
    const { t, bot } = apps.get(dialect)!;
    return (await search(t, bot, q, 100)).results.map((r) => ({ url: origin(r.url), passage: r.passage, score: r.score }));
  }

  it(`runs ${PARITY_QUERIES.length} queries with the same hits, order and scores on both`, async () => {
    expect(PARITY_QUERIES.length).toBeGreaterThanOrEqual(28);
    let nonEmpty = 0;
    for (const q of PARITY_QUERIES) {
      const lite = await hits('sqlite', q);
      const pg = await hits('postgres', q);
      const label = `q=${JSON.stringify(q)}\nsqlite:   ${JSON.stringify(lite)}\npostgres: ${JSON.stringify(pg)}`;
      expect(
        pg.map((h) => `${h.url}#${h.passage}`),
        label,
      ).toEqual(lite.map((h) => `${h.url}#${h.passage}`));
      for (const [i, h] of lite.entries()) expect(pg[i]!.score, label).toBeCloseTo(h.score, 6);
      if (lite.length > 0) nonEmpty++;
    }
    // The set is not trivially "nothing found everywhere".
    expect(nonEmpty).toBeGreaterThan(PARITY_QUERIES.length / 2);
  });
});

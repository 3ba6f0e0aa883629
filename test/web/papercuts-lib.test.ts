/** Issue 17 §3: the dashboard's wording of deletions, bad link lines, sizes; the list filters in the address. */
import { describe, expect, it, vi } from 'vitest';
import { formatBytes } from '../../web/src/lib/format.js';
import { deletedLinksMessage, describeLinkProblems, newlySettled, parseLinkLines, settledLinksMessage } from '../../web/src/lib/link-lines.js';
import { copilotFiltersQuery, href, parseCopilotFilters, parseRoute, replaceRoute } from '../../web/src/router.js';
import { keyFromPaste } from '../../web/src/lib/api-key.js';

describe('the add-links box', () => {
  it('takes one link per line, skipping blank lines and repeats, keeping each link’s line', () => {
    expect(parseLinkLines('https://a.example/x\n\n  http://b.example/ \r\nhttps://a.example/x\n')).toEqual({
      links: [
        { line: 1, url: 'https://a.example/x' },
        { line: 3, url: 'http://b.example/' },
      ],
      problems: [],
    });
  });

  it('names each bad line by its number and text', () => {
    const { problems } = parseLinkLines('https://ok.example/\nwww.example.com/docs\nftp://files.example/a\nhttps://a.example https://b.example\nhttps://\n');
    expect(problems.map((p) => p.line)).toEqual([2, 3, 4, 5]);
    const message = describeLinkProblems(problems);
    expect(message).toContain('Line 2: “www.example.com/docs” is not a full web address; start it with https://.');
    expect(message).toContain('Line 3: “ftp://files.example/a” is a ftp: address; only http:// and https:// pages can be added.');
    expect(message).toContain('Line 4: “https://a.example https://b.example” has a space in it; put one link on each line.');
    expect(message).toContain('Line 5: “https://” is not a valid web address.');
  });

  it('shortens long lines and shows invisible characters', () => {
    const { problems } = parseLinkLines(`x${'y'.repeat(200)}\u0007`);
    expect(describeLinkProblems(problems)).toMatch(/^Line 1: “xy+…” /);
    expect(describeLinkProblems(parseLinkLines('bad\u0001link').problems)).toContain('“bad\\u0001link”');
  });
});

describe('the deletion message', () => {
  const urls = (n: number) => Array.from({ length: n }, (_, i) => `https://docs.example/${i + 1}`);
  it('says how many of how many links went, and which when they are few', () => {
    expect(deletedLinksMessage({ deleted_links: urls(3), not_found_links: [] }, 12)).toEqual([
      'Deleted 3 of 12 links: https://docs.example/1, https://docs.example/2, https://docs.example/3. 9 links remain.',
    ]);
    expect(deletedLinksMessage({ deleted_links: urls(6), not_found_links: [] }, 7)).toEqual(['Deleted 6 of 7 links. 1 link remains.']);
    expect(deletedLinksMessage({ deleted_links: urls(2), not_found_links: [] }, 2)[0]).toBe(
      'Deleted all 2 links: https://docs.example/1, https://docs.example/2. The knowledge base is empty now and was removed with them.',
    );
    expect(deletedLinksMessage({ deleted_links: urls(1), not_found_links: ['https://gone.example/'] }, 4)).toEqual([
      'Deleted 1 of 4 links: https://docs.example/1. 3 links remain.',
      'Already gone: https://gone.example/.',
    ]);
  });
});

describe('sizes', () => {
  it.each([
    [512, '512 bytes'],
    [1536, '1.5 KB'],
    [1048576, '1 MB'],
    [26214400, '25 MB'],
  ])('%i → %s', (bytes, text) => {
    expect(formatBytes(bytes)).toBe(text);
  });
});

describe('the copilot list’s filters in the address', () => {
  it('round-trip through the hash', () => {
    const route = { name: 'copilots' as const, filters: { q: 'pet store & co', status: 'live' as const } };
    expect(href(route)).toBe('#/copilots?q=pet+store+%26+co&status=live');
    expect(parseRoute(href(route))).toEqual(route);
    expect(parseRoute('#/copilots')).toEqual({ name: 'copilots' });
    expect(href({ name: 'copilots' })).toBe('#/copilots');
  });

  it('an address with a malformed escape names no page (it threw, and the dashboard went blank)', () => {
    for (const hash of ['#/copilots/%', '#/copilots/%E0%A4%A', '#/copilots/%E0%A4%A/report']) {
      expect(parseRoute(hash)).toEqual({ name: 'not-found', path: hash.slice(1) });
    }
    expect(parseRoute('#/copilots/a%20b/report')).toEqual({ name: 'copilot', id: 'a b', tab: 'report' });
  });

  it('are written in place only while the address shows the list: never over a screen opened since', () => {
    const replaced: string[] = [];
    const at = (hash: string) => vi.stubGlobal('location', { hash, replace: (target: string) => replaced.push(target) });
    try {
      for (const hash of ['', '#/', '#/copilots?q=old']) {
        at(hash);
        replaceRoute({ name: 'copilots', filters: { q: 'new' } });
      }
      expect(replaced).toEqual(['#/copilots?q=new', '#/copilots?q=new', '#/copilots?q=new']);
      // The list's first effect runs after it is drawn: by then a link may have opened a copilot.
      at('#/copilots/abc/knowledge-base');
      replaceRoute({ name: 'copilots', filters: {} });
      at('#/copilots?q=new');
      replaceRoute({ name: 'copilots', filters: { q: 'new' } });
      expect(replaced).toHaveLength(3);
    } finally {
      vi.unstubAllGlobals();
    }
  });

  it('drop what is not a filter', () => {
    expect(parseCopilotFilters('q=%20%20&status=archived&x=1')).toEqual({});
    expect(copilotFiltersQuery({})).toBe('');
  });
});

describe('the key in what was pasted at sign-in', () => {
  const key = `cms_${'a'.repeat(16)}_${'B'.repeat(32)}`;

  it('drops a header prefix, quotes and the invisible characters a copy brings', () => {
    for (const pasted of [key, ` ${key}\n`, `Bearer ${key}`, `“${key}”`, `'${key}'`, `\`${key}\``, `${key}\u200b`, `\ufeff${key}`]) {
      expect(keyFromPaste(pasted), JSON.stringify(pasted)).toBe(key);
    }
    expect(keyFromPaste('  ')).toBe('');
  });

  it('names a character no key has, which the browser could not send (it said the service could not be reached)', () => {
    const error = keyFromPaste(`${key}é`);
    expect(error).toBeInstanceOf(Error);
    expect((error as Error).message).toBe(
      'This is not an API key: it holds “é”, and a key is made of the letters, digits and underscores of “cms_…”. Paste it again.',
    );
  });
});

describe('announcements of links that finished', () => {
  const link = (url: string, status: string, extra: { error?: string; passages?: number } = {}) => ({
    url,
    status,
    error: extra.error ?? null,
    passages: extra.passages ?? 0,
  });

  it('names one link with its passages or its reason, counts several, says nothing of none', () => {
    expect(settledLinksMessage([link('https://a.example/', 'indexed', { passages: 3 })])).toBe('Indexed https://a.example/: 3 passages.');
    expect(settledLinksMessage([link('https://b.example/', 'failed', { error: 'The page answered 404.' })])).toBe(
      'Failed https://b.example/: The page answered 404.',
    );
    expect(
      settledLinksMessage([
        link('https://a.example/', 'indexed', { passages: 1 }),
        link('https://c.example/', 'indexed', { passages: 2 }),
        link('https://b.example/', 'failed', { error: 'Timed out' }),
        link('https://d.example/', 'failed', { error: 'Blocked' }),
      ]),
    ).toBe('2 links indexed. 2 links failed; the first, https://b.example/: Timed out.');
    expect(settledLinksMessage([])).toBe('');
  });

  it('takes the links pending before, or new, and settled now', () => {
    const before = new Map([
      ['https://a.example/', 'pending'],
      ['https://b.example/', 'indexed'],
      ['https://c.example/', 'pending'],
    ]);
    const now = [
      link('https://a.example/', 'indexed'),
      link('https://b.example/', 'indexed'),
      link('https://c.example/', 'pending'),
      link('https://d.example/', 'failed'),
    ];
    expect(newlySettled(before, now).map((l) => l.url)).toEqual(['https://a.example/', 'https://d.example/']);
  });
});

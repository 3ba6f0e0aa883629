import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ExtractError, extractText, MAX_HTML_CHARS, MAX_NESTING } from '../../../src/domain/knowledgebase/extract.js';

const fixture = (name: string): Buffer => readFileSync(new URL(`../../fixtures/knowledgebase/${name}`, import.meta.url));

const utf8 = (s: string): Buffer => Buffer.from(s, 'utf8');

/** Enough words for `<main>`/`<article>` to count as real content. */
const FILLER = 'These words are here so that the element counts as real content for the extractor. '.repeat(3);

function extractError(body: Buffer, contentType: string | null): ExtractError {
  try {
    extractText(body, contentType);
  } catch (error) {
    expect(error).toBeInstanceOf(ExtractError);
    return error as ExtractError;
  }
  throw new Error('expected an ExtractError');
}

describe('extractText: content types', () => {
  const html = `<!doctype html><html><head><title>T</title></head><body><p>Hello <b>HTML</b></p></body></html>`;
  const cases: Array<{ name: string; contentType: string | null; body: Buffer; text: string; title: string | null }> = [
    { name: 'text/html', contentType: 'text/html; charset=utf-8', body: utf8(html), text: 'Hello HTML', title: 'T' },
    { name: 'upper-case type and parameters', contentType: 'TEXT/HTML ; Charset="UTF-8"', body: utf8(html), text: 'Hello HTML', title: 'T' },
    { name: 'application/xhtml+xml', contentType: 'application/xhtml+xml', body: utf8(html), text: 'Hello HTML', title: 'T' },
    {
      name: 'text/plain as is, CRLF normalised',
      contentType: 'text/plain',
      body: utf8('Line one\r\nLine <b>two</b>\r\n\r\nPara'),
      text: 'Line one\nLine <b>two</b>\n\nPara',
      title: null,
    },
    { name: 'text/plain strips NULs', contentType: 'text/plain', body: utf8('a\u0000b'), text: 'ab', title: null },
    {
      name: 'text/markdown',
      contentType: 'text/markdown; charset=utf-8',
      body: utf8('# Title\n\nBody *text*.'),
      text: '# Title\n\nBody *text*.',
      title: 'Title',
    },
    { name: 'text/x-markdown', contentType: 'text/x-markdown', body: utf8('# Other\n\nBody.'), text: '# Other\n\nBody.', title: 'Other' },
    { name: 'no type, doctype sniffed as HTML', contentType: null, body: utf8(`\n  ${html}`), text: 'Hello HTML', title: 'T' },
    { name: 'no type, <html> sniffed as HTML', contentType: null, body: utf8('<HTML><body><p>Hi &amp; bye</p></body></HTML>'), text: 'Hi & bye', title: null },
    {
      name: 'no type, comment first sniffed as HTML',
      contentType: null,
      body: utf8('<!-- generated --><p>From a comment</p>'),
      text: 'From a comment',
      title: null,
    },
    { name: 'empty type header is treated as missing', contentType: '  ', body: utf8('just words'), text: 'just words', title: null },
    { name: 'no type, text sniffed as plain', contentType: null, body: utf8('Some <notes> in plain text.'), text: 'Some <notes> in plain text.', title: null },
  ];
  it.each(cases)('accepts $name', ({ contentType, body, text, title }) => {
    expect(extractText(body, contentType)).toEqual({ title, text, truncated: false });
  });

  it('says when HTML is longer than MAX_HTML_CHARS and only its first part was read; plain text is read whole', () => {
    const html = (chars: number) => {
      const start = '<p>First words.</p><!-- ';
      return utf8(`${start}${'x'.repeat(chars - start.length - 4)} -->`);
    };
    expect(extractText(html(MAX_HTML_CHARS), 'text/html')).toEqual({ title: null, text: 'First words.', truncated: false });
    expect(extractText(html(MAX_HTML_CHARS + 1), 'text/html')).toEqual({ title: null, text: 'First words.', truncated: true });
    expect(extractText(utf8('word '.repeat(MAX_HTML_CHARS / 4)), 'text/plain').truncated).toBe(false);
  });

  const failures: Array<{ name: string; contentType: string | null; body: Buffer; message: string }> = [
    {
      name: 'application/pdf',
      contentType: 'application/pdf',
      body: utf8('%PDF-1.7'),
      message: 'Unsupported content type application/pdf; only HTML, plain text and Markdown pages are indexed.',
    },
    {
      name: 'image/png with parameters',
      contentType: 'image/png; q=1',
      body: Buffer.from([0x89, 0x50, 0x4e, 0x47]),
      message: 'Unsupported content type image/png; only HTML, plain text and Markdown pages are indexed.',
    },
    {
      name: 'text/csv (text, but not a page)',
      contentType: 'text/csv',
      body: utf8('a,b'),
      message: 'Unsupported content type text/csv; only HTML, plain text and Markdown pages are indexed.',
    },
    {
      name: 'a header that is not a media type is not echoed',
      contentType: '<script>alert(1)</script>',
      body: utf8('x'),
      message: 'Unsupported content type; only HTML, plain text and Markdown pages are indexed.',
    },
    {
      name: 'no type and binary (NUL bytes)',
      contentType: null,
      body: Buffer.from([0x25, 0x50, 0x44, 0x46, 0x00, 0x01, 0x02]),
      message: 'The page has no content type and does not look like text; only HTML, plain text and Markdown pages are indexed.',
    },
    {
      name: 'no type and not valid UTF-8',
      contentType: null,
      body: Buffer.from([0x68, 0x69, 0xff, 0xfe, 0xfd]),
      message: 'The page has no content type and does not look like text; only HTML, plain text and Markdown pages are indexed.',
    },
    {
      name: 'empty HTML',
      contentType: 'text/html',
      body: utf8('<html><body><script>x()</script></body></html>'),
      message: 'The page has no readable text to index.',
    },
    { name: 'whitespace-only text', contentType: 'text/plain', body: utf8(' \r\n\t\u0000 '), message: 'The page has no readable text to index.' },
    { name: 'empty body', contentType: 'text/markdown', body: Buffer.alloc(0), message: 'The page has no readable text to index.' },
  ];
  it.each(failures)('refuses $name', ({ contentType, body, message }) => {
    const error = extractError(body, contentType);
    expect(error.message).toBe(message);
    expect(error.name).toBe('ExtractError');
  });
});

describe('extractText: character encodings', () => {
  const latin1Html = (meta: string): Buffer =>
    Buffer.from(`<html><head>${meta}<title>Caf\xe9</title></head><body><p>Cr\xe8me br\xfbl\xe9e \x80 5</p></body></html>`, 'latin1');
  const cases: Array<{ name: string; contentType: string | null; body: Buffer; text: string }> = [
    { name: 'utf-8 by default', contentType: 'text/plain', body: utf8('Crème brûlée € 5'), text: 'Crème brûlée € 5' },
    { name: 'charset from the header', contentType: 'text/plain; charset=windows-1252', body: Buffer.from('Cr\xe8me \x80', 'latin1'), text: 'Crème €' },
    {
      name: 'windows-1252 punctuation (0x80-0x9F)',
      contentType: 'text/plain; charset=windows-1252',
      body: Buffer.from([0x93, 0x69, 0x74, 0x92, 0x73, 0x94, 0x20, 0x96, 0x20, 0x99, 0x81]),
      text: '\u201cit\u2019s\u201d \u2013 \u2122\u0081',
    },
    {
      name: 'iso-8859-1 label (decoded as windows-1252, as browsers do)',
      contentType: 'text/plain; charset="ISO-8859-1"',
      body: Buffer.from('\xe9\x80', 'latin1'),
      text: 'é€',
    },
    { name: 'shift_jis', contentType: 'text/plain; charset=shift_jis', body: Buffer.from([0x93, 0xfa, 0x96, 0x7b]), text: '日本' },
    { name: 'unknown label falls back to utf-8', contentType: 'text/plain; charset=no-such-charset', body: utf8('naïve'), text: 'naïve' },
    {
      name: 'BOM wins over the header',
      contentType: 'text/plain; charset=windows-1252',
      body: Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), utf8('naïve')]),
      text: 'naïve',
    },
    { name: 'UTF-16LE with BOM', contentType: 'text/plain', body: Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from('hé', 'utf16le')]), text: 'hé' },
    { name: 'HTML <meta charset>', contentType: 'text/html', body: latin1Html('<meta charset="windows-1252">'), text: 'Crème brûlée € 5' },
    {
      name: 'HTML <meta http-equiv>',
      contentType: 'text/html',
      body: latin1Html('<meta http-equiv="Content-Type" content="text/html; charset=iso-8859-1">'),
      text: 'Crème brûlée € 5',
    },
    {
      name: 'HTML header charset wins over <meta>',
      contentType: 'text/html; charset=utf-8',
      body: utf8('<meta charset="windows-1252"><p>naïve</p>'),
      text: 'naïve',
    },
    { name: 'HTML <meta> naming UTF-16 means UTF-8', contentType: 'text/html', body: utf8('<meta charset="utf-16"><p>naïve</p>'), text: 'naïve' },
    { name: 'sniffed HTML honours <meta charset>', contentType: null, body: latin1Html('<meta charset="windows-1252">'), text: 'Crème brûlée € 5' },
    // The HTML standard's prescan, not a pattern: a commented-out <meta> is no declaration,
    // and content=… counts only with http-equiv="Content-Type".
    {
      name: 'HTML <meta> inside a comment is ignored',
      contentType: 'text/html',
      body: utf8('<!-- <meta charset="windows-1252"> --><p>naïve</p>'),
      text: 'naïve',
    },
    {
      name: 'HTML content=… without http-equiv is ignored',
      contentType: 'text/html',
      body: utf8('<meta name="x" content="text/html; charset=windows-1252"><p>naïve</p>'),
      text: 'naïve',
    },
    {
      name: 'HTML <meta charset> naming x-user-defined means windows-1252',
      contentType: 'text/html',
      body: latin1Html('<meta charset="x-user-defined">'),
      text: 'Crème brûlée € 5',
    },
    {
      name: 'plain text ignores a <meta charset> in its body',
      contentType: 'text/plain',
      body: utf8('<meta charset="windows-1252"> naïve'),
      text: '<meta charset="windows-1252"> naïve',
    },
  ];
  it.each(cases)('$name', ({ contentType, body, text }) => {
    expect(extractText(body, contentType).text).toBe(text);
  });

  it('reads the title in the declared encoding too', () => {
    expect(extractText(latin1Html('<meta charset="windows-1252">'), 'text/html').title).toBe('Café');
  });
});

describe('extractText: readable text from HTML', () => {
  it('keeps the article of a documentation page and drops the boilerplate', () => {
    const { title, text } = extractText(fixture('docs-page.html'), 'text/html; charset=utf-8');
    expect(title).toBe('Rotating API keys — Example Docs');
    expect(text).toBe(
      [
        'Rotating API keys',
        'Last updated by the platform team',
        'API keys identify your application to the service. You should rotate them regularly, and immediately when a key may have leaked. See the security guide for background & more details.',
        'Create a new key',
        'Open the dashboard, choose Settings, then API keys, and press Create key. The new key is shown once; copy it to your secret store.',
        '1. Create the new key.\n2. Deploy it everywhere.\n3. Revoke the old key.',
        'Revoke the old key',
        'Once every deployment uses the new key, revoke the old one. Requests signed with a revoked key fail with status 401.',
        'The API keys screen.',
        'Scope Meaning\nread List and fetch resources\nwrite Create and change resources',
      ].join('\n\n'),
    );
  });

  it('drops every kind of boilerplate, link target and image source', () => {
    const { text } = extractText(fixture('docs-page.html'), 'text/html');
    for (const gone of [
      'SECRET',
      'COOKIE-BANNER',
      'PRICING-NAV',
      'SEARCH-BUTTON',
      'SIDEBAR-LINK',
      'SVG-',
      'NOSCRIPT-TEXT',
      'TEMPLATE-TEXT',
      'ARTICLE-FOOTER',
      'ASIDE-ARTICLE',
      'SITE-FOOTER',
      'http',
      '/docs',
      '.png',
      'logo',
      '[',
      'Screenshot',
    ]) {
      expect(text, gone).not.toContain(gone);
    }
  });

  it('uses the whole body, minus boilerplate, when there is no <main> or <article>', () => {
    const { title, text } = extractText(fixture('no-main.html'), 'text/html');
    expect(title).toBe('Plain old page');
    expect(text).toBe(
      [
        'Welcome to the old page',
        'This page was written long before main existed. Its content lives in plain divs, and the extractor has to use the whole body after dropping the boilerplate around it.',
        'A line in a div.\nAnother line in a div.',
        'Special characters: café, naïve, €5, <angle brackets>.',
      ].join('\n\n'),
    );
  });

  it('falls back to the body when <main> is only a stub', () => {
    const { text } = extractText(fixture('stub-main.html'), 'text/html');
    expect(text).toContain('Loading…');
    expect(text).toContain('Where the text really is\n\nSome sites put only a placeholder');
  });

  it('uses the articles when there is no <main>', () => {
    const { text } = extractText(fixture('articles.html'), 'text/html');
    expect(text.startsWith('First post\n\nThe first post talks about indexing')).toBe(true);
    expect(text).toContain('\n\nSecond post\n\nThe second post is about ranking');
    expect(text).not.toContain('INTRO-OUTSIDE-ARTICLES');
    expect(text).not.toContain('NAV-TEXT');
  });

  const cases: Array<{ name: string; html: string; text: string }> = [
    { name: 'role=main counts as <main>', html: `<div>OUTSIDE</div><div role="main"><p>${FILLER}</p></div>`, text: FILLER.trim() },
    {
      name: 'a header inside <main> is kept, the site header is not',
      html: `<header>SITE</header><main><header><h1>Page heading</h1></header><p>${FILLER}</p></main>`,
      text: `Page heading\n\n${FILLER.trim()}`,
    },
    {
      name: 'aria-hidden and hidden inputs are dropped',
      html: '<p>Seen <span aria-hidden="TRUE">unseen</span><input type="HIDDEN" value="v"></p>',
      text: 'Seen',
    },
    {
      name: 'what a browser does not show is dropped: the hidden attribute, an inline display: none',
      html: '<p>Seen <span hidden>unseen</span><span style="color:red;DISPLAY:NONE">gone</span><b style="display: none">away</b> too</p>',
      text: 'Seen too',
    },
    { name: 'role lists are understood', html: '<div role="navigation menubar">menu</div><p>Body text</p>', text: 'Body text' },
    { name: 'whitespace collapses, non-breaking spaces too', html: '<p>  a \t\n b&nbsp;&nbsp;c\u2003d </p>', text: 'a b c d' },
    {
      name: 'paragraphs and headings are separated by one blank line',
      html: '<h1>H</h1><p>One</p><p>Two</p><h3>Sub</h3>Tail<br>line',
      text: 'H\n\nOne\n\nTwo\n\nSub\n\nTail\nline',
    },
    { name: 'headings keep their case', html: '<h2>Mixed Case Heading</h2>', text: 'Mixed Case Heading' },
    {
      name: 'definition lists and table cells are not glued together',
      html: '<p>Before</p><dl><dt>Term</dt><dd>Meaning</dd><dt>Other</dt><dd>More</dd></dl><div>x</div><table><tr><th>h1</th><th>h2</th></tr><tr><td>a</td><td>b</td></tr></table><p>After</p>',
      text: 'Before\n\nTerm\nMeaning\n\nOther\nMore\n\nx\n\nh1 h2\na b\n\nAfter',
    },
    { name: 'entities are decoded', html: '<p>&lt;p&gt; &amp;amp; &quot;q&quot; &#x1F600; &eacute;</p>', text: '<p> &amp; "q" 😀 é' },
    { name: 'an HTML fragment without <body> works', html: '<p>Fragment</p>', text: 'Fragment' },
    { name: 'text is NFC-normalised', html: '<p>cafe\u0301</p>', text: 'caf\u00e9' },
  ];
  it.each(cases)('$name', ({ html, text }) => {
    expect(extractText(utf8(html), 'text/html').text).toBe(text);
  });
});

describe('extractText: titles', () => {
  const html: Array<{ name: string; html: string; title: string | null }> = [
    { name: 'from <title>, entities decoded, whitespace collapsed', html: '<title>\n  A &amp; B\n  C </title><p>x</p>', title: 'A & B C' },
    { name: 'missing', html: '<p>x</p>', title: null },
    { name: 'empty', html: '<title>  </title><p>x</p>', title: null },
    { name: 'the first one wins', html: '<title>First</title><title>Second</title><p>x</p>', title: 'First' },
    { name: 'an SVG <title> is not the page title', html: '<body><svg><title>Icon</title></svg><p>x</p></body>', title: null },
    { name: 'capped in length', html: `<title>${'t'.repeat(5000)}</title><p>x</p>`, title: 't'.repeat(500) },
  ];
  it.each(html)('HTML: $name', ({ html: page, title }) => {
    expect(extractText(utf8(page), 'text/html').title).toBe(title);
  });

  const markdown: Array<{ name: string; md: string; title: string | null }> = [
    { name: 'first # heading', md: 'Intro line\n\n# The Title\n\n# Second', title: 'The Title' },
    { name: 'closing hashes and indentation', md: '   #   Spaced title ##  \n', title: 'Spaced title' },
    { name: 'setext heading', md: 'Setext title\n============\n\nText', title: 'Setext title' },
    { name: '## is not a level-one heading', md: '## Sub\n\ntext', title: null },
    { name: '#hashtag is not a heading', md: '#hashtag\n\ntext', title: null },
    { name: 'no heading', md: 'just text', title: null },
    {
      name: 'headings in code fences and front matter are skipped',
      md: readFileSync(new URL('../../fixtures/knowledgebase/guide.md', import.meta.url), 'utf8'),
      title: 'Getting started',
    },
  ];
  it.each(markdown)('Markdown: $name', ({ md, title }) => {
    expect(extractText(utf8(md), 'text/markdown').title).toBe(title);
  });
});

describe('extractText: hostile input stays safe and bounded', () => {
  it(`refuses HTML nested deeper than ${MAX_NESTING} elements`, () => {
    const depth = 200_000;
    const error = extractError(utf8(`${'<div>'.repeat(depth)}deep${'</div>'.repeat(depth)}`), 'text/html');
    expect(error.message).toBe(`The page's HTML is nested more than ${MAX_NESTING} elements deep, so it was not indexed.`);
  });

  it('accepts nesting up to the limit', () => {
    const depth = MAX_NESTING - 10;
    const page = `${'<div>'.repeat(depth)}<p>${FILLER}</p>${'</div>'.repeat(depth)}`;
    expect(extractText(utf8(page), 'text/html').text).toBe(FILLER.trim());
  });

  it('is not fooled by tags that close themselves (unclosed <p> and <li> do not nest)', () => {
    const page = `<ul>${'<li>item '.repeat(10_000)}</ul>${'<p>para '.repeat(10_000)}`;
    const { text } = extractText(utf8(page), 'text/html');
    expect(text.split('item').length - 1).toBe(10_000);
  });

  // A hang fails on the runner's test timeout; how long these take is the bench's business.
  const timed = (name: string, body: () => Buffer, contentType: string, check: (text: string) => void): void => {
    it(name, () => {
      const input = body();
      let text = '';
      try {
        text = extractText(input, contentType).text;
      } catch (error) {
        expect(error).toBeInstanceOf(ExtractError);
      }
      check(text);
    });
  };

  const page25MB = (): Buffer => {
    const unit = `<div class="post"><h2>Heading</h2><p>Lorem ipsum dolor sit amet, <a href="/x">consectetur</a> adipiscing &amp; elit.</p><script>var x = "<div>";</script></div>\n`;
    return utf8(`<html><head><title>Big</title></head><body><main>${unit.repeat(Math.ceil(25e6 / unit.length))}</main></body></html>`);
  };
  timed('a 25 MB page is cut and converted', page25MB, 'text/html', (text) => {
    expect(text.startsWith('Heading\n\nLorem ipsum dolor sit amet, consectetur adipiscing & elit.')).toBe(true);
    expect(text.length).toBeGreaterThan(MAX_HTML_CHARS / 3);
    expect(text.length).toBeLessThan(MAX_HTML_CHARS);
  });
  timed(
    'a 25 MB single line of HTML text',
    () => utf8(`<p>${'x'.repeat(25e6)}`),
    'text/html',
    (text) => {
      expect(text).toMatch(/^x+$/);
    },
  );
  timed(
    '25 MB of words in one paragraph',
    () => utf8(`<p>${'word '.repeat(5e6)}`),
    'text/html',
    (text) => {
      expect(text.startsWith('word word')).toBe(true);
    },
  );
  timed(
    'unmatched close tags at the deepest allowed level',
    () => utf8(`${'<div>'.repeat(MAX_NESTING - 1) + '</x>'.repeat(900_000)}end`),
    'text/html',
    (text) => {
      expect(text).toBe('end');
    },
  );
  timed(
    'a 25 MB plain text page',
    () => utf8('Plain words here.\n\n'.repeat(25e6 / 19)),
    'text/plain',
    (text) => {
      expect(text.startsWith('Plain words here.\n\nPlain')).toBe(true);
    },
  );
});

describe('extractText: text that reorders or hides itself', () => {
  it('a passage keeps no bidirectional formatting nor tag characters (lists sweep: U+202E came back in search results), whatever the type', () => {
    const hidden = 'Reset your key\u202e here, \u2066isolated\u2069 text, and \u{e0049}\u{e0067}\u{e006e} tags.';
    for (const [type, body] of [
      ['text/html', `<html><head><title>T\u202eitle</title></head><body><p>${hidden}</p><p>&#x202E;entity &#xE0041;</p></body></html>`],
      ['text/plain', hidden],
    ] as const) {
      const page = extractText(utf8(body), type);
      expect(page.text, type).not.toMatch(/[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u{e0000}-\u{e007f}]/u);
      expect(page.text, type).toContain('Reset your key here, isolated text, and  tags.');
      if (type === 'text/html') expect(page.title).toBe('Title');
    }
  });
});

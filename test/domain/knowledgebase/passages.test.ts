import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createHash } from 'node:crypto';
import { packPassages, passagesDigest, splitPassages, unpackPassages, type PassageOptions } from '../../../src/domain/knowledgebase/passages.js';

const words = (s: string): string[] => s.split(/\s+/).filter((w) => w !== '');
const wordCount = (s: string): number => words(s).length;
/** `n` distinct words, so order and placement can be checked. */
const seq = (n: number, prefix = 'w'): string => Array.from({ length: n }, (_, i) => `${prefix}${i}`).join(' ');
const sentence = (n: number, prefix: string): string => `${seq(n, prefix)}.`;

describe('splitPassages', () => {
  const cases: Array<{ name: string; text: string; opts?: PassageOptions; expected: string[] }> = [
    { name: 'empty text', text: '', expected: [] },
    { name: 'whitespace only', text: ' \n\n\t \r\n ', expected: [] },
    { name: 'one short paragraph, trimmed', text: '  Hello   world.  ', expected: ['Hello world.'] },
    { name: 'short paragraphs are packed together', text: 'One.\n\nTwo.\n\n\n\nThree.', expected: ['One.\n\nTwo.\n\nThree.'] },
    { name: 'CRLF and blank lines with spaces separate paragraphs', text: 'a\r\n \r\nb\rc', expected: ['a\n\nb\nc'] },
    {
      name: 'packing stops at targetWords',
      text: [sentence(4, 'a'), sentence(4, 'b'), sentence(4, 'c')].join('\n\n'),
      opts: { targetWords: 8, maxWords: 12 },
      expected: [`${sentence(4, 'a')}\n\n${sentence(4, 'b')}`, sentence(4, 'c')],
    },
    {
      name: 'a paragraph up to maxWords stays whole',
      text: `${seq(3, 'a')}.\n\n${seq(12, 'b')}`,
      opts: { targetWords: 8, maxWords: 12 },
      expected: [`${seq(3, 'a')}.`, seq(12, 'b')],
    },
    {
      name: 'a paragraph over maxWords is cut at sentence ends',
      text: [sentence(5, 'a'), sentence(5, 'b'), sentence(5, 'c')].join(' '),
      opts: { targetWords: 10, maxWords: 12 },
      expected: [`${sentence(5, 'a')} ${sentence(5, 'b')}`, sentence(5, 'c')],
    },
    {
      name: 'sentence ends inside quotes and brackets count, abbreviations too',
      text: 'He said "stop." Then (he left.) Done? Yes! e.g. that.',
      opts: { targetWords: 2, maxWords: 3 },
      expected: ['He said "stop."', 'Then (he left.)', 'Done? Yes!', 'e.g. that.'],
    },
    {
      name: 'a line break inside a long paragraph is a cut point (lists, table rows)',
      text: `- ${seq(3, 'a')}\n- ${seq(3, 'b')}\n- ${seq(3, 'c')}`,
      opts: { targetWords: 8, maxWords: 10 },
      expected: [`- ${seq(3, 'a')}\n- ${seq(3, 'b')}`, `- ${seq(3, 'c')}`],
    },
    {
      name: 'a sentence over maxWords is cut at word boundaries',
      text: seq(25, 'x'),
      opts: { targetWords: 8, maxWords: 10 },
      expected: [seq(10, 'x'), Array.from({ length: 10 }, (_, i) => `x${i + 10}`).join(' '), Array.from({ length: 5 }, (_, i) => `x${i + 20}`).join(' ')],
    },
    {
      name: 'text without spaces is cut at full-width stops when over the character bound',
      text: '今日は晴れです。明日は雨です。「明後日は雪。」',
      opts: { targetWords: 1, maxWords: 1 },
      expected: ['今日は晴れです。', '明日は雨です。', '「明後日は雪。」'],
    },
    {
      name: 'a heading stays with the paragraph after it',
      text: `${seq(6, 'a')}.\n\nNext heading\n\n${seq(6, 'b')}.`,
      opts: { targetWords: 10, maxWords: 14 },
      expected: [`${seq(6, 'a')}.`, `Next heading\n\n${seq(6, 'b')}.`],
    },
    {
      name: 'a short start may take a paragraph up to maxWords',
      text: `Title\n\n${seq(12, 'b')}.`,
      opts: { targetWords: 10, maxWords: 14 },
      expected: [`Title\n\n${seq(12, 'b')}.`],
    },
  ];
  it.each(cases)('$name', ({ text, opts, expected }) => {
    expect(splitPassages(text, opts)).toEqual(expected);
  });

  it('uses about 200 words per passage by default, never more than 300', () => {
    const paragraphs = Array.from({ length: 60 }, (_, i) => `${seq(30 + (i % 7) * 20, `p${i}w`)}.`);
    const passages = splitPassages(paragraphs.join('\n\n'));
    for (const passage of passages) expect(wordCount(passage)).toBeLessThanOrEqual(300);
    const average = passages.reduce((n, p) => n + wordCount(p), 0) / passages.length;
    expect(average).toBeGreaterThan(120);
    expect(average).toBeLessThanOrEqual(200);
  });

  it('cuts a giant word at maxWords * 20 characters, never inside a surrogate pair', () => {
    const giant = '😀'.repeat(4000); // 8000 UTF-16 units
    const passages = splitPassages(`before ${giant} after`, { targetWords: 10, maxWords: 100 });
    for (const passage of passages) {
      expect(passage.length).toBeLessThanOrEqual(2000);
      expect(passage).not.toMatch(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/);
    }
    expect(passages.join('').replace(/\s+/g, '')).toBe(`before${giant}after`);
  });

  it('keeps very long words apart when they would exceed the character bound together', () => {
    const long = 'a'.repeat(150);
    const passages = splitPassages(Array.from({ length: 10 }, () => long).join(' '), { targetWords: 10, maxWords: 10 });
    for (const passage of passages) expect(passage.length).toBeLessThanOrEqual(200);
    expect(passages.length).toBe(10);
  });

  const badOptions: Array<{ name: string; opts: PassageOptions; message: RegExp }> = [
    { name: 'targetWords 0', opts: { targetWords: 0 }, message: /targetWords/ },
    { name: 'targetWords not an integer', opts: { targetWords: 1.5 }, message: /targetWords/ },
    { name: 'maxWords NaN', opts: { maxWords: Number.NaN }, message: /maxWords/ },
    { name: 'maxWords below targetWords', opts: { targetWords: 50, maxWords: 40 }, message: /maxWords/ },
  ];
  it.each(badOptions)('refuses options: $name', ({ opts, message }) => {
    expect(() => splitPassages('text', opts)).toThrow(message);
  });

  it('raises the default maxWords to a larger targetWords', () => {
    const passages = splitPassages(Array.from({ length: 4 }, (_, i) => seq(150, `p${i}w`)).join('\n\n'), { targetWords: 500 });
    expect(passages.map(wordCount)).toEqual([450, 150]);
  });

  it('splits 25 MB of text (its time: the bench)', () => {
    const text = `${'Lorem ipsum dolor sit amet, consectetur adipiscing elit. '.repeat(40)}\n\n`.repeat(11_000);
    expect(text.length).toBeGreaterThan(25e6);
    const passages = splitPassages(text);
    expect(passages.length).toBeGreaterThan(10_000);
  });
});

describe('splitPassages: properties', () => {
  // Text built from words, spaces, line breaks, blank lines and sentence ends, with odd
  // whitespace and the occasional very long word.
  const word = fc.oneof(
    { weight: 20, arbitrary: fc.stringMatching(/^[a-zA-Z0-9éß日本]{1,12}$/) },
    { weight: 3, arbitrary: fc.stringMatching(/^[a-z]{1,8}[.!?]["')]?$/) },
    { weight: 1, arbitrary: fc.string({ unit: 'binary', minLength: 1, maxLength: 20 }).map((s) => s.replace(/\s/g, '') || 'x') },
    { weight: 1, arbitrary: fc.integer({ min: 50, max: 400 }).map((n) => 'L'.repeat(n)) },
  );
  const separator = fc.constantFrom(' ', ' ', ' ', '  ', '\n', '\n\n', '\r\n\r\n', '\t', '\u00a0', ' \n \n ');
  const text = fc.array(fc.tuple(word, separator), { maxLength: 400 }).map((parts) => parts.map(([w, s]) => w + s).join(''));
  const options = fc
    .tuple(fc.integer({ min: 1, max: 40 }), fc.integer({ min: 0, max: 20 }))
    .map(([targetWords, extra]) => ({ targetWords, maxWords: targetWords + extra }));

  it('every word lands in exactly one passage, in order; passages are non-empty, trimmed and bounded', () => {
    fc.assert(
      fc.property(text, options, (input, opts) => {
        const passages = splitPassages(input, opts);
        const maxChars = opts.maxWords * 20;
        for (const passage of passages) {
          expect(passage).not.toBe('');
          expect(passage).toBe(passage.trim());
          expect(wordCount(passage)).toBeLessThanOrEqual(opts.maxWords);
          expect(passage.length).toBeLessThanOrEqual(maxChars);
        }
        // Words longer than the character bound are the only ones allowed to be cut.
        const inputWords = words(input.replace(/\u0000/g, '')); // NULs are dropped (no database stores them)
        if (inputWords.every((w) => w.length <= maxChars)) {
          expect(passages.flatMap(words)).toEqual(inputWords);
        }
        expect(passages.join('').replace(/\s+/g, '')).toBe(input.replace(/\s+/g, '').replace(/\u0000/g, ''));
      }),
      { numRuns: 300 },
    );
  });

  it('never loses or reorders characters of arbitrary strings', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 2000 }), fc.integer({ min: 1, max: 10 }), (input, targetWords) => {
        const passages = splitPassages(input, { targetWords, maxWords: targetWords });
        expect(passages.join('').replace(/\s+/g, '')).toBe(input.replace(/\s+/g, '').replace(/\u0000/g, ''));
        for (const passage of passages) expect(passage.length).toBeLessThanOrEqual(targetWords * 20);
      }),
      { numRuns: 300 },
    );
  });
});

describe('packed passages (how a page crosses from its task thread)', () => {
  it('round-trips any text, a slice at a time, in two buffers of their own', () => {
    fc.assert(
      fc.property(fc.array(fc.string({ unit: 'grapheme' })), fc.nat(20), (passages, cut) => {
        const packed = packPassages(passages);
        expect(packed.text.byteOffset).toBe(0);
        expect(packed.text.byteLength).toBe(packed.text.buffer.byteLength);
        const list = unpackPassages(packed);
        expect(list.length).toBe(passages.length);
        expect([...list.slice(0, cut), ...list.slice(cut, passages.length)]).toEqual(passages);
        expect(list.slice(cut, cut + 3)).toEqual(passages.slice(cut, cut + 3));
      }),
    );
  });
});

describe('passagesDigest', () => {
  it('differs from the digest of the same passages cut into words by the folding before (no format characters removed), so a page indexed then is indexed again at its next check', () => {
    const passages = ['A soft\u00adhyphen word.', 'Another passage.'];
    const before = createHash('sha256');
    for (const p of passages) before.update(p).update('\u0000');
    expect(passagesDigest(passages)).not.toBe(before.digest('hex'));
    expect(passagesDigest([...passages])).toBe(passagesDigest(passages));
    expect(passagesDigest(['A soft hyphen word.', 'Another passage.'])).not.toBe(passagesDigest(passages));
  });
});

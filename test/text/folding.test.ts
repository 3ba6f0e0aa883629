import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { foldText, searchTokens, STOP_WORDS } from '../../src/text/folding.js';

describe('foldText', () => {
  const cases: Array<[string, string, string]> = [
    ['ASCII case', 'Hello WORLD', 'hello world'],
    ['Latin diacritics', 'Éclair équipe ÜBER crème brûlée', 'eclair equipe uber creme brulee'],
    ['decomposed input', 'e\u0301clair', 'eclair'],
    ['ß and ẞ', 'Straße STRAẞE', 'strasse strasse'],
    ['Greek, final sigma and tonos', 'ΟΔΟΣ οδός', 'οδοσ οδοσ'],
    ['Cyrillic (the breve of й is a diacritic too)', 'ПРИВЕТ Йод', 'привет иод'],
    ['dotted capital I', 'İstanbul', 'istanbul'],
    ['ligatures and full-width forms', 'ﬁle ＡＰＩ', 'file api'],
    ['superscripts and Roman numerals', 'x² Ⅻ', 'x2 xii'],
    ['letters without a decomposition stay', 'Ø ł Æ đ ı', 'ø ł æ đ ı'],
    ['Devanagari vowel signs stay', 'हिन्दी', 'हिन्दी'],
    ['kana voicing marks stay (recomposed)', 'ガ', 'ガ'],
    ['Hangul stays composed', '한국어', '한국어'],
    ['punctuation and spaces untouched', '50% _off\\ (x)', '50% _off\\ (x)'],
  ];
  it.each(cases)('%s', (_name, input, folded) => {
    expect(foldText(input)).toBe(folded);
  });

  it('is idempotent', () => {
    for (const [, input] of cases) expect(foldText(foldText(input))).toBe(foldText(input));
  });
});

describe('searchTokens', () => {
  it('folds, splits, drops stop words and stems English', () => {
    expect(searchTokens('How do I rotate the API keys?')).toEqual(['rotat', 'api', 'kei']);
    expect(searchTokens("Don't use Node.js 18")).toEqual(['dont', 'us', 'node', 'js', '18']);
    expect(searchTokens('Café CAFE cafe\u0301')).toEqual(['cafe', 'cafe', 'cafe']);
  });

  it('stems words of the letters a–z only', () => {
    expect(searchTokens('running runners ran')).toEqual(['run', 'runner', 'ran']);
    expect(searchTokens('running1 ünits')).toEqual(['running1', 'unit']); // a digit: not stemmed; ü folds to u first
    expect(searchTokens('бегущий')).toEqual(['бегущии']); // not stemmed; the breve folded away
  });

  it('a format character inside a word leaves it one word: a soft hyphen, a zero-width joiner, a bidirectional mark; a zero-width space separates (lists sweep: soft&shy;hyphen was two words)', () => {
    expect(searchTokens('soft\u00adhyphen joiner\u200dword pay\u202eload work\u2060flow')).toEqual(['softhyphen', 'joinerword', 'payload', 'workflow']);
    expect(searchTokens('softhyphen')).toEqual(searchTokens('soft\u00adhyphen'));
    expect(searchTokens('two\u200bwords')).toEqual(['two', 'word']);
  });

  it('the stop words are English and lower case', () => {
    expect(STOP_WORDS.has('the')).toBe(true);
    expect(STOP_WORDS.has('how')).toBe(true);
    expect(STOP_WORDS.has('api')).toBe(false);
    for (const word of STOP_WORDS) expect(word).toMatch(/^[a-z]+$/);
  });
});

describe('searchTokens on any text (property)', () => {
  it('gives lower-case NFC words of letters, digits and marks: what both databases store as they are', () => {
    fc.assert(
      fc.property(fc.oneof(fc.string({ unit: 'binary', maxLength: 100 }), fc.string({ unit: 'grapheme', maxLength: 100 })), (text) => {
        for (const token of searchTokens(text)) {
          expect(token).toMatch(/^[\p{L}\p{N}\p{M}]+$/u);
          expect(token.toLowerCase()).toBe(token);
          expect(token.normalize('NFC')).toBe(token);
          expect(/[A-Z]/.test(token)).toBe(false);
        }
      }),
      { numRuns: 3000 },
    );
  });
});

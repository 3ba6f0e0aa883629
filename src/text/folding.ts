/**
 * The one text normalisation behind every text match the service makes, so that SQLite and
 * PostgreSQL answer alike: the databases never fold, tokenise or stem anything themselves.
 *
 * - `foldText` (copilot names, and the first step of search): format characters removed (a
 *   soft hyphen or zero-width joiner inside a word; not the zero-width space, which separates), NFKD (compatibility forms:
 *   `ﬁ` → `fi`, full-width `Ａ` → `A`, `²` → `2`), Unicode lower case plus the case foldings
 *   lower case lacks (`ß` → `ss`, final `ς` → `σ`), diacritics removed (the Combining
 *   Diacritical Marks blocks: `é` → `e`, `Ü` → `u`; other combining marks, such as Devanagari
 *   vowel signs or kana voicing marks, are part of their letters and stay), then NFC.
 *   Letters without a decomposition stay as they are (`ø`, `ł`, `æ`, `đ`, `ı`).
 * - `searchTokens` (knowledge-base passages and queries alike): the folded text cut into words
 *   — runs of letters, digits and combining marks; an apostrophe inside a word joins its parts
 *   (`don't` → `dont`); every other character separates; each Han, Hiragana or Katakana
 *   character is a word of its own, as those scripts do not separate words. Words longer than
 *   MAX_TOKEN_LENGTH and English stop words (STOP_WORDS) are dropped, and words made of the
 *   letters a–z only are stemmed with the Porter stemmer (`rotating` → `rotat`).
 */
import { stemmer } from 'stemmer';

/**
 * Changed with any change to how text is folded or cut into words: a page indexed under an
 * earlier one is indexed again at its next check (passagesDigest). 2: format characters.
 */
export const SEARCH_WORDS_VERSION = 2;

/** Longer "words" are pasted hashes or garbage: never indexed, never searched. */
export const MAX_TOKEN_LENGTH = 64;

// The Combining Diacritical Marks blocks (and their Supplement, Extended, for Symbols and
// Half Marks): what NFKD splits off accented Latin, Greek and Cyrillic letters.
const DIACRITICS = /[\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f]/g;
// Full case folding maps these to other letters than lower case does.
const FOLDS: Record<string, string> = { ß: 'ss', ς: 'σ' };
const NOT_FOLDED_BY_LOWER_CASE = /[ßς]/g;

// Format characters are no part of a word's letters: a soft hyphen, a zero-width joiner or a
// bidirectional mark inside a word leaves it one word (`soft\u00adhyphen` → `softhyphen`). The
// zero-width space is kept: it separates words (in Thai, say).
const FORMAT_CHARACTERS = /(?!\u200b)\p{Cf}/gu;

/** Case- and diacritic-insensitive form of `text` (see the top of this file). */
export function foldText(text: string): string {
  return text
    .replace(FORMAT_CHARACTERS, '')
    .normalize('NFKD')
    .toLowerCase()
    .replace(NOT_FOLDED_BY_LOWER_CASE, (c) => FOLDS[c]!)
    .normalize('NFKD') // lower case can produce decomposable letters (`İ` → `i̇`)
    .replace(DIACRITICS, '')
    .normalize('NFC');
}

// One ideograph or kana, or a word: letters, digits and marks, apostrophe-joined parts included.
const IDEOGRAPHIC = String.raw`\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}`;
const WORD_CHAR = String.raw`[[\p{L}\p{N}\p{M}]--[${IDEOGRAPHIC}]]`;
const WORD_START = String.raw`[[\p{L}\p{N}]--[${IDEOGRAPHIC}]]`;
const IDEOGRAPH = String.raw`[[\p{L}\p{N}]&&[${IDEOGRAPHIC}]]`;
const TOKEN = new RegExp(String.raw`${IDEOGRAPH}|${WORD_START}${WORD_CHAR}*(?:['\u2019]${WORD_START}${WORD_CHAR}*)*`, 'gv');
const APOSTROPHES = /['\u2019]/g;
const STEMMABLE = /^[a-z]+$/;

/**
 * English stop words, never indexed nor searched: the Snowball list (the one PostgreSQL's
 * `english` configuration uses). A query made of them only finds nothing.
 */
export const STOP_WORDS: ReadonlySet<string> = new Set(
  (
    'i me my myself we our ours ourselves you your yours yourself yourselves he him his himself she her hers herself ' +
    'it its itself they them their theirs themselves what which who whom this that these those am is are was were be ' +
    'been being have has had having do does did doing a an the and but if or because as until while of at by for with ' +
    'about against between into through during before after above below to from up down in out on off over under again ' +
    'further then once here there when where why how all any both each few more most other some such no nor not only ' +
    'own same so than too very s t can will just don should now'
  ).split(' '),
);

// Stemming is most of the cost of indexing a passage; words repeat, so stems
// are remembered: a pure function's results, bounded, dropped wholesale when full.
const STEM_MEMO_SIZE = 20_000;
const stems = new Map<string, string>();

function stem(word: string): string {
  let stemmed = stems.get(word);
  if (stemmed === undefined) {
    if (stems.size >= STEM_MEMO_SIZE) stems.clear();
    stemmed = stemmer(word);
    stems.set(word, stemmed);
  }
  return stemmed;
}

/** The search words of `text`, in order, repeats included (see the top of this file). */
export function searchTokens(text: string): string[] {
  const tokens: string[] = [];
  for (const match of foldText(text).matchAll(TOKEN)) {
    const word = match[0].replace(APOSTROPHES, '');
    if (word.length > MAX_TOKEN_LENGTH || STOP_WORDS.has(word)) continue;
    tokens.push(STEMMABLE.test(word) ? stem(word) : word);
  }
  return tokens;
}

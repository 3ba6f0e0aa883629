/** Deterministic English-like text for knowledge-base pages and passages. */

const SYLLABLES = ['ka', 'lo', 'mi', 'ne', 'ru', 'ta', 'vo', 'si', 'pe', 'da', 'gri', 'sto', 'bel', 'for', 'man', 'tis', 'qu', 'ex', 'ion', 'ar'];
const COMMON = [
  'the',
  'a',
  'to',
  'of',
  'and',
  'in',
  'is',
  'for',
  'with',
  'your',
  'api',
  'key',
  'request',
  'account',
  'when',
  'you',
  'can',
  'this',
  'that',
  'page',
];

/** A vocabulary of 4,000 made-up words plus common ones, the same every run. */
const VOCABULARY: string[] = (() => {
  const words: string[] = [];
  for (let i = 0; words.length < 4000; i++) {
    let n = i;
    let w = '';
    do {
      w += SYLLABLES[n % SYLLABLES.length];
      n = Math.floor(n / SYLLABLES.length);
    } while (n > 0);
    words.push(w + SYLLABLES[(i * 7) % SYLLABLES.length]);
  }
  return words;
})();

function wordAt(seed: number): string {
  const x = Math.imul(seed ^ (seed >>> 13), 0x5bd1e995) >>> 0;
  return x % 3 === 0 ? COMMON[x % COMMON.length]! : VOCABULARY[x % VOCABULARY.length]!;
}

/** A sentence of 8–19 words. */
export function sentence(seed: number): string {
  const length = 8 + (seed % 12);
  const words: string[] = [];
  for (let i = 0; i < length; i++) words.push(wordAt(seed * 31 + i));
  const text = words.join(' ');
  return `${text.charAt(0).toUpperCase()}${text.slice(1)}.`;
}

/** Section 6's search queries, drawn from the vocabulary: one word, two words, and the common "request" with a word. */
export function searchQueries(count: number): string[] {
  const out: string[] = [];
  for (let i = 0; out.length < count; i++) {
    const words = sentence(1_000_003 + i * 7919)
      .toLowerCase()
      .replace(/[^a-z ]/g, '')
      .split(' ')
      .filter((w) => w.length > 3);
    if (words.length < 2) continue;
    out.push(i % 3 === 0 ? words[0]! : i % 3 === 1 ? `${words[0]} ${words[1]}` : `request ${words[0]}`);
  }
  return out;
}

/** A passage of about 80 words (≈ 500 characters). */
export function passageText(n: number): string {
  const out: string[] = [];
  let words = 0;
  for (let s = 0; words < 80; s++) {
    const text = sentence(n * 17 + s);
    out.push(text);
    words += text.split(' ').length;
  }
  return out.join(' ');
}

/** An HTML article page: a title, sections with headings and paragraphs (≈ 6 KB). */
export function articlePage(n: number): string {
  const sections: string[] = [];
  for (let s = 0; s < 6; s++) {
    const paragraphs: string[] = [];
    for (let p = 0; p < 3; p++) {
      const sentences: string[] = [];
      for (let k = 0; k < 4; k++) sentences.push(sentence(n * 1000 + s * 100 + p * 10 + k));
      paragraphs.push(`<p>${sentences.join(' ')}</p>`);
    }
    sections.push(`<h2>${sentence(n * 1000 + s).slice(0, 40)}</h2>\n${paragraphs.join('\n')}`);
  }
  return `<!doctype html><html><head><meta charset="utf-8"><title>Guide ${n}</title></head>
<body><nav><a href="/">Home</a> <a href="/docs">Docs</a></nav>
<main><article><h1>Guide ${n}: ${sentence(n).slice(0, 50)}</h1>
${sections.join('\n')}
</article></main><footer>© Example</footer></body></html>`;
}

/** A knowledge base for search tests, and bm25 computed over every passage of it (the reference). */
import { passageTerms, queryTerms } from '../../src/text/search-terms.js';

/** A deterministic knowledge base: `common` in most passages, `often` in many, rare words in a few. */
export function searchCorpus(links: number, perLink: number): Array<{ url: string; passages: string[] }> {
  let seed = 7;
  const next = () => {
    seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
    return seed / 2 ** 32;
  };
  const filler = Array.from({ length: 60 }, (_, i) => `filler${String.fromCharCode(97 + (i % 26))}${Math.floor(i / 26)}`);
  return Array.from({ length: links }, (_, l) => ({
    url: `https://docs.example/page-${String(l).padStart(3, '0')}`,
    passages: Array.from({ length: perLink }, () => {
      const words: string[] = [];
      const length = 5 + Math.floor(next() * 30);
      for (let w = 0; w < length; w++) {
        const x = next();
        words.push(x < 0.12 ? 'common' : x < 0.16 ? 'often' : x < 0.2 ? `rare${Math.floor(next() * 40)}` : filler[Math.floor(next() * filler.length)]!);
      }
      return words.join(' ');
    }),
  }));
}

/** bm25 as searchPassages documents it, over every passage: the scores, best first. */
export function searchReference(links: ReadonlyArray<{ url: string; passages: string[] }>, q: string): Array<{ url: string; seq: number; score: number }> {
  const docs = links.flatMap((link) => link.passages.map((content, seq) => ({ url: link.url, seq, terms: passageTerms(content).terms.split(' ') })));
  const n = docs.length;
  const avgdl = docs.reduce((sum, d) => sum + d.terms.length, 0) / n;
  const idf = new Map<string, number>();
  for (const term of queryTerms(q)) {
    const df = docs.filter((d) => d.terms.includes(term)).length;
    if (df > 0) idf.set(term, Math.log(1 + (n - df + 0.5) / (df + 0.5)));
  }
  const best = [...idf.values()].reduce((sum, x) => sum + 2.2 * x, 0);
  return docs
    .map((d) => {
      let raw = 0;
      for (const [term, weight] of idf) {
        const tf = d.terms.filter((t) => t === term).length;
        if (tf > 0) raw += (weight * tf * 2.2) / (tf + 1.2 * (0.25 + (0.75 * d.terms.length) / avgdl));
      }
      return { url: d.url, seq: d.seq, score: raw / best };
    })
    .filter((d) => d.score > 0)
    .sort((a, b) => b.score - a.score);
}

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { countMembers, membersAtMost } from '../../../src/domain/validator/json.js';
import { parseDocument } from '../../../src/domain/validator/index.js';
import { expectAppError, source } from './helpers.js';

/**
 * The duplicate-key check compares the keys of the parsed tree with the members the text
 * writes: first `membersAtMost`, which must never count fewer than there are (a duplicate
 * would go unseen), then, when that differs, the exact `countMembers`; only a real
 * difference costs the strict re-read.
 */

/** A JSON value written by hand, so that an object may repeat a key and space may sit anywhere. */
type Tree = string | number | boolean | null | Tree[] | { entries: [string, Tree][] };

// Characters that trouble a text count: quotes, backslashes, colons, spaces.
const text = fc.string({ unit: fc.constantFrom('a', 'b', '"', '\\', ':', ' ', 'é', '\n'), maxLength: 6 });
const space = fc.constantFrom('', ' ', '\n  ', '\t', '\r\n');

const { tree } = fc.letrec<{ tree: Tree }>((tie) => ({
  tree: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    text,
    fc.integer(),
    fc.boolean(),
    fc.constant(null),
    fc.array(tie('tree'), { maxLength: 4 }),
    fc.record({ entries: fc.array(fc.tuple(fc.constantFrom('a', 'b', 'a:', ':', '"', ' :'), tie('tree')), { maxLength: 4 }) }),
  ),
}));

interface Written {
  text: string;
  members: number;
  duplicate: boolean;
  /** A string (key or value) starting with a colon (after spaces): the one case counted twice. */
  colonString: boolean;
}

function write(value: Tree, spaces: string[]): Written {
  let i = 0;
  const ws = () => spaces[i++ % spaces.length]!;
  const out: Written = { text: '', members: 0, duplicate: false, colonString: false };
  const str = (s: string): string => {
    if (/^ *:/.test(s)) out.colonString = true;
    return JSON.stringify(s);
  };
  const visit = (v: Tree): string => {
    if (typeof v === 'string') {
      return str(v);
    }
    if (v === null || typeof v !== 'object') return JSON.stringify(v);
    if (Array.isArray(v)) return `[${ws()}${v.map((item) => `${visit(item)}${ws()}`).join(`,${ws()}`)}]`;
    out.members += v.entries.length;
    if (new Set(v.entries.map(([k]) => k)).size < v.entries.length) out.duplicate = true;
    return `{${ws()}${v.entries.map(([k, item]) => `${str(k)}${ws()}:${ws()}${visit(item)}${ws()}`).join(`,${ws()}`)}}`;
  };
  out.text = visit(value);
  return out;
}

describe('membersAtMost and countMembers', () => {
  it('count one member per key, whatever the strings hold', () => {
    for (const count of [membersAtMost, countMembers]) {
      expect(count('{"a":1,"b":"x:y","c":"\\":","d":{"e" : ["x:"]}}')).toBe(5);
      expect(count('{"a\\\\":1}')).toBe(1); // the key ends in an escaped backslash
      expect(count('{}')).toBe(0);
    }
  });

  it('a string starting with a colon: counted by the bound, not by the exact count', () => {
    expect(membersAtMost('{"emoji":":smile:","k":[" :x"]}')).toBe(4);
    expect(countMembers('{"emoji":":smile:","k":[" :x"]}')).toBe(2);
  });

  it('the bound never counts fewer members than the text has, and exactly as many unless a string starts with a colon; the count is exact', () => {
    fc.assert(
      fc.property(tree, fc.array(space, { minLength: 1, maxLength: 5 }), (value, spaces) => {
        const written = write(value, spaces);
        const bound = membersAtMost(written.text);
        expect(bound).toBeGreaterThanOrEqual(written.members);
        if (!written.colonString) expect(bound).toBe(written.members);
        expect(countMembers(written.text)).toBe(written.members);
      }),
      { numRuns: 500 },
    );
  });

  it('so a document is refused exactly when one of its objects repeats a key', () => {
    fc.assert(
      fc.property(tree, fc.array(space, { minLength: 1, maxLength: 5 }), fc.boolean(), (value, spaces, scanNestingFirst) => {
        const written = write(value, spaces);
        const doc = source(`{"openapi":"3.0.3","x":${written.text}}`, 'x.json');
        if (written.duplicate) {
          expect(expectAppError(() => parseDocument(doc, { scanNestingFirst })).message).toMatch(/repeats the key/);
        } else {
          expect(() => parseDocument(doc, { scanNestingFirst })).not.toThrow();
        }
      }),
      { numRuns: 500 },
    );
  });
});

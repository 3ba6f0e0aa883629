/**
 * Issue 17 §3, dark mode: every colour of the dashboard is a custom property of
 * web/src/styles.css, set once for light and once for dark (the dark palette twice: for
 * `data-theme="dark"` and for the system's preference; both must stay equal). The pairs a
 * person reads are checked for contrast (WCAG 2.1: 4.5:1 for text, 3:1 for focus rings and
 * control borders) in both themes.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

const css = readFileSync(new URL('../../web/src/styles.css', import.meta.url), 'utf8');

/** The custom properties declared in the first block opened by `selector {`. */
function block(selector: string): Map<string, string> {
  const start = css.indexOf(`${selector} {`);
  expect(start, selector).toBeGreaterThanOrEqual(0);
  const end = css.indexOf('}', start);
  const vars = new Map<string, string>();
  for (const m of css.slice(start, end).matchAll(/(--[a-z0-9-]+):\s*([^;]+);/g)) vars.set(m[1]!, m[2]!.trim());
  return vars;
}

const light = block(':root');
const darkChosen = block(":root[data-theme='dark']");
const darkSystem = block(":root:not([data-theme='light'])");
const dark = new Map([...light, ...darkChosen]);

function rgb(value: string): [number, number, number] {
  const m = /^#([0-9a-f]{6})$/i.exec(value);
  if (!m) throw new Error(`not a #rrggbb colour: ${value}`);
  const n = Number.parseInt(m[1]!, 16);
  return [(n >> 16) & 255, (n >> 8) & 255, n & 255];
}

function luminance(value: string): number {
  const [r, g, b] = rgb(value).map((c) => {
    const s = c / 255;
    return s <= 0.03928 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4;
  }) as [number, number, number];
  return 0.2126 * r + 0.7152 * g + 0.0722 * b;
}

function contrast(a: string, b: string): number {
  const [x, y] = [luminance(a), luminance(b)].sort((p, q) => q - p) as [number, number];
  return (x + 0.05) / (y + 0.05);
}

// [foreground, background, minimum ratio]
const PAIRS: Array<[string, string, number]> = [
  ['--text', '--bg', 4.5],
  ['--text', '--surface', 4.5],
  ['--text', '--surface-2', 4.5],
  ['--text', '--input-bg', 4.5],
  ['--text-2', '--surface', 4.5],
  ['--muted', '--bg', 4.5],
  ['--muted', '--surface', 4.5],
  ['--muted', '--surface-2', 4.5],
  ['--accent', '--surface', 4.5],
  ['--accent', '--bg', 4.5],
  ['--accent-ink', '--accent', 4.5],
  ['--accent-ink', '--accent-hover', 4.5],
  ['--accent-text', '--accent-soft', 4.5],
  ['--danger', '--surface', 4.5],
  ['--danger', '--danger-soft', 4.5],
  ['--danger-ink', '--danger', 4.5],
  ['--danger-text', '--danger-soft', 4.5],
  ['--warn', '--surface', 4.5],
  ['--warn', '--warn-soft', 4.5],
  ['--warn-text', '--warn-soft', 4.5],
  ['--ok', '--surface', 4.5],
  ['--ok', '--ok-soft', 4.5],
  ['--ok-text', '--ok-soft', 4.5],
  ['--neutral-text', '--neutral-soft', 4.5],
  ['--text', '--code-bg', 4.5],
  ['--text', '--hover', 4.5],
  ['--method-ink', '--method-get', 4.5],
  ['--method-ink', '--method-post', 4.5],
  ['--method-ink', '--method-put', 4.5],
  ['--method-ink', '--method-patch', 4.5],
  ['--method-ink', '--method-delete', 4.5],
  ['--method-ink', '--method-other', 4.5],
  ['--focus', '--bg', 3],
  ['--focus', '--surface', 3],
  ['--input-border', '--input-bg', 3],
  ['--input-border', '--surface', 3],
];

describe('dashboard colours', () => {
  it('the dark palette is the same for a chosen dark theme and for the system’s preference', () => {
    expect([...darkSystem]).toEqual([...darkChosen]);
  });

  it('the dark palette overrides every colour of the light one', () => {
    const colours = [...light.keys()].filter((k) => /^(#|rgba?\()/.test(light.get(k)!));
    expect(colours.filter((k) => !darkChosen.has(k))).toEqual([]);
  });

  it('no rule outside the palettes writes a colour literal', () => {
    const rules = css.replace(/:root[^{]*\{[^}]*\}/g, '').replace(/\/\*[\s\S]*?\*\//g, '');
    expect(rules.match(/#[0-9a-f]{3,8}\b|rgba?\([^)]*\)/gi) ?? []).toEqual([]);
  });

  for (const [name, palette] of [
    ['light', light],
    ['dark', dark],
  ] as const) {
    it.each(PAIRS)(`${name}: %s on %s ≥ %s:1`, (fg, bg, min) => {
      const mark = fg === '--mark-text' ? palette.get('--text')! : palette.get(fg)!;
      expect(contrast(mark, palette.get(bg)!)).toBeGreaterThanOrEqual(min);
    });

    it(`${name}: highlighted search words stay readable`, () => {
      const text = name === 'light' ? palette.get('--text-2')! : palette.get('--mark-text')!;
      expect(contrast(text, palette.get('--mark')!)).toBeGreaterThanOrEqual(4.5);
    });
  }
});

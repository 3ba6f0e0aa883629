/**
 * Control and invisible formatting characters: C0 controls, DEL and C1 controls, bidirectional
 * formatting (U+061C, U+200E, U+200F, U+202A–U+202E, U+2066–U+2069: `https://e.example/\u202egnp.exe`
 * reads as "exe.png", `KB \u202eevil` as "KB live"), and invisible characters that make one text
 * look like another: U+200B zero-width space, U+2028/U+2029 separators, U+2060 word joiner,
 * U+206A–U+206F, U+FEFF, U+FFF9–U+FFFB and the Unicode tag characters. ZWNJ/ZWJ (U+200C/U+200D)
 * are not among them: words and emoji need them.
 *
 * One list for the service, which refuses them in the URLs and names users store
 * (knowledgebase/links.ts), and for what shows an API description's text: the dashboard
 * (web/src/lib/format.ts) and the CLI (src/cli/formats.ts) write them as escapes. No runtime
 * dependency, so the dashboard can load it.
 */
const CLASS =
  '\\u0000-\\u001f\\u007f-\\u009f\\u061c\\u200b\\u200e\\u200f\\u2028\\u2029\\u202a-\\u202e\\u2060\\u2066-\\u206f\\ufeff\\ufff9-\\ufffb\\u{e0000}-\\u{e007f}';

/** The first such character of a text, if any. */
export const INVISIBLE_CHARACTER = new RegExp(`[${CLASS}]`, 'u');

/** Every such character, for a line of text (a terminal's, an annotation's): line breaks too. */
export const INVISIBLE_IN_LINE = new RegExp(`[${CLASS}]`, 'gu');

/** Every such character but tab and line feed (a description's own layout), for display. */
export const INVISIBLE_IN_TEXT = new RegExp(`[${CLASS.replace('\\u0000-\\u001f', '\\u0000-\\u0008\\u000b-\\u001f')}]`, 'gu');

/**
 * The characters of these that reorder text or hide it from a reader but not from a model:
 * bidirectional formatting and the Unicode tag characters (text written in tags is read by
 * language models and shown by nothing). A knowledge base's passages are stored without them.
 */
export const REORDERING_OR_HIDDEN = /[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u{e0000}-\u{e007f}]/gu;

/** `\u202e` for U+202E: how a character of these is shown. */
export function escapeOf(character: string): string {
  const code = character.codePointAt(0)!;
  return code > 0xffff ? `\\u{${code.toString(16)}}` : `\\u${code.toString(16).padStart(4, '0')}`;
}

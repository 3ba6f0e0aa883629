/**
 * The name a document was uploaded under, as it may be stored and shown (issue 17 §3): the
 * last path component only (a browser may send `C:\Users\me\slack.json`, a client
 * `../../etc/passwd`), without control characters (NUL included), bidirectional overrides
 * or lone surrogates, NFC-normalised, trimmed, at most MAX_ORIGINAL_NAME characters (the
 * extension kept when cut). Null when nothing usable is left: the name is only for people,
 * never a path on disk or a key, so dropping it loses nothing else.
 */
export const MAX_ORIGINAL_NAME = 255;

// C0 and C1 controls (NUL, tabs, line breaks, DEL…), the bidirectional embeddings, overrides
// and isolates (a "gpj.json" that reads "nosj.jpg"), the zero-width and BOM characters.
const UNWANTED = /[\u0000-\u001f\u007f-\u009f\u061c\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufeff]/g;

const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

export function sanitizeOriginalFileName(raw: string | null | undefined): string | null {
  if (typeof raw !== 'string') return null;
  const base = raw.split(/[/\\]/).pop() ?? '';
  let name = base.replace(LONE_SURROGATE, '\ufffd').replace(UNWANTED, '').normalize('NFC').trim();
  if (name === '' || /^\.+$/.test(name)) return null;
  const chars = [...name];
  if (chars.length > MAX_ORIGINAL_NAME) {
    const dot = name.lastIndexOf('.');
    const ext = dot > 0 ? [...name.slice(dot)] : [];
    const keep = ext.length > 0 && ext.length <= 16 ? ext : [];
    name = `${chars
      .slice(0, MAX_ORIGINAL_NAME - keep.length - 1)
      .join('')
      .trimEnd()}…${keep.join('')}`;
  }
  return name;
}

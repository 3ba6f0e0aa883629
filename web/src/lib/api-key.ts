import { INVISIBLE_IN_LINE } from '../../../src/text/invisible.js';

/**
 * The key in what was pasted: trimmed, without a header prefix ("Bearer cms_…"), the quotes a
 * chat or document put around it (“…”, '…', `…`) and the invisible characters a copy brings
 * (zero-width space, byte-order mark). An `Error` to show when what is left still holds a
 * character no key has: the browser cannot even send it (it said "could not reach the service").
 */
export function keyFromPaste(text: string): string | Error {
  const key = text
    .replace(INVISIBLE_IN_LINE, '')
    .trim()
    .replace(/^Bearer\s+/i, '')
    .replace(/^["'`\u201c\u201d\u2018\u2019]+|["'`\u201c\u201d\u2018\u2019]+$/g, '');
  const foreign = /[^\x21-\x7e]/u.exec(key);
  if (foreign) {
    return new Error(`This is not an API key: it holds “${foreign[0]}”, and a key is made of the letters, digits and underscores of “cms_…”. Paste it again.`);
  }
  return key;
}

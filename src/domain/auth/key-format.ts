/**
 * The wire format of an API key, `cms_<16 id chars>_<32 secret chars>` (letters and digits),
 * in a leaf module: config.ts checks ADMIN_API_KEY against it without loading storage.
 */
export const KEY_PATTERN = /^cms_([A-Za-z0-9]{16})_([A-Za-z0-9]{32})$/;

export const KEY_FORMAT_DESCRIPTION = 'cms_ followed by 16 letters or digits, _ and 32 letters or digits';

const KEY_ANYWHERE = /cms_([A-Za-z0-9]{16})_[A-Za-z0-9]{32}/g;

/**
 * `text` with each API key in it cut to its id (`cms_<id>_…`): a key pasted where its id goes
 * (`DELETE /backend/api/keys/<key>`) is neither logged nor answered back whole.
 */
export function withoutKeySecrets(text: string): string {
  return text.includes('cms_') ? text.replace(KEY_ANYWHERE, 'cms_$1_…') : text;
}

/**
 * The wire format of an API key, `cms_<16 id chars>_<32 secret chars>` (letters and digits),
 * in a leaf module: config.ts checks ADMIN_API_KEY against it without loading storage.
 */
export const KEY_PATTERN = /^cms_([A-Za-z0-9]{16})_([A-Za-z0-9]{32})$/;

export const KEY_FORMAT_DESCRIPTION = 'cms_ followed by 16 letters or digits, _ and 32 letters or digits';

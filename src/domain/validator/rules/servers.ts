import { isPlainObject } from '../problems.js';
import { ALL_PLATFORMS, finding, type RuleContext, type RuleFamily, q } from './rule.js';

const ABSOLUTE_URL = /^[A-Za-z][A-Za-z0-9+.-]*:\/\//;
const TEMPLATE_VARIABLE = /\{([^{}]*)\}/g;

/**
 * server-missing, server-relative, server-insecure, server-variable-undefined: where a
 * copilot sends its calls. OpenAPI 3: the root `servers` (the first is the one `base_url`
 * reports; variables are checked in every one). Swagger 2.0: `host`, `basePath`, `schemes`.
 */
export const serverRules: RuleFamily = {
  rules: {
    'server-missing': 'No server: there is no address to call.',
    'server-relative': 'A relative server URL: it works only relative to where the document was fetched from.',
    'server-insecure': 'A server that is not HTTPS on port 443, which GPT Actions requires.',
    'server-variable-undefined': 'A {variable} of a server URL has no default: the URL cannot be built.',
  },
  check(ctx) {
    if (ctx.swagger2) swagger2(ctx);
    else openApi3(ctx);
  },
};

function missing(ctx: RuleContext, pointer: string, what: string): void {
  ctx.emit(finding('server-missing', 'error', null, pointer, `${what}: a copilot has no address to send its calls to.`, ALL_PLATFORMS));
}

/** The fix's default: the variable's first listed value (OpenAPI: the default must be one of them), else "". */
function enumDefault(variable: unknown): string {
  const values = isPlainObject(variable) && Array.isArray(variable.enum) ? variable.enum : [];
  const first: unknown = values.find((value) => typeof value === 'string');
  return typeof first === 'string' ? first : '';
}

function openApi3(ctx: RuleContext): void {
  const servers = ctx.doc.servers;
  const first: unknown = Array.isArray(servers) ? servers[0] : undefined;
  if (!isPlainObject(first) || typeof first.url !== 'string' || first.url.trim() === '') {
    missing(ctx, Array.isArray(servers) && servers.length > 0 ? '/servers/0/url' : '/servers', 'The document names no server');
    return;
  }
  for (let k = 0; k < (servers as unknown[]).length; k++) {
    const server: unknown = (servers as unknown[])[k];
    if (!isPlainObject(server) || typeof server.url !== 'string') continue;
    const variables = isPlainObject(server.variables) ? server.variables : {};
    for (const match of server.url.matchAll(TEMPLATE_VARIABLE)) {
      const name = match[1]!;
      const variable = Object.hasOwn(variables, name) ? variables[name] : undefined;
      if (isPlainObject(variable) && variable.default !== undefined && variable.default !== null) continue;
      ctx.emit(
        finding(
          'server-variable-undefined',
          'error',
          null,
          `/servers/${k}/url`,
          `Server variable {${name}} has no definition with a default: the URL cannot be built, so no call can be made.`,
          ALL_PLATFORMS,
          { [name]: { default: enumDefault(variable) } },
        ),
      );
    }
  }
  const url = substitute(first.url, isPlainObject(first.variables) ? first.variables : {});
  if (!ABSOLUTE_URL.test(url)) {
    ctx.emit(
      finding(
        'server-relative',
        'warning',
        null,
        '/servers/0/url',
        `The server URL ${q(first.url)} is relative: it only works where the document was fetched from, and an uploaded document has no such place.`,
        ALL_PLATFORMS,
      ),
    );
    return;
  }
  const secure = httpsOn443(url);
  if (secure !== null) {
    ctx.emit(
      finding(
        'server-insecure',
        'error',
        null,
        '/servers/0/url',
        `The server URL ${q(url)} ${secure}: GPT Actions calls only HTTPS on port 443.`,
        ['gpt_actions'],
        url.replace(/^http:\/\//i, 'https://').replace(/^(https:\/\/[^/?#]*?):\d+/i, '$1'),
      ),
    );
  }
}

function swagger2(ctx: RuleContext): void {
  const { doc } = ctx;
  if (typeof doc.host !== 'string' || doc.host.trim() === '') {
    missing(ctx, '/host', 'The document has no host');
    return;
  }
  const schemes = Array.isArray(doc.schemes) ? doc.schemes.filter((s): s is string => typeof s === 'string' && s !== '') : [];
  const basePath = typeof doc.basePath === 'string' ? doc.basePath : '';
  const https = `https://${doc.host.replace(/:\d+$/, '')}${basePath}`;
  const first = schemes[0]?.toLowerCase() ?? 'https';
  const url = `${first}://${doc.host}${basePath}`;
  const secure = first === 'https' || first === 'wss' ? httpsOn443(url) : 'is not HTTPS';
  if (secure !== null) {
    ctx.emit(
      finding(
        'server-insecure',
        'error',
        null,
        first === 'https' ? '/host' : '/schemes',
        `The API is served at ${q(url)}, which ${secure}: GPT Actions calls only HTTPS on port 443.`,
        ['gpt_actions'],
        // The server URL to use (what `servers[0].url` is once converted to OpenAPI 3).
        https,
      ),
    );
  }
}

/** Why an absolute URL is not HTTPS on 443, or null when it is. */
function httpsOn443(url: string): string | null {
  const match = /^([A-Za-z][A-Za-z0-9+.-]*):\/\/(?:[^@/?#]*@)?(\[[^\]]*\]|[^:/?#]*)(?::(\d*))?/.exec(url);
  if (!match) return 'is not HTTPS';
  if (match[1]!.toLowerCase() !== 'https') return 'is not HTTPS';
  if (match[3] && match[3] !== '443') return `uses port ${match[3]}`;
  return null;
}

function substitute(url: string, variables: Record<string, unknown>): string {
  return url.replace(TEMPLATE_VARIABLE, (written, name: string) => {
    const variable = Object.hasOwn(variables, name) ? variables[name] : undefined;
    const value = isPlainObject(variable) ? variable.default : undefined;
    return typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean' ? String(value) : written;
  });
}

import { isPlainObject } from '../problems.js';
import { specVersion } from '../root-check.js';
import type { DocumentFinding } from './finding.js';

/**
 * Additive (DESIGN §5): the server URL a copilot would call.
 * - OpenAPI 3: `servers[0].url`, each `{name}` replaced by `variables.name.default`
 *   (left as written when there is no default). A relative URL such as `/v1` is
 *   returned as written: it still tells where the API lives relative to the document.
 * - Swagger 2.0: `schemes[0]` (default `https`) `://` `host` `basePath`.
 * - `null` when the document names no server (OpenAPI 3) or no `host` (Swagger 2.0).
 */
export const baseUrl: DocumentFinding<'base_url'> = {
  kind: 'document',
  key: 'base_url',
  compute(doc) {
    return specVersion(doc) === 'swagger2' ? swagger2BaseUrl(doc) : openApi3BaseUrl(doc);
  },
};

function openApi3BaseUrl(doc: Record<string, unknown>): string | null {
  if (!Array.isArray(doc.servers)) return null;
  const server: unknown = doc.servers[0];
  if (!isPlainObject(server) || typeof server.url !== 'string' || server.url.trim() === '') return null;
  const variables = isPlainObject(server.variables) ? server.variables : {};
  return server.url.replace(/\{([^{}]*)\}/g, (written, name: string) => {
    const variable = Object.hasOwn(variables, name) ? variables[name] : undefined;
    if (!isPlainObject(variable)) return written;
    const value = variable.default;
    return typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean' ? String(value) : written;
  });
}

function swagger2BaseUrl(doc: Record<string, unknown>): string | null {
  if (typeof doc.host !== 'string' || doc.host.trim() === '') return null;
  const scheme = Array.isArray(doc.schemes) && typeof doc.schemes[0] === 'string' && doc.schemes[0] !== '' ? doc.schemes[0] : 'https';
  const basePath = typeof doc.basePath === 'string' ? doc.basePath : '';
  return `${scheme}://${doc.host}${basePath}`;
}

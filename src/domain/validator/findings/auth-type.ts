import { isPlainObject } from '../problems.js';
import { resolveLocalRef } from '../refs.js';
import { specVersion } from '../root-check.js';
import type { DocumentFinding } from './finding.js';

/**
 * DESIGN §5: the `type` of the security scheme the document applies: the first scheme
 * named by the top-level `security` requirements (in order, skipping names that are not
 * declared), else the first declared scheme; `"none"` when no scheme is declared.
 * Schemes come from `components.securitySchemes` (OpenAPI 3) or `securityDefinitions`
 * (Swagger 2.0), a local `$ref` followed (as the auth rule follows it). Swagger 2.0's `basic` is
 * reported as `http`. A scheme without a string `type` (a `$ref` that resolves nowhere, say)
 * does not count as declared.
 */
export const authType: DocumentFinding<'auth_type'> = {
  kind: 'document',
  key: 'auth_type',
  compute(doc) {
    const schemes = declaredSchemes(doc);
    if (!schemes) return 'none';
    if (Array.isArray(doc.security)) {
      for (const requirement of doc.security) {
        if (!isPlainObject(requirement)) continue;
        for (const name in requirement) {
          const type = schemeType(doc, schemes[name]);
          if (type !== null) return type;
        }
      }
    }
    for (const name in schemes) {
      const type = schemeType(doc, schemes[name]);
      if (type !== null) return type;
    }
    return 'none';
  },
};

function declaredSchemes(doc: Record<string, unknown>): Record<string, unknown> | null {
  if (specVersion(doc) === 'swagger2') return isPlainObject(doc.securityDefinitions) ? doc.securityDefinitions : null;
  return isPlainObject(doc.components) && isPlainObject(doc.components.securitySchemes) ? doc.components.securitySchemes : null;
}

function schemeType(doc: Record<string, unknown>, entry: unknown): string | null {
  const scheme = resolveLocalRef(doc, entry);
  if (!isPlainObject(scheme) || typeof scheme.type !== 'string' || scheme.type.trim() === '') return null;
  return scheme.type === 'basic' ? 'http' : scheme.type;
}

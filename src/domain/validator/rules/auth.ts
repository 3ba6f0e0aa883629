import { isPlainObject } from '../problems.js';
import { resolveLocalRef } from '../refs.js';
import { child, finding, type RuleContext, type RuleFamily, q } from './rule.js';

/**
 * auth-unsupported: security the copilot platform cannot apply. GPT Actions takes one auth
 * type, an API key (custom header, Basic or Bearer) or OAuth, besides unauthenticated
 * endpoints (docs/platform-rules.md). So: an API key in a cookie, mutualTLS, OpenID Connect,
 * an HTTP scheme other than basic/bearer, schemes required together (one requirement naming
 * several), and two auth types applied in one document. Only schemes the document applies
 * (top-level or operation `security`) count; each culprit is reported once.
 */
export const authRules: RuleFamily = {
  rules: {
    'auth-unsupported': 'A security scheme a platform cannot use (an API key in a cookie, mutual TLS, schemes required together, …).',
  },
  check(ctx) {
    const declared = ctx.swagger2
      ? { schemes: ctx.doc.securityDefinitions, pointer: '/securityDefinitions' }
      : { schemes: isPlainObject(ctx.doc.components) ? ctx.doc.components.securitySchemes : undefined, pointer: '/components/securitySchemes' };
    const schemes = isPlainObject(declared.schemes) ? declared.schemes : {};
    const reported = new Set<string>();
    const kinds = new Map<string, string>(); // kind → first scheme name applying it
    const kindByName = new Map<string, string | null>(); // each scheme's kind, read once (null: not declared)

    // `pointer` is built only for a finding.
    const requirements = (list: unknown, pointer: () => string, endpoint: number | null) => {
      if (!Array.isArray(list)) return;
      for (let k = 0; k < list.length; k++) {
        const requirement: unknown = list[k];
        if (!isPlainObject(requirement)) continue;
        const names = Object.keys(requirement);
        if (names.length > 1) {
          const key = `together\u0000${names.slice().sort().join('\u0000')}`;
          if (!reported.has(key)) {
            reported.add(key);
            emit(ctx, endpoint, child(pointer(), k), `Schemes ${names.join(' + ')} are required together; GPT Actions applies one scheme per call.`);
          }
        }
        for (const name of names) {
          let kind = kindByName.get(name);
          if (kind === undefined) {
            const scheme = Object.hasOwn(schemes, name) ? resolveLocalRef(ctx.doc, schemes[name]) : null;
            kind = scheme ? kindOf(scheme) : null;
            kindByName.set(name, kind);
          }
          if (kind === null) continue;
          if (kind.startsWith('unsupported:')) {
            if (reported.has(name)) continue;
            reported.add(name);
            emit(
              ctx,
              endpoint,
              child(declared.pointer, name),
              `Security scheme ${q(name)} is ${kind.slice(12)}, which GPT Actions cannot apply (API key or OAuth only).`,
            );
          } else if (!kinds.has(kind)) {
            kinds.set(kind, name);
          }
        }
      }
    };

    requirements(ctx.doc.security, () => '/security', null);
    for (let i = 0; i < ctx.sources.length; i++) {
      const op = ctx.sources[i]!;
      if (op.operation.security !== undefined) requirements(op.operation.security, () => child(op.pointer, 'security'), i);
    }
    if (kinds.size > 1) {
      const [first, second] = [...kinds.values()];
      emit(
        ctx,
        null,
        child(declared.pointer, second!),
        `The document applies both ${q(first)} and ${q(second)}, of different types; GPT Actions takes one auth type for a whole API.`,
      );
    }
  },
};

function emit(ctx: RuleContext, endpoint: number | null, pointer: string, message: string): void {
  ctx.emit(finding('auth-unsupported', 'error', endpoint, pointer, message, ['gpt_actions']));
}

/** `apiKey` (API key, Basic, Bearer), `oauth2`, or `unsupported:<what it is>`. */
function kindOf(scheme: Record<string, unknown>): string {
  switch (scheme.type) {
    case 'apiKey':
      return scheme.in === 'cookie' ? 'unsupported:an API key in a cookie' : 'apiKey';
    case 'basic':
      return 'apiKey';
    case 'http': {
      const name = typeof scheme.scheme === 'string' ? scheme.scheme.toLowerCase() : '';
      return name === 'basic' || name === 'bearer' ? 'apiKey' : `unsupported:HTTP ${q(name)} authentication`;
    }
    case 'oauth2':
      return 'oauth2';
    case 'openIdConnect':
      return 'unsupported:OpenID Connect discovery';
    case 'mutualTLS':
      return 'unsupported:mutual TLS';
    default:
      return `unsupported:of type ${q(String(scheme.type))}`;
  }
}

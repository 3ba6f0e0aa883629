import type { FastifyInstance, FastifyReply, FastifyRequest, onRequestHookHandler } from 'fastify';
import { authenticate, authorize, readKeys, type Principal, type Scope } from '../domain/auth/api-keys.js';
import { AppError } from '../errors.js';
import type { Storage } from '../storage/database.js';

declare module 'fastify' {
  interface FastifyRequest {
    principal: Principal;
  }
}

export interface AccessRule {
  /** The scope the key needs; null: any valid key (a key reading its own identity). */
  scope: Scope | null;
  /** Route parameter naming the bot (copilot) the request acts on, checked against a key's bot limit. */
  botParam?: string;
  /** Open to callers without a key when the operator sets ALLOW_ANONYMOUS_READ=true. */
  anonymousReadable?: boolean;
  /** The route creates a bot: a key limited to existing bots may not call it. */
  createsBot?: boolean;
}

/**
 * Builds the onRequest hook that enforces an access rule. It runs before the body is
 * read, so the order of answers is always 401 → 403 → 400 (body) → 404. `identify` alone
 * (who is calling, 401 for a bad key) also serves the answers no route owns: unknown paths,
 * wrong methods and URLs the router cannot read, so on /backend a request without a valid
 * key is told 401 before anything else.
 */
export function accessHook(storage: Storage, allowAnonymousRead: boolean) {
  const findKey = readKeys(storage.readDb);
  async function identify(request: FastifyRequest): Promise<Principal> {
    // The key is read from the database on every request: a revocation on any instance
    // acts on the next request.
    const authenticated = await authenticate(authorizationHeader(request), findKey);
    // request.ip follows X-Forwarded-For only from the proxies TRUST_PROXY names.
    const principal: Principal = authenticated.kind === 'key' ? { ...authenticated, clientIp: request.ip } : authenticated;
    request.principal = principal;
    return principal;
  }
  const hook = (rule: AccessRule): onRequestHookHandler =>
    Object.assign(
      async function checkAccess(request: FastifyRequest, _reply: FastifyReply) {
        const principal = await identify(request);
        const openToAll = rule.anonymousReadable === true && allowAnonymousRead;
        if (principal.kind === 'anonymous' && openToAll) return;
        if (rule.scope === null) {
          if (principal.kind === 'anonymous') throw new AppError('unauthorized', 'This operation needs an API key: send "Authorization: Bearer <API key>".');
          return;
        }
        try {
          authorize(principal, rule.scope, rule.botParam ? pathParameter(request, rule.botParam) : undefined);
        } catch (err) {
          // What no key may read, a valid key that lacks the scope or the bot reads too, as no
          // key does: it never gets less.
          if (!(openToAll && err instanceof AppError && err.code === 'forbidden')) throw err;
          request.principal = { kind: 'anonymous' };
          return;
        }
        if (rule.createsBot && botLimit(principal)) {
          throw new AppError('forbidden', 'This API key is limited to some bots and cannot create copilots.');
        }
      },
      { [ACCESS_RULE]: rule },
    );
  return Object.assign(hook, {
    /** 401 unless the request carries a valid key (two Authorization headers: 401 too). */
    async requireKey(request: FastifyRequest): Promise<void> {
      if ((await identify(request)).kind === 'anonymous') {
        throw new AppError('unauthorized', 'This operation needs an API key: send "Authorization: Bearer <API key>".');
      }
    },
  });
}

/** A path parameter of the request (the hook runs for every route, so their types are not known here). */
function pathParameter(request: FastifyRequest, name: string): string | undefined {
  const params: unknown = request.params;
  if (params === null || typeof params !== 'object') return undefined;
  const value: unknown = Object.entries(params).find(([key]) => key === name)?.[1];
  return typeof value === 'string' ? value : undefined;
}

/**
 * The request's Authorization header. Node keeps only the first of several; a proxy may read
 * the last. Two credentials are a malformed one, so 401 like any other (DESIGN §7), before
 * every other 4xx (§8), rather than guessed between: for API keys and METRICS_TOKEN alike.
 */
export function authorizationHeader(request: FastifyRequest): string | undefined {
  const raw = request.raw.rawHeaders;
  let n = 0;
  for (let i = 0; i < raw.length; i += 2) if (raw[i]!.length === 13 && raw[i]!.toLowerCase() === 'authorization') n++;
  if (n > 1) throw new AppError('unauthorized', 'Send one Authorization header: this request has several, so none of its credentials is used.');
  return request.headers.authorization;
}

export type AccessHook = ReturnType<typeof accessHook>;

const ACCESS_RULE = Symbol('access rule');

/**
 * Publishes each route's access rule in its OpenAPI operation: `security` names the scope
 * the bearer key needs (OpenAPI 3.1 allows role names there) and `x-bot-param` the path
 * parameter checked against a key's bot limit (with ALLOW_ANONYMOUS_READ, the operations open to
 * everyone list no key as well). Registered before the OpenAPI plugin; the
 * rule comes from the route's own access hook, so the document cannot drift from it.
 */
export function publishAccessRules(app: FastifyInstance, allowAnonymousRead: boolean): void {
  app.addHook('onRoute', (route) => {
    const hooks = route.onRequest === undefined ? [] : Array.isArray(route.onRequest) ? route.onRequest : [route.onRequest];
    const rule = hooks.map((h) => (h as { [ACCESS_RULE]?: AccessRule })[ACCESS_RULE]).find((r) => r !== undefined);
    if (!rule || !route.schema) return;
    const schema = route.schema as Record<string, unknown>;
    // No scope named: any valid key may call it (an empty list of roles).
    schema.security = [{ bearer: rule.scope === null ? [] : [rule.scope] }];
    // ALLOW_ANONYMOUS_READ: no key at all is one of the ways in (an empty requirement).
    if (rule.anonymousReadable && allowAnonymousRead) (schema.security as unknown[]).push({});
    if (rule.botParam) schema['x-bot-param'] = rule.botParam;
  });
}

/** The bot ids a principal is limited to (undefined: all bots). */
export function botLimit(principal: Principal): readonly string[] | undefined {
  return principal.kind === 'key' && principal.bots !== null ? principal.bots : undefined;
}

/**
 * A copilot as this principal may see it: a key without copilots:read (admin holds it) gets
 * the copilot with an empty `token`, so a write-only key never learns a copilot's token.
 */
export function visibleCopilot<T extends { token: string }>(principal: Principal, copilot: T): T {
  if (principal.kind === 'key' && !principal.scopes.has('copilots:read') && !principal.scopes.has('admin')) return { ...copilot, token: '' };
  return copilot;
}

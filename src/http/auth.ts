import type { FastifyReply, FastifyRequest, onRequestHookHandler } from 'fastify';
import { authenticate, authorize, keyCache, type Principal, type Scope } from '../domain/auth/api-keys.js';
import { changeCountersReader, type ChangeCounters } from '../domain/change-counters.js';
import { AppError } from '../errors.js';
import type { Storage } from '../storage/database.js';

declare module 'fastify' {
  interface FastifyRequest {
    principal: Principal;
    /**
     * The database's change tokens, read after this request arrived (shared with the
     * requests that arrived with it): whatever was committed before the request shows in them.
     */
    changeCounters: Promise<ChangeCounters>;
  }
}

export interface AccessRule {
  scope: Scope;
  /** Route parameter naming the bot (copilot) the request acts on, checked against a key's bot limit. */
  botParam?: string;
  /** Open to callers without a key when the operator sets ALLOW_ANONYMOUS_READ=true. */
  anonymousReadable?: boolean;
  /** The route creates a bot: a key limited to existing bots may not call it. */
  createsBot?: boolean;
}

/**
 * Builds the onRequest hook that enforces an access rule. It runs before the body is
 * read, so the order of answers is always 401 → 403 → 400 (body) → 404.
 */
export function accessHook(storage: Storage, allowAnonymousRead: boolean) {
  const readCounters = changeCountersReader(storage);
  const findKey = keyCache(storage);
  return (rule: AccessRule): onRequestHookHandler =>
    async function checkAccess(request: FastifyRequest, _reply: FastifyReply) {
      const counters = readCounters();
      counters.catch(() => undefined); // a request refused before it awaits them must not leave an unhandled rejection
      request.changeCounters = counters;
      const principal = await authenticate(request.headers.authorization, async (id) => findKey(id, (await counters).apiKeys));
      request.principal = principal;
      if (principal.kind === 'anonymous' && rule.anonymousReadable && allowAnonymousRead) return;
      const params = request.params as Record<string, string> | undefined;
      authorize(principal, rule.scope, rule.botParam ? params?.[rule.botParam] : undefined);
      if (rule.createsBot && botLimit(principal)) {
        throw new AppError('forbidden', 'This API key is limited to some bots and cannot create copilots.');
      }
    };
}

export type AccessHook = ReturnType<typeof accessHook>;

/** The bot ids a principal is limited to (undefined: all bots). */
export function botLimit(principal: Principal): readonly string[] | undefined {
  return principal.kind === 'key' && principal.bots !== null ? principal.bots : undefined;
}

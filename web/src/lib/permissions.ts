import type { ApiKeyIdentity, Scope } from '../../../src/domain/wire.js';

/**
 * What the signed-in key may do, from GET /backend/api/keys/me, so the dashboard offers only
 * those actions. The API still decides: this only spares a person a form that would fail.
 */

export type Identity = ApiKeyIdentity;
export type { Scope };

/** The service's scopes, in its order (test/web/admin-lib.test.ts holds it to the server's list). */
export const SCOPES = [
  'copilots:read',
  'copilots:write',
  'knowledgebase:read',
  'knowledgebase:write',
  'knowledgebase:delete',
  'admin',
] as const satisfies readonly Scope[];

/** One line for a person about each scope (the key form shows them). */
export const SCOPE_HELP: Record<Scope, string> = {
  'copilots:read': 'list and read copilots, their tokens and validation reports',
  'copilots:write': 'create, edit and delete copilots; upload API descriptions',
  'knowledgebase:read': 'list links and search knowledge bases',
  'knowledgebase:write': 'add links to knowledge bases',
  'knowledgebase:delete': 'delete links from knowledge bases',
  admin: 'every scope, plus managing keys and reading the audit log',
};

export interface Permissions {
  /** The key, or null before it is known (then everything is offered and the API decides). */
  identity: Identity | null;
  /** May act with `scope` (on `botId`, when given): admin holds every scope; a bot limit applies. */
  may(scope: Scope, botId?: string): boolean;
  /** May create copilots: copilots:write and no bot limit (a limited key cannot create a bot). */
  mayCreateCopilots: boolean;
  /** May create, list and revoke keys (admin). */
  mayManageKeys: boolean;
  /** May read the audit log (admin). */
  mayReadAudit: boolean;
  /** The scopes a key made by this one may have: those it acts with. */
  grantableScopes: readonly Scope[];
  /** The bots a key made by this one may be limited to; null: any bot, or every bot. */
  grantableBots: readonly string[] | null;
}

export function permissionsOf(identity: Identity | null): Permissions {
  if (identity === null) {
    return {
      identity,
      may: () => true,
      mayCreateCopilots: true,
      mayManageKeys: true,
      mayReadAudit: true,
      grantableScopes: SCOPES,
      grantableBots: null,
    };
  }
  const held = new Set<Scope>(identity.effective_scopes);
  if (identity.scopes.includes('admin')) for (const s of SCOPES) held.add(s);
  const bots = identity.bots === null ? null : identity.bots.map((b) => b.toLowerCase());
  const may = (scope: Scope, botId?: string) => held.has(scope) && (botId === undefined || bots === null || bots.includes(botId.toLowerCase()));
  const admin = identity.admin || held.has('admin');
  return {
    identity,
    may,
    mayCreateCopilots: held.has('copilots:write') && bots === null,
    mayManageKeys: admin,
    mayReadAudit: admin,
    grantableScopes: SCOPES.filter((s) => held.has(s)),
    grantableBots: bots,
  };
}

/** A short description of a key's reach, e.g. "Read only · 2 copilots". */
export function describeReach(identity: Identity): string {
  const s = new Set(identity.effective_scopes);
  const writes = ['copilots:write', 'knowledgebase:write', 'knowledgebase:delete', 'admin'].some((x) => s.has(x as Scope));
  const role = identity.admin ? 'Admin' : writes ? 'Read and write' : 'Read only';
  const bots = identity.bots === null ? 'every copilot' : identity.bots.length === 1 ? '1 copilot' : `${identity.bots.length} copilots`;
  return `${role} · ${bots}`;
}

/**
 * The copilots a new key may be limited to, as the key form offers them: every copilot listed, or
 * (for a key limited to some) only its own, by name. `null` while the list of copilots is loading,
 * so a limited key's choices never show as bare ids that turn into names a moment later; if the
 * list cannot be loaded, a limited key's own copilots are still offered, by id.
 */
export function botChoices(
  copilots: ReadonlyArray<{ id: string; name: string }> | undefined,
  failed: boolean,
  grantableBots: readonly string[] | null,
): Array<{ id: string; name: string }> | null {
  if (copilots === undefined && !failed) return null;
  const known = copilots ?? [];
  if (grantableBots === null) return known.map((c) => ({ id: c.id, name: c.name }));
  const byId = new Map(known.map((c) => [c.id, c.name]));
  return grantableBots.map((id) => ({ id, name: byId.get(id) ?? id }));
}

import { createHash, timingSafeEqual } from 'node:crypto';
import { existsSync } from 'node:fs';
import { chmod, rename, writeFile } from 'node:fs/promises';
import { DataDirError, describeFsError, prepareDataDir } from '../../storage/data-dir.js';
import path from 'node:path';
import { AppError } from '../../errors.js';
import * as keys from '../../storage/api-key.repository.js';
import type { ApiKeyRow, Db } from '../../storage/schema.js';
import { inTransaction } from '../../storage/transaction.js';
import * as copilots from '../../storage/copilot.repository.js';
import { recordAudit } from '../audit.js';
import { refuseForbiddenCharacters } from '../knowledgebase/links.js';
import { isCopilotId } from '../copilots/copilot.service.js';
import { nowTimestamp, randomAlphanumeric } from '../ids.js';
import { KEY_PATTERN } from './key-format.js';
import { Value } from 'typebox/value';
import { SCOPES, ApiKeyCreate, type ApiKey, type ApiKeyCreated, type ApiKeyIdentity, type Scope } from '../wire.js';

export { SCOPES, type ApiKey, type Scope };

/**
 * Who is calling: a key (with its scopes and bot limit) or nobody. `clientIp` is the
 * client's address as the HTTP layer sees it (TRUST_PROXY decides whether forwarding headers
 * count); the audit log records it.
 */
export type Principal = { kind: 'key'; keyId: string; scopes: ReadonlySet<Scope>; bots: readonly string[] | null; clientIp?: string } | { kind: 'anonymous' };

export const BOOTSTRAP_KEY_ID = 'bootstrapAdmin00';
export const BOOTSTRAP_KEY_FILE = 'bootstrap-admin-key';

const hashSecret = (secret: string): string => createHash('sha256').update(secret).digest('hex');

const isScope = (value: unknown): value is Scope => SCOPES.some((s) => s === value);

function toInfo(row: ApiKeyRow): ApiKey {
  const scopes: unknown = JSON.parse(row.scopes);
  const bots: unknown = row.bots === null ? null : JSON.parse(row.bots);
  return {
    id: row.id,
    name: row.name,
    // Written by createApiKey from checked lists; a scope this version does not know grants nothing.
    scopes: Array.isArray(scopes) ? scopes.filter(isScope) : [],
    bots: Array.isArray(bots) ? bots.map(String) : null,
    created_at: row.created_at,
    revoked_at: row.revoked_at,
  };
}

export function parseScopes(list: readonly string[]): Scope[] {
  const unknown = list.filter((s) => !isScope(s));
  if (unknown.length > 0 || list.length === 0) {
    const named = unknown.length > 0 ? `Unknown scope ${unknown.map((s) => JSON.stringify(s)).join(', ')}. ` : '';
    throw new AppError('invalid_request', `${named}Scopes must be a non-empty list of: ${SCOPES.join(', ')}.`, { unknown });
  }
  return [...new Set(list.filter(isScope))];
}

/** The scopes a principal holds: admin holds every scope. */
function holds(principal: KeyPrincipal, scope: Scope): boolean {
  return principal.scopes.has(scope) || principal.scopes.has('admin');
}

type KeyPrincipal = Principal & { kind: 'key' };

/** Active keys that may name one bot, at most: a tenant's administrator creates keys within its bots, not without end. */
export const MAX_ACTIVE_KEYS_PER_BOT = 1000;

/**
 * The bot list of a new key, as stored (lower-case, each once): absent or null means every
 * bot; otherwise 1 to 1000 ids. An empty list or a blank entry is refused: neither may ever
 * come to mean "every bot".
 */
function botList(bots: readonly string[] | null | undefined): string[] | null {
  if (bots === undefined || bots === null) return null;
  if (bots.length === 0)
    throw new AppError('invalid_request', 'bots must name at least one copilot; leave it out for a key that may act on every bot.', { field: 'bots' });
  const blank = bots.filter((b) => b.trim() === '');
  if (blank.length > 0) throw new AppError('invalid_request', 'bots must not contain blank entries.', { field: 'bots' });
  return [...new Set(bots.map((b) => b.trim().toLowerCase()))];
}

/** The bots of a new key name existing (not deleted) copilots. */
async function checkBotsExist(db: Db, ids: readonly string[] | null): Promise<void> {
  if (ids === null) return;
  const unknown: string[] = [];
  for (const id of ids) {
    const row = isCopilotId(id) ? await copilots.findCopilot(db, id) : undefined;
    if (!row || row.deleted_at !== null) unknown.push(id);
  }
  if (unknown.length > 0) {
    throw new AppError('invalid_request', `bots must name existing copilots; unknown: ${unknown.slice(0, 5).join(', ')}${unknown.length > 5 ? ', …' : ''}.`, {
      field: 'bots',
      unknown: unknown.slice(0, 20),
    });
  }
}

/** True when every bot of `bots` (null: every bot) lies within the principal's limit. */
function withinBots(principal: KeyPrincipal, bots: readonly string[] | null): boolean {
  if (principal.bots === null) return true;
  if (bots === null) return false;
  return bots.every((b) => principal.bots!.includes(b));
}

export interface CreateKeyOptions {
  creator?: Principal;
  fixedId?: string;
  /** The whole key, already in the wire format (ADMIN_API_KEY): stored instead of a new one. */
  presetKey?: string;
}

/**
 * The limits POST /backend/api/keys puts on its body (its schema, wire.ApiKeyCreate), for a key
 * asked for elsewhere (the CLI's `keys create`): invalid_request naming the first one broken.
 */
export function checkKeyRequest(input: ApiKeyCreate): void {
  const [first] = Value.Errors(ApiKeyCreate, input);
  if (first) throw new AppError('invalid_request', `${first.instancePath.slice(1).replaceAll('/', ' ')} ${first.message}.`, { field: first.instancePath });
}

/**
 * Creates a key. `creator` is the key asking (absent: the operator, from the CLI or at
 * first start): a key creates only keys whose scopes it holds itself and whose bots lie
 * within its own, so a key limited to some bots cannot mint one for every bot.
 */
export async function createApiKey(db: Db, input: ApiKeyCreate, options: CreateKeyOptions = {}): Promise<ApiKeyCreated> {
  if (input.name !== undefined) refuseForbiddenCharacters('name', input.name);
  const scopes = parseScopes(input.scopes);
  const bots = botList(input.bots);
  const creator = options.creator;
  // Within the creator's bots before they are looked up: a key limited to some bots learns
  // nothing of any other copilot, not even whether it exists (403 for every bot outside its own).
  if (creator?.kind === 'key') {
    const missing = scopes.filter((s) => !holds(creator, s));
    if (missing.length > 0) throw new AppError('forbidden', `This API key cannot grant scopes it does not hold: ${missing.join(', ')}.`, { scopes: missing });
    if (!withinBots(creator, bots)) {
      throw new AppError('forbidden', 'This API key is limited to some bots: a key it creates must name bots within its own.', { bots: creator.bots });
    }
  }
  await checkBotsExist(db, bots);
  const preset = options.presetKey === undefined ? null : KEY_PATTERN.exec(options.presetKey);
  if (options.presetKey !== undefined && !preset) throw new AppError('invalid_request', 'A preset API key must be in the wire format of keys.');
  const id = preset ? preset[1]! : (options.fixedId ?? randomAlphanumeric(16));
  const secret = preset ? preset[2]! : randomAlphanumeric(32);
  const row: ApiKeyRow = {
    id,
    name: input.name ?? '',
    secret_hash: hashSecret(secret),
    scopes: JSON.stringify(scopes),
    bots: bots === null ? null : JSON.stringify(bots),
    created_at: '',
    revoked_at: null,
  };
  await inTransaction(db, async (trx) => {
    // The creating key, locked: one revoked since its request was let in creates nothing (401).
    if (creator?.kind === 'key') {
      const own = await keys.lockApiKey(trx, creator.keyId);
      if (!own || own.revoked_at !== null) throw new AppError('unauthorized', 'The API key is not valid or has been revoked.');
    }
    if (bots !== null) {
      const full = await keys.botsAtKeyLimit(trx, bots, MAX_ACTIVE_KEYS_PER_BOT);
      if (full.length > 0) {
        throw new AppError(
          'quota_exceeded',
          `${MAX_ACTIVE_KEYS_PER_BOT} active API keys already name the bot ${full[0]}: revoke one before creating another.`,
          { bot_id: full[0], max_active_keys_per_bot: MAX_ACTIVE_KEYS_PER_BOT },
        );
      }
    }
    row.created_at = nowTimestamp();
    await keys.insertApiKey(trx, row);
    // An entry per bot of a limited key: each bot's tenant administrator reads it.
    await recordAudit(trx, creator, 'key.create', bots, { key_id: id, scopes, bots, name: row.name });
  });
  return { id, key: `cms_${id}_${secret}`, scopes, bots, name: row.name, created_at: row.created_at };
}

/** Every key, or for a key limited to bots only the keys within its bots. */
export async function listApiKeys(db: Db, viewer?: Principal): Promise<ApiKey[]> {
  const limitedTo = viewer?.kind === 'key' ? viewer.bots : null;
  // A limited viewer reads only keys naming one of its bots (then checked whole), never every tenant's.
  const rows = limitedTo === null ? await keys.listApiKeys(db) : await keys.listApiKeysNaming(db, limitedTo);
  const all = rows.map(toInfo);
  return viewer?.kind === 'key' ? all.filter((k) => withinBots(viewer, k.bots)) : all;
}

/** Revokes a key; a key limited to bots revokes only keys within them (others: 404, as if absent). */
export async function revokeApiKey(db: Db, id: string, actor?: Principal): Promise<void> {
  const notFound = () => new AppError('key_not_found', 'No API key has this id.', { id });
  await inTransaction(db, async (trx) => {
    // Locked first: keys this key is creating meanwhile are written before or refused after (createApiKey).
    const row = await keys.lockApiKey(trx, id);
    if (!row || (actor?.kind === 'key' && !withinBots(actor, toInfo(row).bots))) throw notFound();
    // Revoking a revoked key again is 204 and changes nothing: one revocation, one audit entry.
    // The row is locked: a revocation racing this one has committed, and shows here.
    if (row.revoked_at !== null) return;
    const info = toInfo(row);
    // Through the API only: the operator's command line makes keys itself, so it may revoke the last.
    if (actor?.kind === 'key' && info.scopes.includes('admin') && info.bots === null && (await keys.countActiveApiKeys(trx, { unlimitedAdmin: true })) <= 1) {
      throw new AppError('conflict', 'This is the last admin key for every bot: create another before revoking it, or no key could manage keys any more.', {
        id,
      });
    }
    await keys.revokeApiKey(trx, id, nowTimestamp());
    await recordAudit(trx, actor, 'key.revoke', info.bots, { key_id: id });
  });
}

/**
 * The calling key as it may see itself: its label, scopes and bots, and what it acts with
 * (admin holds every scope and manages keys). Never the secret. Any valid key may ask.
 */
export async function describeKey(db: Db, principal: Principal): Promise<ApiKeyIdentity> {
  const unknown = () => new AppError('unauthorized', 'The API key is not valid or has been revoked.');
  if (principal.kind !== 'key') throw unknown();
  const row = await keys.findApiKey(db, principal.keyId);
  // Revoked between the check and this read: answer as the next request would.
  if (!row || row.revoked_at !== null) throw unknown();
  const info = toInfo(row);
  const admin = info.scopes.includes('admin');
  return {
    id: info.id,
    name: info.name,
    scopes: info.scopes,
    bots: info.bots,
    created_at: info.created_at,
    admin,
    effective_scopes: admin ? [...SCOPES] : SCOPES.filter((s) => info.scopes.includes(s)),
  };
}

/** A stored key as authentication needs it. */
export interface KnownKey {
  secretHash: Buffer;
  revoked: boolean;
  principal: Principal & { kind: 'key' };
}

/** Finds a stored key by its id. */
export type KeyLookup = (id: string) => Promise<KnownKey | undefined>;

function knownKey(row: ApiKeyRow): KnownKey {
  const info = toInfo(row);
  return {
    secretHash: Buffer.from(row.secret_hash, 'hex'),
    revoked: row.revoked_at !== null,
    principal: { kind: 'key', keyId: info.id, scopes: new Set(info.scopes), bots: info.bots },
  };
}

/** Reads the key from the database at every call. */
export function readKeys(db: Db): KeyLookup {
  return async (id) => {
    const row = await keys.findApiKey(db, id);
    return row && knownKey(row);
  };
}

const NO_SECRET = Buffer.alloc(32);

/**
 * Resolves an `Authorization` header to a principal. Missing header → anonymous;
 * malformed, unknown or revoked key → 401. The secret's hash is compared in constant
 * time, also when the id is unknown.
 */
export async function authenticate(authorization: string | undefined, lookup: KeyLookup): Promise<Principal> {
  if (authorization === undefined || authorization === '') return { kind: 'anonymous' };
  const match = /^Bearer[ ]+(\S+)\s*$/i.exec(authorization);
  const parts = match ? KEY_PATTERN.exec(match[1]!) : null;
  if (!parts) throw new AppError('unauthorized', 'The Authorization header must be "Bearer <API key>" with a valid key.');
  const key = await lookup(parts[1]!);
  const presented = createHash('sha256').update(parts[2]!).digest();
  const stored = key?.secretHash.length === presented.length ? key.secretHash : NO_SECRET;
  const same = timingSafeEqual(presented, stored) && stored !== NO_SECRET;
  if (!key || !same || key.revoked) {
    throw new AppError('unauthorized', 'The API key is not valid or has been revoked.');
  }
  return key.principal;
}

/** 403 unless the principal holds `scope` (admin holds every scope) and, when given, may act on `botId`. */
export function authorize(principal: Principal, scope: Scope, botId?: string): void {
  if (principal.kind !== 'key') throw new AppError('unauthorized', 'This operation needs an API key: send "Authorization: Bearer <API key>".');
  if (!principal.scopes.has(scope) && !principal.scopes.has('admin')) {
    throw new AppError('forbidden', `This API key lacks the scope ${scope}.`, { required_scope: scope });
  }
  if (botId !== undefined && principal.bots !== null && !principal.bots.includes(botId.toLowerCase())) {
    throw new AppError('forbidden', 'This API key is limited to other bots.', { bot_id: botId });
  }
}

/** Whether the first admin key (the one the key file holds) still works. */
export async function bootstrapKeyActive(db: Db): Promise<boolean> {
  const row = await keys.findApiKey(db, BOOTSTRAP_KEY_ID);
  return row !== undefined && row.revoked_at === null;
}

/**
 * First start with ADMIN_API_KEY set (already checked against the key format): when the
 * database holds no key at all, store that key as an admin key; nothing is written to disk.
 * Once any key exists, nothing is stored, so a later change of the variable never adds a key.
 * Two instances starting at once store it once (its id is the key's own). Says whether this
 * call stored it, and whether the key opens the database as an unlimited admin key: a database
 * that holds other keys ignores the variable, and the operator must hear it.
 */
export async function seedAdminKey(db: Db, presetKey: string): Promise<{ id: string; stored: boolean; works: boolean }> {
  const id = KEY_PATTERN.exec(presetKey)?.[1] ?? '';
  if (!(await keys.anyApiKey(db))) {
    try {
      await createApiKey(db, { scopes: ['admin'], name: 'ADMIN_API_KEY' }, { presetKey });
      return { id, stored: true, works: true };
    } catch (err) {
      if (!(await keys.findApiKey(db, id))) throw err; // else another instance stored it
    }
  }
  const principal = await authenticate(`Bearer ${presetKey}`, readKeys(db)).catch((err: unknown) => {
    if (err instanceof AppError && err.code === 'unauthorized') return null;
    throw err;
  });
  const works = principal?.kind === 'key' && principal.scopes.has('admin') && principal.bots === null;
  return { id, stored: false, works };
}

/**
 * First start: when the database holds no key at all, create one admin key and
 * write it to DATA_DIR/bootstrap-admin-key (mode 0600). The key has a fixed id, so
 * two instances starting at once on one database create it only once.
 * Returns the file's path when this call created the key, and where a file found there was kept.
 */
export async function ensureBootstrapAdminKey(db: Db, dataDir: string): Promise<{ file: string; replaced: string | null } | null> {
  if (await keys.anyApiKey(db)) return null;
  // The directory before the key: a key stored whose file cannot be written is lost (its secret is nowhere else).
  prepareDataDir(dataDir);
  let created: { key: string };
  try {
    created = await createApiKey(db, { scopes: ['admin'], name: 'bootstrap admin' }, { fixedId: BOOTSTRAP_KEY_ID });
  } catch (err) {
    if (await keys.findApiKey(db, BOOTSTRAP_KEY_ID)) return null; // another instance won
    throw err;
  }
  const file = path.join(dataDir, BOOTSTRAP_KEY_FILE);
  let replaced: string | null = null;
  try {
    // A file there already is another database's first key (DATA_DIR shared, DATABASE_URL
    // changed): kept beside, never overwritten.
    if (existsSync(file)) {
      replaced = `${file}.replaced-${new Date().toISOString().replace(/[:.]/g, '-')}`;
      await rename(file, replaced);
    }
    await writeFile(file, `${created.key}\n`, { mode: 0o600 });
    await chmod(file, 0o600);
  } catch (err) {
    // Unwritten, the key could never be used: gone, so that the next start makes another.
    await keys.deleteApiKey(db, BOOTSTRAP_KEY_ID);
    throw new DataDirError(dataDir, describeFsError(err));
  }
  return { file, replaced };
}

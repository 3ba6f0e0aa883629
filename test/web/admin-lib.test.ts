/** The dashboard's administration helpers (web/src/lib/permissions.ts, audit-filters.ts), run under Node. */
import { describe, expect, it } from 'vitest';
import { SCOPES as SERVER_SCOPES } from '../../src/domain/auth/api-keys.js';
import { AUDIT_ACTIONS as SERVER_ACTIONS } from '../../src/domain/audit.js';
import {
  ACTION_LABELS,
  AUDIT_ACTIONS,
  auditQueryString,
  describeDetails,
  fromUtcInput,
  parseAuditFilters,
  toUtcInput,
} from '../../web/src/lib/audit-filters.js';
import { botChoices, describeReach, permissionsOf, SCOPE_HELP, SCOPES, type Identity } from '../../web/src/lib/permissions.js';

const BOT_A = '0b7c5a2e-8f1d-4c3b-9a6e-1d2f3a4b5c6d';
const BOT_B = '9e8d7c6b-5a4f-4e3d-8c2b-1a0f9e8d7c6b';

function identity(scopes: Identity['scopes'], bots: string[] | null = null): Identity {
  const admin = scopes.includes('admin');
  return {
    id: 'abcdefghijklmnop',
    name: 'Test',
    scopes,
    bots,
    created_at: '2026-01-31T12:00:00.000000Z',
    admin,
    effective_scopes: admin ? [...SERVER_SCOPES] : SERVER_SCOPES.filter((s) => scopes.includes(s)),
  };
}

describe('the lists the dashboard mirrors', () => {
  it('has the server’s scopes and audit actions, in its order, each described', () => {
    expect([...SCOPES]).toEqual([...SERVER_SCOPES]);
    expect([...AUDIT_ACTIONS]).toEqual([...SERVER_ACTIONS]);
    for (const s of SCOPES) expect(SCOPE_HELP[s]).toBeTruthy();
    for (const a of AUDIT_ACTIONS) expect(ACTION_LABELS[a]).toBeTruthy();
  });
});

describe('permissionsOf', () => {
  it('an unlimited admin may do everything, grant every scope, for every bot', () => {
    const p = permissionsOf(identity(['admin']));
    expect(SCOPES.every((s) => p.may(s, BOT_A))).toBe(true);
    expect(p).toMatchObject({ mayCreateCopilots: true, mayManageKeys: true, mayReadAudit: true, grantableBots: null });
    expect(p.grantableScopes).toEqual([...SCOPES]);
  });

  it('a read-only key may read, never write, create, manage keys or read the audit log', () => {
    const p = permissionsOf(identity(['copilots:read', 'knowledgebase:read']));
    expect(p.may('copilots:read', BOT_A)).toBe(true);
    expect(p.may('knowledgebase:read')).toBe(true);
    for (const s of ['copilots:write', 'knowledgebase:write', 'knowledgebase:delete', 'admin'] as const) expect(p.may(s, BOT_A), s).toBe(false);
    expect(p).toMatchObject({ mayCreateCopilots: false, mayManageKeys: false, mayReadAudit: false });
  });

  it('a key limited to bots acts on those only (any case), cannot create copilots, grants within its bots', () => {
    const p = permissionsOf(identity(['admin'], [BOT_A]));
    expect(p.may('copilots:write', BOT_A)).toBe(true);
    expect(p.may('copilots:write', BOT_A.toUpperCase())).toBe(true);
    expect(p.may('copilots:write', BOT_B)).toBe(false);
    expect(p.mayCreateCopilots).toBe(false);
    expect(p.mayManageKeys).toBe(true);
    expect(p.grantableBots).toEqual([BOT_A]);
  });

  it('a writer without a bot limit may create copilots; with copilots:write only, not read them', () => {
    const p = permissionsOf(identity(['copilots:write']));
    expect(p.mayCreateCopilots).toBe(true);
    expect(p.may('copilots:read')).toBe(false);
    expect(p.grantableScopes).toEqual(['copilots:write']);
  });

  it('before the key is known, offers everything (the API decides)', () => {
    const p = permissionsOf(null);
    expect(p.may('admin', BOT_B)).toBe(true);
    expect(p.mayManageKeys).toBe(true);
  });

  it('describes a key’s reach in a few words', () => {
    expect(describeReach(identity(['admin']))).toBe('Admin · every copilot');
    expect(describeReach(identity(['copilots:read'], [BOT_A]))).toBe('Read only · 1 copilot');
    expect(describeReach(identity(['copilots:read', 'knowledgebase:write'], [BOT_A, BOT_B]))).toBe('Read and write · 2 copilots');
  });
});

describe('audit filters in the address', () => {
  it('reads the API’s parameter names and drops unknown names and empty values', () => {
    expect(parseAuditFilters(`?bot_id=${BOT_A}&action=key.create&since=2026-01-01T00%3A00%3A00Z&until=&page=3`)).toEqual({
      bot_id: BOT_A,
      action: 'key.create',
      since: '2026-01-01T00:00:00Z',
    });
    expect(parseAuditFilters('')).toEqual({});
  });

  it('writes them in a fixed order and reads back what it wrote', () => {
    const filters = { until: '2026-02-01T00:00:00Z', action: 'copilot.update', bot_id: BOT_B };
    const query = auditQueryString(filters);
    expect(query).toBe(`bot_id=${BOT_B}&action=copilot.update&until=2026-02-01T00%3A00%3A00Z`);
    expect(parseAuditFilters(query)).toEqual(filters);
    expect(auditQueryString({ action: ' ', bot_id: undefined })).toBe('');
  });

  it('reads a datetime-local value as UTC and shows an ISO time in one', () => {
    expect(fromUtcInput('2026-01-31T12:05')).toBe('2026-01-31T12:05:00Z');
    expect(fromUtcInput('2026-01-31T12:05:09')).toBe('2026-01-31T12:05:09Z');
    expect(fromUtcInput('')).toBeUndefined();
    expect(fromUtcInput('2026-13-45T99:99')).toBeUndefined();
    expect(toUtcInput('2026-01-31T12:05:00Z')).toBe('2026-01-31T12:05');
    expect(toUtcInput('2026-01-31T12:05:00.123456Z')).toBe('2026-01-31T12:05');
    expect(toUtcInput('not a time')).toBe('');
    expect(toUtcInput(undefined)).toBe('');
  });

  it('describes an entry’s details, the client’s address last', () => {
    expect(describeDetails({ client_ip: '203.0.113.9', key_id: 'k1', scopes: ['copilots:read', 'admin'], bots: null, name: '' })).toEqual([
      ['key id', 'k1'],
      ['scopes', 'copilots:read, admin'],
      ['bots', 'all'],
      ['from', '203.0.113.9'],
    ]);
    expect(describeDetails({ fields: ['name'], count: 2 })).toEqual([
      ['fields', 'name'],
      ['count', '2'],
    ]);
  });
});

describe("the key form's copilot choices (botChoices)", () => {
  const copilots = [
    { id: BOT_A, name: 'Alpha desk' },
    { id: BOT_B, name: 'Beta desk' },
  ];

  it('offers nothing while the copilots load, then each copilot by name', () => {
    // A limited key used to be offered its copilots' ids until the list answered.
    expect(botChoices(undefined, false, [BOT_A])).toBeNull();
    expect(botChoices(undefined, false, null)).toBeNull();
    expect(botChoices(copilots, false, [BOT_A])).toEqual([{ id: BOT_A, name: 'Alpha desk' }]);
    expect(botChoices(copilots, false, null)).toEqual(copilots);
  });

  it('offers a limited key its own copilots by id when the list cannot be loaded', () => {
    expect(botChoices(undefined, true, [BOT_A, BOT_B])).toEqual([
      { id: BOT_A, name: BOT_A },
      { id: BOT_B, name: BOT_B },
    ]);
    expect(botChoices(undefined, true, null)).toEqual([]);
  });
});

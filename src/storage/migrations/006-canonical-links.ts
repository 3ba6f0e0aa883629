import type { Kysely, Migration } from 'kysely';

// Frozen in time: never edit a migration that has shipped; add a new one.
//
// Knowledge-base links are stored in one canonical form from now on (issue 13 §11; the rules
// are at the top of src/domain/knowledgebase/links.ts). Links stored before were kept as the
// user spelled them, so one page could be several rows, indexed several times. This brings
// every row to the canonical form; rows of one bot that become one link are merged into the
// best of them (indexed before pending before failed, then the most recently updated), which
// keeps its passages; the others are deleted with theirs. Only rows that change are held in
// memory. There is no way back: the original spellings are not kept.

const SCAN_BATCH = 1000;
const IN_BATCH = 200;

// A copy of canonicalLink as it stood when this migration was written (frozen with it).
const UNRESERVED = /[A-Za-z0-9\-._~]/;
function canonical(link: string): string | null {
  try {
    const url = new URL(link);
    url.hash = '';
    const host = url.hostname;
    if (host.length > 1 && host.endsWith('.') && !host.startsWith('[')) url.hostname = host.slice(0, -1);
    const origin = `${url.protocol}//${url.host}`;
    if (!url.href.startsWith(origin)) return null;
    const rest = url.href.slice(origin.length).replace(/%([0-9A-Fa-f]{2})/g, (_escape, hex: string) => {
      const char = String.fromCharCode(parseInt(hex, 16));
      return UNRESERVED.test(char) ? char : `%${hex.toUpperCase()}`;
    });
    return new URL(origin + rest).href;
  } catch {
    return null;
  }
}

interface LinkRow {
  id: string;
  bot_id: string;
  url: string;
  status: string;
  updated_at: string;
}

const STATUS_RANK: Record<string, number> = { indexed: 0, pending: 1, failed: 2 };

/** Best first: indexed, pending, failed; then the most recently updated; then by id (deterministic). */
function better(a: LinkRow, b: LinkRow): number {
  const rank = (STATUS_RANK[a.status] ?? 3) - (STATUS_RANK[b.status] ?? 3);
  if (rank !== 0) return rank;
  if (a.updated_at !== b.updated_at) return a.updated_at > b.updated_at ? -1 : 1;
  return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
}

function chunks<T>(items: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

export function canonicalLinks(): Migration {
  return {
    async up(db: Kysely<any>) {
      const columns = ['id', 'bot_id', 'url', 'status', 'updated_at'] as const;
      // 1. Every row whose URL is not canonical, grouped by (bot, canonical URL).
      const groups = new Map<string, { botId: string; url: string; rows: LinkRow[] }>();
      let after: string | null = null;
      for (;;) {
        const page: LinkRow[] = await db
          .selectFrom('kb_links')
          .select(columns)
          .$if(after !== null, (qb) => qb.where('id', '>', after))
          .orderBy('id')
          .limit(SCAN_BATCH)
          .execute();
        for (const row of page) {
          const url = canonical(row.url);
          if (url === null || url === row.url) continue;
          const key = JSON.stringify([row.bot_id, url]);
          const group = groups.get(key) ?? { botId: row.bot_id, url, rows: [] };
          group.rows.push(row);
          groups.set(key, group);
        }
        if (page.length < SCAN_BATCH) break;
        after = page[page.length - 1]!.id;
      }
      if (groups.size === 0) return;

      // 2. The rows already stored in those canonical forms join their groups.
      const byBot = new Map<string, string[]>();
      for (const group of groups.values()) byBot.set(group.botId, [...(byBot.get(group.botId) ?? []), group.url]);
      for (const [botId, urls] of byBot) {
        for (const batch of chunks(urls, IN_BATCH)) {
          const existing: LinkRow[] = await db.selectFrom('kb_links').select(columns).where('bot_id', '=', botId).where('url', 'in', batch).execute();
          for (const row of existing) groups.get(JSON.stringify([botId, row.url]))!.rows.push(row);
        }
      }

      // 3. Keep the best row of each group under the canonical URL; delete the others and their passages.
      const losers: string[] = [];
      const renames: Array<{ id: string; url: string }> = [];
      for (const group of groups.values()) {
        const [best, ...rest] = [...group.rows].sort(better);
        losers.push(...rest.map((r) => r.id));
        if (best!.url !== group.url) renames.push({ id: best!.id, url: group.url });
      }
      for (const ids of chunks(losers, IN_BATCH)) {
        await db.deleteFrom('kb_links').where('id', 'in', ids).execute();
        await db.deleteFrom('kb_passages').where('link_id', 'in', ids).execute();
      }
      for (const { id, url } of renames) {
        await db.updateTable('kb_links').set({ url }).where('id', '=', id).execute();
      }
    },
  };
}

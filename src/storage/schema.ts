import type { Generated, Kysely, Transaction } from 'kysely';

/** Row types as stored; they never leave src/storage (services map rows to API objects). */
export interface CopilotRow {
  id: string;
  name: string;
  token: string;
  website: string;
  status: string;
  prompt_message: string;
  enhanced_privacy: number;
  smart_sync: number;
  swagger_url: string;
  is_premade_demo_template: number;
  created_at: string;
  updated_at: string;
  deleted_at: string | null;
}

/** The stored row: the copilot and what its list filter matches. */
export interface CopilotTable extends CopilotRow {
  /** `foldText(name)` (src/text/folding.ts), kept by the repository; `q` matches it. */
  name_folded: string;
}

export interface ApiKeyRow {
  id: string;
  name: string;
  secret_hash: string;
  scopes: string; // JSON array of scope names
  bots: string | null; // JSON array of bot ids, null = every bot
  created_at: string;
  revoked_at: string | null;
}

export interface SwaggerDocumentRow {
  file_name: string;
  copilot_id: string;
  media_type: string;
  sha256: string;
  size: number;
  content: Buffer;
  created_at: string;
  /** The file name it was uploaded under, sanitised (migration 013); null for a raw body or an older document. */
  original_name: string | null;
  /** The readiness score (0–100) its validation gave at upload (migration 013); null for an older document. */
  readiness_score: number | null;
  /** JSON array of the platform ids it is ready for, at upload (migration 013); null for an older document. */
  ready_platforms: string | null;
}

export interface ApiDescriptionVersionRow {
  copilot_id: string;
  version: number;
  sha256: string;
  size: number;
  media_type: string;
  content: Buffer;
  /** 'upload' (PUT …/swagger, POST …/copilot/swagger) or 'sync' (fetched from swagger_url). */
  source: string;
  /** The URL a synced version was fetched from. */
  url: string | null;
  breaking_changes: number;
  other_changes: number;
  created_at: string;
}

export interface ApiDescriptionChangeRow {
  copilot_id: string;
  version: number;
  seq: number;
  kind: string;
  breaking: number;
  method: string | null;
  path: string | null;
  message: string;
  before_value: string | null; // JSON
  after_value: string | null; // JSON
}

export interface ApiDescriptionSyncRow {
  copilot_id: string;
  next_sync_at: string;
  lease_owner: string | null;
  lease_expires_at: string | null;
  etag: string | null;
  last_modified: string | null;
  last_synced_at: string | null;
  /** 'unchanged', 'changed' or 'failed'. */
  last_outcome: string | null;
  last_error: string | null;
}

export interface WebhookDeliveryRow {
  id: string;
  /** What happened, e.g. 'api_description.breaking_change'. */
  event: string;
  copilot_id: string | null;
  url: string;
  /** The JSON body POSTed. */
  payload: string;
  /** 'pending', 'delivered' or 'failed' (attempts used up). */
  state: string;
  attempts: number;
  next_attempt_at: string;
  lease_owner: string | null;
  lease_expires_at: string | null;
  last_status: number | null;
  last_error: string | null;
  created_at: string;
  delivered_at: string | null;
}

export interface KnowledgeBaseRow {
  bot_id: string;
  created_at: string;
  updated_at: string;
  /** When a job of this bot was last claimed (null: never); the queue serves the least recent first. */
  last_claimed_at: string | null;
  /** The sums of its links' `passages` and `term_count`, kept by the database (migration 014's triggers). */
  passages: number;
  term_count: number;
}

/** The stored knowledge base row: its totals are kept by the database. */
export interface KnowledgeBaseTable extends Omit<KnowledgeBaseRow, 'passages' | 'term_count' | 'last_claimed_at'> {
  passages: Generated<number>;
  term_count: Generated<number>;
  last_claimed_at: Generated<string | null>;
}

export interface KbLinkRow {
  id: string;
  bot_id: string;
  url: string;
  status: string; // pending | indexed | failed
  error: string | null;
  passages: number;
  attempts: number;
  generation: number;
  run_after: string;
  lease_owner: string | null;
  lease_expires_at: string | null;
  created_at: string;
  updated_at: string;
  /** The search terms of the link's passages, in all (the bot's average passage length for bm25). */
  term_count: number;
  /** The version of the link's passages that searches see (the set stored last). */
  version: number;
  /** The validators of the fetch whose passages are stored (a later fetch sends them back). */
  etag: string | null;
  last_modified: string | null;
  /** SHA-256 (hex) of the passages last indexed (passages.ts `passagesDigest`): the same text fetched again writes nothing. */
  content_sha256: string | null;
  /** 1 when the stored passages were redacted (the copilot's enhanced_privacy at the time). */
  redacted: number;
  /** 1 when the stored passages are of the page's first part only (HTML past extract.ts's MAX_HTML_CHARS). */
  truncated: number;
  /** When the page was last checked (a re-fetch by the refresh queue). */
  checked_at: string | null;
  /** When its next check is due (null: none scheduled); see link-refresh.repository.ts. */
  check_after: string | null;
}

/** The stored link row: `term_count`, `version`, `redacted` and `truncated` are kept by the passage writes. */
export interface KbLinkTable extends Omit<KbLinkRow, 'term_count' | 'version' | 'redacted' | 'truncated'> {
  term_count: Generated<number>;
  version: Generated<number>;
  redacted: Generated<number>;
  truncated: Generated<number>;
}

/**
 * A set of a link's passages that no search may see: being stored (`staging`), or replaced,
 * abandoned or refused (`retired`: its passages are deleted a batch at a time).
 */
export interface KbHiddenPassagesRow {
  link_id: string;
  version: number;
  bot_id: string;
  state: 'staging' | 'retired';
  created_at: string;
}

export interface KbPassageRow {
  id: Generated<number>;
  link_id: string;
  bot_id: string;
  seq: number;
  content: string;
  /** How many search terms the passage has (its length for bm25). */
  term_count: number;
  /** Which stored set of its link's passages it belongs to (see kb_links.version). */
  version: Generated<number>;
}

/**
 * A segment of a bot's search index (migration 019, docs/search-index.md): the postings one
 * write added, or what a merge of segments left.
 */
export interface KbSegmentRow {
  id: Generated<number>;
  bot_id: string;
  /** Its passages that hold a term. */
  passages: number;
  min_id: number;
  max_id: number;
  created_at: string;
}

/** A block of one segment's postings in a bot's index: several terms' blobs (search-index.ts encodes them). */
export interface KbBlocksRow {
  bot_id: string;
  segment: number;
  /** The block's first term (compared as UTF-8 bytes). */
  first_term: string;
  /** Its terms' blobs (search-index.ts `blocksOf`). */
  block: Uint8Array;
}

/** A bot's deleted passages that some segment still holds: searches leave them out; merges drop them. */
export interface KbExcludedRow {
  bot_id: string;
  /** Their ids, ascending (search-index.ts `encodeIds`). */
  ids: Uint8Array;
  count: number;
}

/** A crawl (issue 16 §2): its request, robots.txt, state and schedule (migration 012). */
export interface CrawlRow {
  id: string;
  bot_id: string;
  /** 'links' (from a start URL, following links) or 'sitemap'. */
  mode: string;
  start_url: string;
  origin: string;
  path_prefix: string;
  max_pages: number;
  max_depth: number;
  include_patterns: string; // JSON array
  exclude_patterns: string; // JSON array
  /** queued | running | done | cancelled | failed */
  state: string;
  /** URLs accepted into the frontier (at most max_pages). */
  discovered: number;
  /** In-scope URLs robots.txt disallowed. */
  blocked: number;
  /**
   * Its pages by state, kept by triggers on crawl_pages (migration 015): waiting or queued,
   * indexed, failed, duplicate or skipped; and those whose fetch answered.
   */
  pages_queued: number;
  pages_indexed: number;
  pages_failed: number;
  pages_skipped: number;
  pages_fetched: number;
  robots_txt: string | null;
  crawl_delay_ms: number;
  /** The earliest time the crawl's next page may be fetched (Crawl-delay). */
  next_fetch_at: string;
  error: string | null;
  attempts: number;
  run_after: string;
  lease_owner: string | null;
  lease_expires_at: string | null;
  created_at: string;
  started_at: string | null;
  finished_at: string | null;
  updated_at: string;
}

/** A URL of a crawl's frontier (migration 012). */
export interface CrawlPageRow {
  crawl_id: string;
  url: string;
  bot_id: string;
  seq: number;
  depth: number;
  /** 1: queued because another page named it as its canonical (or redirected to it). */
  via_canonical: number;
  /** waiting | queued | indexed | failed | duplicate | skipped | cancelled */
  state: string;
  /** 1 once a fetch of it answered 2xx. */
  fetched: number;
  /** The bot's link before the crawl queued it again; null when the crawl created it. */
  prior_status: string | null;
  prior_error: string | null;
  updated_at: string;
}

export interface AuditLogRow {
  id: Generated<number>;
  at: string;
  actor_key_id: string | null;
  action: string;
  bot_id: string | null;
  details: string; // JSON
}

export interface Database {
  copilots: CopilotTable;
  api_keys: ApiKeyRow;
  swagger_documents: SwaggerDocumentRow;
  api_description_versions: ApiDescriptionVersionRow;
  api_description_changes: ApiDescriptionChangeRow;
  api_description_sync: ApiDescriptionSyncRow;
  webhook_deliveries: WebhookDeliveryRow;
  knowledge_bases: KnowledgeBaseTable;
  kb_links: KbLinkTable;
  kb_passages: KbPassageRow;
  kb_hidden_passages: KbHiddenPassagesRow;
  kb_segments: KbSegmentRow;
  kb_blocks: KbBlocksRow;
  kb_excluded: KbExcludedRow;
  audit_log: AuditLogRow;
  crawls: CrawlRow;
  crawl_pages: CrawlPageRow;
}

/** What a repository function takes first: the database or an open transaction. */
export type Db = Kysely<Database> | Transaction<Database>;

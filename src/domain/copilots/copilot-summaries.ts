import { Type, type Static } from 'typebox';
import { AppError } from '../../errors.js';
import { findDocumentSummaries } from '../../storage/swagger-document.repository.js';
import type { Db } from '../../storage/schema.js';
import { PLATFORM_IDS } from '../validator/wire-types.js';
import { isCopilotId } from './copilot.service.js';

/**
 * What the dashboard's copilot list shows beside each copilot (issue 17 §3) without opening
 * its report: the name its API description was uploaded under, and the readiness its
 * validation gave at upload. Stored with the document (migration 013), read in one query:
 * a summary never validates anything, so it costs what a list page costs.
 *
 * A separate, additive answer rather than new keys on the copilot: DESIGN §3 keeps the
 * copilot's fields exactly those of the interface (§2.1), so the list stays byte for byte
 * what it was.
 */
export const MAX_SUMMARY_IDS = 100;

const ReadinessSummary = Type.Object(
  {
    score: Type.Integer({ minimum: 0, maximum: 100, description: 'The readiness score (0–100) at upload, as GET …/validator reports it' }),
    ready: Type.Boolean({ description: 'True when the document is ready for every platform (no error-severity finding)' }),
    ready_platforms: Type.Array(Type.String(), { description: 'The platforms it is ready for, in the order of readiness.platforms' }),
  },
  { description: "The API description's readiness when it was uploaded" },
);

export const CopilotSummary = Type.Object(
  {
    id: Type.String({ format: 'uuid' }),
    swagger_url: Type.String({ description: "The copilot's swagger_url, as in the copilot" }),
    swagger_file_name: Type.Union([Type.String(), Type.Null()], {
      description:
        'The file name the stored document was uploaded under (sanitised: no path, no control characters, at most 255 characters); null for a URL, a raw body or a document stored before it was kept',
    }),
    uploaded_at: Type.Union([Type.String(), Type.Null()], { description: 'When the stored document was uploaded; null for a URL' }),
    readiness: Type.Union([ReadinessSummary, Type.Null()], {
      description: 'null when not known without validating: a URL (fetched when validated), or a document stored before readiness was kept',
    }),
  },
  { title: 'CopilotSummary', description: "A copilot's API description at a glance, keys in this order" },
);
export type CopilotSummary = Static<typeof CopilotSummary>;

/** Parses `ids` (comma-separated copilot ids): 400 for a malformed one or too many. */
export function parseSummaryIds(raw: string): string[] {
  const ids = [
    ...new Set(
      raw
        .split(',')
        .map((s) => s.trim().toLowerCase())
        .filter(Boolean),
    ),
  ];
  if (ids.length === 0) throw new AppError('invalid_request', 'Name at least one copilot id in ids (comma-separated).', { parameter: 'ids' });
  if (ids.length > MAX_SUMMARY_IDS) {
    throw new AppError('invalid_request', `Ask for at most ${MAX_SUMMARY_IDS} copilots at once.`, { parameter: 'ids', max: MAX_SUMMARY_IDS });
  }
  const bad = ids.find((id) => !isCopilotId(id));
  if (bad !== undefined) throw new AppError('invalid_request', 'Every id in ids must be a copilot id (a UUID).', { parameter: 'ids', id: bad.slice(0, 100) });
  return ids;
}

function readyPlatforms(stored: string | null): string[] {
  try {
    const parsed: unknown = JSON.parse(stored ?? '[]');
    return Array.isArray(parsed) ? PLATFORM_IDS.filter((p) => parsed.includes(p)) : [];
  } catch {
    return [];
  }
}

/**
 * The summaries of the named copilots that exist, are not deleted and are visible to the
 * caller (`onlyIds`: a key limited to some bots), in the order asked; others are left out.
 */
export async function copilotSummaries(db: Db, ids: readonly string[], onlyIds?: readonly string[]): Promise<CopilotSummary[]> {
  const allowed = onlyIds ? ids.filter((id) => onlyIds.includes(id)) : ids;
  const rows = new Map((await findDocumentSummaries(db, allowed)).map((row) => [row.id, row]));
  const out: CopilotSummary[] = [];
  for (const id of allowed) {
    const row = rows.get(id);
    if (!row) continue;
    const stored = row.uploaded_at !== null;
    const platforms = readyPlatforms(row.ready_platforms);
    out.push({
      id: row.id,
      swagger_url: row.swagger_url,
      swagger_file_name: stored ? row.original_name : null,
      uploaded_at: row.uploaded_at,
      readiness:
        stored && row.readiness_score !== null
          ? { score: Number(row.readiness_score), ready: platforms.length === PLATFORM_IDS.length, ready_platforms: platforms }
          : null,
    });
  }
  return out;
}

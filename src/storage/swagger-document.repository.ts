import type { Db, SwaggerDocumentRow } from './schema.js';

export async function insertSwaggerDocument(db: Db, row: SwaggerDocumentRow): Promise<void> {
  await db.insertInto('swagger_documents').values(row).execute();
}

export async function findSwaggerDocument(db: Db, fileName: string): Promise<SwaggerDocumentRow | undefined> {
  return db.selectFrom('swagger_documents').selectAll().where('file_name', '=', fileName).executeTakeFirst();
}

/** Documents of a copilot other than `keep` (replaced uploads) are removed. */
export async function deleteOtherSwaggerDocuments(db: Db, copilotId: string, keep: string): Promise<void> {
  await db.deleteFrom('swagger_documents').where('copilot_id', '=', copilotId).where('file_name', '!=', keep).execute();
}

/** Everything but the content: enough to answer a validation from the cache. */
export async function findSwaggerDocumentMeta(
  db: Db,
  fileName: string,
): Promise<Pick<SwaggerDocumentRow, 'file_name' | 'copilot_id' | 'media_type' | 'sha256' | 'size' | 'created_at'> | undefined> {
  return db
    .selectFrom('swagger_documents')
    .select(['file_name', 'copilot_id', 'media_type', 'sha256', 'size', 'created_at'])
    .where('file_name', '=', fileName)
    .executeTakeFirst();
}

/** Every document of a copilot (its purge); returns how many. */
export async function deleteSwaggerDocuments(db: Db, copilotId: string): Promise<number> {
  const result = await db.deleteFrom('swagger_documents').where('copilot_id', '=', copilotId).executeTakeFirst();
  return Number(result.numDeletedRows);
}

export interface DocumentSummaryRow {
  id: string;
  swagger_url: string;
  original_name: string | null;
  readiness_score: number | null;
  ready_platforms: string | null;
  uploaded_at: string | null;
}

/**
 * For each listed copilot that is not deleted: its swagger_url and, when that names its own
 * stored document, the document's original name and readiness at upload. One indexed read
 * (copilots by id, documents by file name): nothing is parsed or validated.
 */
export async function findDocumentSummaries(db: Db, ids: readonly string[]): Promise<DocumentSummaryRow[]> {
  if (ids.length === 0) return [];
  return db
    .selectFrom('copilots as c')
    .leftJoin('swagger_documents as d', (join) => join.onRef('d.file_name', '=', 'c.swagger_url').onRef('d.copilot_id', '=', 'c.id'))
    .select([
      'c.id as id',
      'c.swagger_url as swagger_url',
      'd.original_name as original_name',
      'd.readiness_score as readiness_score',
      'd.ready_platforms as ready_platforms',
      'd.created_at as uploaded_at',
    ])
    .where('c.id', 'in', [...ids])
    .where('c.deleted_at', 'is', null)
    .execute();
}

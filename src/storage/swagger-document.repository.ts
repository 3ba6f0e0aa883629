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
export async function findSwaggerDocumentMeta(db: Db, fileName: string): Promise<Omit<SwaggerDocumentRow, 'content'> | undefined> {
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

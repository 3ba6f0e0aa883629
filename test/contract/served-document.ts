import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { buildTestApp } from '../support/app.js';

export type Json = Record<string, any>;

/** The document `GET /backend/openapi.json` answers, from an app built for the purpose (the document does not depend on the database). */
export async function servedDocument(): Promise<Json> {
  const t = await buildTestApp('sqlite');
  try {
    const res = await t.app.inject({ method: 'GET', url: '/backend/openapi.json' });
    if (res.statusCode !== 200) throw new Error(`GET /backend/openapi.json answered ${res.statusCode}: ${res.body}`);
    return res.json();
  } finally {
    await t.close();
  }
}

/** A new temporary directory holding `openapi.json`. */
export function writeToTemp(doc: Json): { dir: string; file: string } {
  const dir = mkdtempSync(path.join(tmpdir(), 'cms-contract-'));
  const file = path.join(dir, 'openapi.json');
  writeFileSync(file, JSON.stringify(doc, null, 2));
  return { dir, file };
}

/** Every operation of the document: method (lower case), path and the operation object. */
export function operations(doc: Json): Array<{ method: string; path: string; operation: Json }> {
  const out: Array<{ method: string; path: string; operation: Json }> = [];
  for (const [p, item] of Object.entries(doc.paths as Json)) {
    for (const method of ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace']) {
      if (item[method]) out.push({ method, path: p, operation: item[method] });
    }
  }
  return out;
}

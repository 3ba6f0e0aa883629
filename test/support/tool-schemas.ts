/**
 * The JSON Schema checker for generated tool definitions, one for the tests and the bench's
 * corpus run (bench/conformance.ts --tools): Ajv (JSON Schema 2020-12), strict about keywords so
 * that a keyword no schema vocabulary knows is refused, lenient about the rest. Gemini's schema is
 * OpenAPI 3.0's, whose `example` is an annotation (Ajv knows `nullable`). No test framework here:
 * the bench imports it too.
 */
import Ajv2020 from 'ajv/dist/2020.js';
import type { ToolPlatform } from '../../src/domain/validator/tools.js';

export function toolSchemaAjv(platform: ToolPlatform) {
  const ajv = new Ajv2020.default({ strict: true, strictTypes: false, strictTuples: false, strictRequired: false, validateFormats: false });
  if (platform === 'gemini') ajv.addKeyword('example');
  return ajv;
}

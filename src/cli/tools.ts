import { readFileSync } from 'node:fs';
import { basename } from 'node:path';
import { isAppError } from '../errors.js';
import { writeYaml, type DocumentFormat } from '../domain/validator/index.js';
import { parseDocumentWithFormat } from '../domain/validator/parse.js';
import { fixesOverlay, applyOverlay } from '../domain/validator/overlay.js';
import { TOOL_PLATFORM_IDS, toolDefinitions, type ToolPlatform } from '../domain/validator/tools.js';
import type { CliIo } from './validate.js';

/**
 * `copilot-service tools FILE --platform …` and `copilot-service fix FILE [--apply] [--format …]`
 * (issue 18 B): the tool definitions as indented JSON, and the fixes as an OpenAPI Overlay (or
 * the document with them applied) in the description's own format unless `--format` says, on
 * stdout. Exit code 0, or 2 when the file cannot be read or is not an API description. Imports
 * only the validator.
 */

export const EXIT_OK = 0;
export const EXIT_UNREADABLE = 2;

export function isToolPlatform(value: string): value is ToolPlatform {
  return (TOOL_PLATFORM_IDS as readonly string[]).includes(value);
}

/** The parsed document of a local file and its format (no nesting scan first: the user's own file, as `validate` reads it). */
function readDocument(file: string): { doc: unknown; format: DocumentFormat } {
  return parseDocumentWithFormat({ bytes: readFileSync(file), fileName: basename(file) }, { scanNestingFirst: false });
}

/** Runs `work` on the file's document and prints its result: as YAML when `format` (given the document's own) says so, else as indented JSON. */
function run(file: string, io: CliIo, work: (doc: unknown) => unknown, format: (own: DocumentFormat) => DocumentFormat = () => 'json'): number {
  let out: unknown;
  let as: DocumentFormat;
  try {
    const read = readDocument(file);
    as = format(read.format);
    out = work(read.doc);
  } catch (err) {
    const reason = isAppError(err) ? err.message : err instanceof Error && 'code' in err ? `cannot be read (${String(err.code)})` : String(err);
    io.stderr(`${file}: ${reason}\n`);
    return EXIT_UNREADABLE;
  }
  io.stdout(as === 'yaml' ? writeYaml(out) : `${JSON.stringify(out, null, 2)}\n`);
  return EXIT_OK;
}

export function runTools(file: string, opts: { platform: ToolPlatform }, io: CliIo): number {
  return run(file, io, (doc) => ({ platform: opts.platform, tools: toolDefinitions(doc, opts.platform) }));
}

/** `format`: JSON or YAML; by default the description's own, so that a fixed YAML file can replace the original. */
export function runFix(file: string, opts: { apply?: boolean; format?: DocumentFormat }, io: CliIo): number {
  return run(
    file,
    io,
    (doc) => {
      const overlay = fixesOverlay(doc);
      return opts.apply ? applyOverlay(doc, overlay) : overlay;
    },
    (own) => opts.format ?? own,
  );
}

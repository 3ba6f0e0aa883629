import { readFileSync } from 'node:fs';
import { basename } from 'node:path';
import { isAppError } from '../errors.js';
import { parseDocument } from '../domain/validator/index.js';
import { fixesOverlay, applyOverlay } from '../domain/validator/overlay.js';
import { TOOL_PLATFORM_IDS, toolDefinitions, type ToolPlatform } from '../domain/validator/tools.js';
import type { CliIo } from './validate.js';

/**
 * `copilot-service tools FILE --platform …` and `copilot-service fix FILE [--apply]`
 * (issue 18 B): the tool definitions, and the fixes as an OpenAPI Overlay (or the document
 * with them applied), as indented JSON on stdout. Exit code 0, or 2 when the file cannot be
 * read or is not an API description. Imports only the validator.
 */

export const EXIT_OK = 0;
export const EXIT_UNREADABLE = 2;

export function isToolPlatform(value: string): value is ToolPlatform {
  return (TOOL_PLATFORM_IDS as readonly string[]).includes(value);
}

/** The parsed document of a local file (no nesting scan first: the user's own file, as `validate` reads it). */
function readDocument(file: string): unknown {
  return parseDocument({ bytes: readFileSync(file), fileName: basename(file) }, { scanNestingFirst: false });
}

function run(file: string, io: CliIo, work: (doc: unknown) => unknown): number {
  let out: unknown;
  try {
    out = work(readDocument(file));
  } catch (err) {
    const reason = isAppError(err) ? err.message : err instanceof Error && 'code' in err ? `cannot be read (${String(err.code)})` : String(err);
    io.stderr(`${file}: ${reason}\n`);
    return EXIT_UNREADABLE;
  }
  io.stdout(`${JSON.stringify(out, null, 2)}\n`);
  return EXIT_OK;
}

export function runTools(file: string, opts: { platform: ToolPlatform }, io: CliIo): number {
  return run(file, io, (doc) => ({ platform: opts.platform, tools: toolDefinitions(doc, opts.platform) }));
}

export function runFix(file: string, opts: { apply?: boolean }, io: CliIo): number {
  return run(file, io, (doc) => {
    const overlay = fixesOverlay(doc);
    return opts.apply ? applyOverlay(doc, overlay) : overlay;
  });
}

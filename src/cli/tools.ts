import { writeYaml, type DocumentFormat } from '../domain/validator/index.js';
import { parseDocumentWithFormat } from '../domain/validator/parse.js';
import { fixesOverlay, applyOverlay } from '../domain/validator/overlay.js';
import { TOOL_PLATFORM_IDS, toolDefinitions, type ToolPlatform } from '../domain/validator/tools.js';
import { printable } from './formats.js';
import { CliFailure, expandInputs, readInput, withoutCredentials, type ReadOptions } from './inputs.js';
import { describeFailure, type CliIo } from './validate.js';

/**
 * `copilot-service tools INPUT --platform …` and `copilot-service fix INPUT [--apply] [--format …]`
 * (issue 18 B): the tool definitions as indented JSON, and the fixes as an OpenAPI Overlay (or
 * the document with them applied) in the description's own format unless `--format` says, on
 * stdout. The input is read as `validate` reads one (inputs.ts): a file, a glob of one file, a
 * URL or `-`. Exit code 0, or 2 when it cannot be read or is not an API description.
 */

export const EXIT_OK = 0;
export const EXIT_UNREADABLE = 2;

export function isToolPlatform(value: string): value is ToolPlatform {
  return (TOOL_PLATFORM_IDS as readonly string[]).includes(value);
}

/** The parsed document of the one input `target` names, and its format (a nesting scan first for what a server sent, as `validate` reads it). */
async function readDocument(target: string, opts: ReadOptions): Promise<{ doc: unknown; format: DocumentFormat }> {
  const inputs = await expandInputs([target]);
  if (inputs.length !== 1) throw new CliFailure(`${printable(target)} matches ${inputs.length} files: give one.`);
  const input = inputs[0]!;
  return parseDocumentWithFormat(await readInput(input, opts), { scanNestingFirst: input.kind === 'url' });
}

/** Runs `work` on the input's document and prints its result: as YAML when `format` (given the document's own) says so, else as indented JSON. */
async function run(
  target: string,
  opts: ReadOptions,
  io: CliIo,
  work: (doc: unknown) => unknown,
  format: (own: DocumentFormat) => DocumentFormat = () => 'json',
): Promise<number> {
  let out: unknown;
  let as: DocumentFormat;
  try {
    const read = await readDocument(target, opts);
    as = format(read.format);
    out = work(read.doc);
  } catch (err) {
    io.stderr(`${describeFailure(withoutCredentials(target), err)}\n`);
    return EXIT_UNREADABLE;
  }
  io.stdout(as === 'yaml' ? writeYaml(out) : `${JSON.stringify(out, null, 2)}\n`);
  return EXIT_OK;
}

export function runTools(target: string, opts: { platform: ToolPlatform } & ReadOptions, io: CliIo): Promise<number> {
  return run(target, opts, io, (doc) => ({ platform: opts.platform, tools: toolDefinitions(doc, opts.platform) }));
}

/** `format`: JSON or YAML; by default the description's own, so that a fixed YAML file can replace the original. */
export function runFix(target: string, opts: { apply?: boolean; format?: DocumentFormat } & ReadOptions, io: CliIo): Promise<number> {
  return run(
    target,
    opts,
    io,
    (doc) => {
      const overlay = fixesOverlay(doc);
      return opts.apply ? applyOverlay(doc, overlay) : overlay;
    },
    (own) => opts.format ?? own,
  );
}

import { constants } from 'node:buffer';
import { fstatSync, readFileSync, realpathSync, statSync } from 'node:fs';
import { basename, isAbsolute } from 'node:path';
import type { DocumentSource } from '../domain/validator/index.js';
import type { FetchPolicy } from '../net/guarded-fetch.js';
import { printable } from './formats.js';

/**
 * What `copilot-service validate` reads: files (a glob expands to the files it matches), `-`
 * for standard input, and http(s) URLs. The user runs the command on their own machine, so a
 * URL may name localhost or a private address unless `--deny-private` asks for the
 * service's address guard; a local file or standard input has no size cap unless `--max-bytes`
 * sets one, but for the largest text Node can hold (about 512 MiB), which no document can pass.
 */

export type Input = { kind: 'file'; target: string } | { kind: 'stdin'; target: '-' } | { kind: 'url'; target: string };

/**
 * `s` with the user and password of every http(s) URL in it left out (the userinfo ends at the
 * authority's last `@`, as URL parsers read it): the fetch refuses such a URL, and the message
 * that says so, the SARIF uploaded to code scanning or a CI log that others read must not show them.
 */
export function withoutCredentials(s: string): string {
  return s.replace(/\b(https?:\/\/)[^/\\?#\s]*@/gi, '$1');
}

/** How an input is named in every report and message: as given, a URL without its credentials. */
export const labelOf = (input: Input): string => (input.kind === 'url' ? withoutCredentials(input.target) : input.target);

export interface ReadOptions {
  /** Largest document accepted; undefined: no cap for a file or stdin, the configuration's MAX_DOCUMENT_BYTES for a URL. */
  maxBytes?: number;
  /** Apply the service's address guard (global unicast only, plus FETCH_ALLOW_NETWORKS) to URLs. */
  denyPrivate?: boolean;
  /** A fetch policy that replaces the one built from the configuration (tests). */
  fetchPolicy?: FetchPolicy;
  /** Standard input (tests pass their own). */
  stdin?: NodeJS.ReadableStream;
}

/** A failure to read one input, in one sentence for a person (exit code 2). */
export class CliFailure extends Error {}

/** The most bytes a document can have: its text must fit in one string (V8's limit, in UTF-16 units: never more than its UTF-8 bytes). */
export const MAX_READABLE_BYTES = constants.MAX_STRING_LENGTH;

const isUrl = (s: string) => /^https?:\/\//i.test(s);
const GLOB_CHARS = /[*?[\]{}]/;

/**
 * The inputs the arguments name, in order, duplicates dropped (`-` too: standard input is
 * read once; a file however it is spelled: `a.yaml`, `./a.yaml`, its absolute path, a link to it). An argument that names an existing path, or has no glob character, is taken as
 * written (a missing file is then reported when read); otherwise it is a glob, expanded
 * (sorted) by tinyglobby, loaded only then, its files named as the pattern was (absolute or
 * relative). A glob that matches nothing is a failure, and so is an empty argument.
 */
export async function expandInputs(args: readonly string[]): Promise<Input[]> {
  const out: Input[] = [];
  const seen = new Set<string>();
  const add = (input: Input) => {
    const key = input.kind === 'file' ? sameFile(input.target) : input.target;
    if (!seen.has(key)) out.push(input);
    seen.add(key);
  };
  for (const arg of args) {
    if (arg === '') throw new CliFailure('An input is an empty name: give a file, a glob, a URL or -.');
    if (arg === '-') add({ kind: 'stdin', target: '-' });
    else if (isUrl(arg)) add({ kind: 'url', target: arg });
    else if (!GLOB_CHARS.test(arg) || statSync(arg, { throwIfNoEntry: false }) !== undefined) add({ kind: 'file', target: arg });
    else {
      const { glob } = await import('tinyglobby');
      const files = (await glob(arg, { onlyFiles: true, expandDirectories: false, dot: false, absolute: isAbsolute(arg) })).sort();
      if (files.length === 0) throw new CliFailure(`${printable(arg)}: no file matches this pattern.`);
      for (const file of files) add({ kind: 'file', target: file });
    }
  }
  return out;
}

/** What names a file whatever its spelling: its real path, or the name as given when it cannot be read (it is reported when read). */
function sameFile(name: string): string {
  try {
    return `file:${realpathSync(name)}`;
  } catch {
    return name;
  }
}

export async function readInput(input: Input, opts: ReadOptions): Promise<DocumentSource> {
  if (input.kind === 'url') return fetchSource(input.target, opts);
  if (input.kind === 'stdin') {
    if (opts.stdin === undefined && stdinIsDirectory()) throw new CliFailure('Standard input is a directory, not a document.');
    return { bytes: await readStream(opts.stdin ?? process.stdin, opts.maxBytes) };
  }
  return readFile(input.target, opts.maxBytes);
}

/**
 * Reads the file in one synchronous call: a one-shot command has nothing else to do
 * meanwhile, and the promise API reads a large file in many small thread-pool rounds.
 */
function readFile(file: string, maxBytes: number | undefined): DocumentSource {
  const info = statSync(file);
  if (!info.isFile()) throw new CliFailure(`${printable(file)} is not a file.`);
  if (maxBytes !== undefined && info.size > maxBytes) throw new CliFailure(`${printable(file)} is larger than ${maxBytes} bytes (--max-bytes).`);
  if (info.size > MAX_READABLE_BYTES) throw new CliFailure(tooLarge(printable(file)));
  return { bytes: readFileSync(file), fileName: basename(file) };
}

/** `< some-directory`: reading it would end at once, as if the document were empty. */
function stdinIsDirectory(): boolean {
  try {
    return fstatSync(0).isDirectory();
  } catch {
    return false;
  }
}

const tooLarge = (what: string) => `${what} is larger than ${MAX_READABLE_BYTES} bytes, the most text Node can hold: no document can be that large.`;

/** Reads the stream to its end, or fails as soon as it passes `maxBytes` (or what any document can be): an endless input ends. */
async function readStream(stream: NodeJS.ReadableStream, maxBytes: number | undefined): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of stream) {
    const buffer = typeof chunk === 'string' ? Buffer.from(chunk) : (chunk as Buffer);
    size += buffer.length;
    if (maxBytes !== undefined && size > maxBytes) throw new CliFailure(`Standard input is larger than ${maxBytes} bytes (--max-bytes).`);
    if (size > MAX_READABLE_BYTES) throw new CliFailure(tooLarge('Standard input'));
    chunks.push(buffer);
  }
  return Buffer.concat(chunks, size);
}

async function fetchSource(url: string, opts: ReadOptions): Promise<DocumentSource> {
  // Loaded only for a URL, so validating a file starts without the HTTP client.
  const { fetchGuarded, fetchPolicyOf } = await import('../net/guarded-fetch.js');
  let policy = opts.fetchPolicy;
  if (policy === undefined) {
    // The fetch settings alone: the rest of the configuration (a database, a port) is the server's, not the user's.
    const { loadFetchSettings } = await import('../config.js');
    policy = fetchPolicyOf(loadFetchSettings());
    // The guard protects a server from its users; on the user's own machine every address is theirs.
    if (!opts.denyPrivate) policy.allowNetworks = ['0.0.0.0/0', '::/0'];
  }
  if (opts.maxBytes !== undefined) policy = { ...policy, maxBytes: opts.maxBytes };
  const fetched = await fetchGuarded(url, policy, { accept: 'application/json, application/yaml;q=0.9, */*;q=0.5' });
  if (fetched.status < 200 || fetched.status > 299) throw new CliFailure(`${printable(withoutCredentials(url))} answered HTTP ${fetched.status}.`);
  return { bytes: fetched.body, mediaType: fetched.contentType, fileName: new URL(fetched.url).pathname };
}

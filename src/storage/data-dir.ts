import { lstatSync, mkdirSync, readlinkSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/** The data directory cannot be used; the message names the path, the user and why. */
export class DataDirError extends Error {
  constructor(dir: string, why: string) {
    super(`DATA_DIR ${dir} cannot be used by user ${currentUser()}: ${why}.`);
    this.name = 'DataDirError';
  }
}

function currentUser(): string {
  try {
    return os.userInfo().username;
  } catch {
    return `uid ${process.getuid?.() ?? '?'}`;
  }
}

const REASONS: Record<string, string> = {
  EACCES: 'permission denied',
  EPERM: 'permission denied',
  EROFS: 'the file system is read-only',
  ENOSPC: 'the disk is full',
  ENOTDIR: 'a part of the path is a file, not a directory',
  ENOENT: 'a part of the path does not exist and cannot be created',
  EEXIST: 'it is a file, not a directory',
};

/** A reason for a file-system error code, for the operator. */
export function describeFsError(err: unknown): string {
  const code = (err as { code?: string }).code ?? '';
  return REASONS[code] ?? ((err as Error).message || String(err));
}

/**
 * Creates the data directory (and its parents) readable by its owner only, or explains why
 * it cannot: the path is a file, a parent is a file, the file system is read-only, …
 */
export function prepareDataDir(dir: string): void {
  try {
    makeDirectories(dir);
  } catch (err) {
    if (err instanceof DataDirError) throw err;
    throw new DataDirError(dir, describeFsError(err));
  }
  if (!statSync(dir).isDirectory()) throw new DataDirError(dir, 'it is a file, not a directory');
}

/**
 * `mkdir -p`, a directory at a time from the nearest one that exists. Node's recursive
 * mkdir loops for ever where a directory cannot be made in a parent that exists (under /proc:
 * ENOENT, then EEXIST for the parent, then again), so the service never started and said nothing.
 * A symbolic link to nothing on the way is named as such (mkdir would say only that it exists).
 */
function makeDirectories(dir: string): void {
  const missing: string[] = [];
  for (let at = path.resolve(dir); statSync(at, { throwIfNoEntry: false }) === undefined; at = path.dirname(at)) {
    missing.unshift(at);
    if (path.dirname(at) === at) break;
  }
  const dangling = missing.find((at) => lstatSync(at, { throwIfNoEntry: false })?.isSymbolicLink());
  if (dangling !== undefined) throw new DataDirError(dir, `${dangling} is a symbolic link to ${readlinkSync(dangling)}, which does not exist`);
  for (const directory of missing) mkdirSync(directory, { mode: 0o700 });
}

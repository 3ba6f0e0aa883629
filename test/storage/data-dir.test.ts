/**
 * DATA_DIR problems are said in one line naming the path, the user and why (issue 14 §5):
 * the one place that makes the directory, prepareDataDir, explains each way it cannot.
 */
import { existsSync, mkdtempSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { DataDirError, prepareDataDir } from '../../src/storage/data-dir.js';

const root = mkdtempSync(path.join(tmpdir(), 'cms-data-dir-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const failure = (dir: string): DataDirError => {
  try {
    prepareDataDir(dir);
  } catch (err) {
    if (err instanceof DataDirError) return err;
    throw err;
  }
  throw new Error(`${dir} was prepared`);
};

describe('prepareDataDir', () => {
  it('makes the directory and its parents, readable by its owner only', () => {
    const dir = path.join(root, 'a', 'b');
    prepareDataDir(dir);
    expect(statSync(dir).isDirectory()).toBe(true);
    expect(statSync(dir).mode & 0o777).toBe(0o700);
  });

  it('names a file where the directory should be', () => {
    const file = path.join(root, 'file');
    writeFileSync(file, '');
    expect(failure(file).message).toMatch(new RegExp(`^DATA_DIR ${file} cannot be used by user .+: it is a file, not a directory\\.$`));
  });

  it('names a symbolic link to nothing as such, with its target (operator sweep: it was called a file)', () => {
    const target = path.join(root, 'gone');
    for (const link of [path.join(root, 'dangling'), path.join(root, 'dangling-parent')]) symlinkSync(target, link);
    expect(failure(path.join(root, 'dangling')).message).toContain(`${path.join(root, 'dangling')} is a symbolic link to ${target}, which does not exist`);
    // A link to nothing above the directory is named too.
    expect(failure(path.join(root, 'dangling-parent', 'data')).message).toContain(
      `${path.join(root, 'dangling-parent')} is a symbolic link to ${target}, which does not exist`,
    );
    expect(existsSync(target)).toBe(false);
  });
});

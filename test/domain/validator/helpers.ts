import { readFileSync } from 'node:fs';
import { basename } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'vitest';
import { isAppError, type AppError } from '../../../src/errors.js';
import type { DocumentSource } from '../../../src/domain/validator/index.js';

export const FIXTURES = fileURLToPath(new URL('../../fixtures/', import.meta.url));

/** A fixture file as the validator receives it: bytes plus the file name. */
export function fixture(relativePath: string): DocumentSource {
  const path = FIXTURES + relativePath;
  return { bytes: readFileSync(path), fileName: basename(path) };
}

export function source(text: string, fileName: string): DocumentSource {
  return { bytes: Buffer.from(text), fileName };
}

/** Runs `work`, expects it to throw an AppError with `code`, returns it. */
export async function expectAppErrorAsync(work: Promise<unknown>, code = 'invalid_swagger_file'): Promise<AppError> {
  const thrown = await work.then(
    () => undefined,
    (err: unknown) => err,
  );
  return expectAppError(() => {
    if (thrown !== undefined) throw thrown;
  }, code);
}

export function expectAppError(work: () => unknown, code = 'invalid_swagger_file'): AppError {
  let thrown: unknown;
  try {
    work();
  } catch (err) {
    thrown = err;
  }
  expect(thrown, 'expected an AppError').toSatisfy(isAppError);
  const error = thrown as AppError;
  expect(error.code).toBe(code);
  return error;
}

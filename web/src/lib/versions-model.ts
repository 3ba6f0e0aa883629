/**
 * The versions and changes of a copilot's API description (GET …/swagger/versions,
 * …/swagger/changes; issue 16 §3): the server's wire types (type-only) and the pure helpers
 * the versions screen uses.
 */
import type { ApiDescriptionChange, ApiDescriptionSync, ApiDescriptionVersion } from '../../../src/domain/wire.js';

export type { ApiDescriptionChange, ApiDescriptionSync, ApiDescriptionVersion };

export interface ChangeGroup {
  version: number;
  breaking: ApiDescriptionChange[];
  other: ApiDescriptionChange[];
}

/**
 * The changes by version, newest version first (the API's order), each version's breaking
 * changes before the others (each kind in the API's order). Pages of the API may split a
 * version: its changes are merged into one group.
 */
export function groupChanges(changes: readonly ApiDescriptionChange[]): ChangeGroup[] {
  const groups = new Map<number, ChangeGroup>();
  for (const change of changes) {
    let group = groups.get(change.version);
    if (!group) {
      group = { version: change.version, breaking: [], other: [] };
      groups.set(change.version, group);
    }
    (change.breaking ? group.breaking : group.other).push(change);
  }
  return [...groups.values()].sort((a, b) => b.version - a.version);
}

const sizeFormat = new Intl.NumberFormat('en', { maximumFractionDigits: 1 });

/** 1536 → "1.5 KB" (powers of 1024, as file browsers show them). */
export function formatBytes(bytes: number): string {
  if (!Number.isFinite(bytes) || bytes < 0) return '—';
  if (bytes < 1024) return `${bytes} B`;
  const units = ['KB', 'MB', 'GB'];
  let value = bytes / 1024;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return `${sizeFormat.format(value)} ${units[unit]}`;
}

/** The first 12 hex digits of a SHA-256, as git shows a commit. */
export function shortSha(sha256: string): string {
  return sha256.slice(0, 12);
}

/** A file name for a downloaded version: `api-description-v3.json` (or `.yaml`). */
export function versionFileName(version: number, mediaType: string): string {
  return `api-description-v${version}.${/yaml/i.test(mediaType) ? 'yaml' : 'json'}`;
}

/** Whether the copilot's swagger_url is one the service can sync from. */
export function isSyncableUrl(url: string | null | undefined): boolean {
  return typeof url === 'string' && /^https?:\/\//i.test(url);
}

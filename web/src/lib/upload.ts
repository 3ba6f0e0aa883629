/** The media type to upload an API description with, from its file name (and, failing that, its first bytes). */
export function descriptionMediaType(fileName: string, firstText = ''): 'application/json' | 'application/yaml' {
  const name = fileName.toLowerCase();
  if (name.endsWith('.json')) return 'application/json';
  if (name.endsWith('.yaml') || name.endsWith('.yml')) return 'application/yaml';
  // No telling extension: JSON documents open with "{"; everything else is read as YAML (a superset of JSON).
  return /^\s*\{/.test(firstText) ? 'application/json' : 'application/yaml';
}

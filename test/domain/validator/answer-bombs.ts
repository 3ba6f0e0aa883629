/**
 * Documents whose validator answer is hundreds of times their size (issue 13 §1), for the
 * tests and the benchmark's hostile-documents table. Pure functions: no test framework.
 */

const MiB = 1024 * 1024;

/**
 * YAML: one long string anchored once (`x-big: &b "AAAA…"`) and used as the description
 * of `operations` operations without operationId or summary, so that each endpoint is
 * also in two flag maps. 1 MiB and 150 operations answered 472 MB.
 */
export function yamlAliasBomb(opts: { bytes?: number; operations?: number } = {}): Buffer<ArrayBuffer> {
  const operations = opts.operations ?? 150;
  const head = 'openapi: 3.0.3\ninfo: {title: t, version: "1"}\n';
  let paths = 'paths:\n';
  for (let i = 0; i < operations; i++) paths += `  /op${i}:\n    get:\n      description: *b\n`;
  const room = (opts.bytes ?? MiB) - head.length - paths.length - 'x-big: &b ""\n'.length;
  return Buffer.from(`${head}x-big: &b "${'A'.repeat(Math.max(1, room))}"\n${paths}`);
}

/**
 * JSON without aliases: a path-level parameter with a long description under a path with
 * all 8 methods (none with operationId, description or summary): the parameter is merged
 * into every method and each endpoint is in three flag maps. 12 MB answered 400 MB.
 */
export function jsonPathParameterBomb(opts: { bytes?: number } = {}): Buffer<ArrayBuffer> {
  const methods = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'].map((m) => `"${m}":{}`).join(',');
  const open = '{"openapi":"3.0.3","info":{"title":"t","version":"1"},"paths":{"/a":{"parameters":[{"name":"p","in":"query","description":"';
  const close = `"}],${methods}}}}`;
  const room = (opts.bytes ?? 12 * 1000 * 1000) - open.length - close.length;
  return Buffer.from(`${open}${'A'.repeat(Math.max(1, room))}${close}`);
}

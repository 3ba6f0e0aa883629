// Part of `npm run build:web` (run from the package's root, after Vite): writes a brotli and a
// gzip copy beside each of the dashboard's scripts and styles in web/dist/assets, which the
// service sends to a browser that takes them (@fastify/static's preCompressed,
// src/http/routes/dashboard.ts). Compressed once here, never per request.
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { brotliCompressSync, constants, gzipSync } from 'node:zlib';

const assets = path.resolve('web', 'dist', 'assets');
for (const file of readdirSync(assets)) {
  if (!/\.(js|css)$/.test(file)) continue;
  const body = readFileSync(path.join(assets, file));
  writeFileSync(path.join(assets, `${file}.gz`), gzipSync(body, { level: 9 }));
  writeFileSync(path.join(assets, `${file}.br`), brotliCompressSync(body, { params: { [constants.BROTLI_PARAM_QUALITY]: 11 } }));
}

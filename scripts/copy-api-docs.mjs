// Part of `npm run build` (run from the package's root): copies the files of Swagger UI that
// the API reference at /docs serves (src/http/routes/api-docs.ts) from swagger-ui-dist, a dev
// dependency, into dist/api-docs/, so that the package and the container carry them and
// install no renderer of their own. Its licence and notice go with it (Apache-2.0).
import { copyFileSync, mkdirSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';

const FILES = ['swagger-ui-bundle.js', 'swagger-ui.css', 'swagger-ui-bundle.js.LICENSE.txt', 'LICENSE', 'NOTICE'];

const from = path.dirname(createRequire(path.resolve('package.json')).resolve('swagger-ui-dist/package.json'));
const to = path.resolve('dist', 'api-docs');
rmSync(to, { recursive: true, force: true });
mkdirSync(to, { recursive: true });
for (const file of FILES) copyFileSync(path.join(from, file), path.join(to, file));

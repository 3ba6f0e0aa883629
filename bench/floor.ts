/**
 * The floor: a bare node process that reads the file, parses it and writes it back as
 * JSON — what any validator has to do at least. `node floor.js json|js-yaml|yaml FILE`.
 * Only the parser named is loaded.
 */
import { readFileSync } from 'node:fs';

const [parser, file] = process.argv.slice(2);
if (!file) throw new Error('usage: floor.js json|js-yaml|yaml FILE');
const text = readFileSync(file, 'utf8');
let doc: unknown;
if (parser === 'json') doc = JSON.parse(text);
else if (parser === 'js-yaml') doc = (await import('js-yaml')).load(text);
else if (parser === 'yaml') doc = (await import('yaml')).parse(text);
else throw new Error(`unknown parser ${parser}`);
process.stdout.write(JSON.stringify(doc));

// Bundles the command-line entry with the validator into one file, so that
// `copilot-service validate` loads one module instead of dozens (Node's ESM loader pays
// per module; issue 5 measures the command as a user runs it). Everything the other
// commands load lazily (server, storage, HTTP client) stays a separate module, imported
// from the tsc output beside it; other packages stay external, except commander.
import path from 'node:path';

const dist = path.resolve('dist');
// errors.js too: loading it from outside, an ES module, started Node's ES module loader in
// every command (about 2 ms). The bundle's AppError class and the modules' are then two
// classes, so isAppError reads a brand, not the class (src/errors.ts).
const bundled = [
  path.join(dist, 'errors.js'),
  path.join(dist, 'cli'),
  path.join(dist, 'domain', 'validator'),
  path.join(dist, 'text'),
  path.resolve('node_modules', 'commander'),
];

// Commander requires node:child_process when it loads, for subcommands that are executables
// of their own, which this CLI has none of; loading it (with net, dgram and their channels)
// took about 2.5 ms of every command's start, ad hoc, on a small document
// (bench/README.md, the CLI's start). Inside the bundle it is required on first use instead.
const EAGER = "const childProcess = require('node:child_process');";
const lazyChildProcess = {
  name: 'lazy-child-process',
  transform(code, id) {
    if (!id.endsWith(path.join('commander', 'lib', 'command.js'))) return null;
    // Loudly, should a new commander write it differently: the build fails rather than lose this.
    if (!code.includes(EAGER)) throw new Error(`commander no longer requires child_process as "${EAGER}": update rolldown.config.mjs`);
    return code.replace(EAGER, "const childProcess = new Proxy({}, { get: (_, key) => require('node:child_process')[key] });");
  },
};

export default {
  input: 'dist/cli/index.js',
  platform: 'node',
  plugins: [lazyChildProcess],
  external(id, importer) {
    if (id.startsWith('node:')) return true;
    if (id === 'commander') return false;
    if (!id.startsWith('.') && !path.isAbsolute(id)) return true; // other packages
    const resolved = importer && !path.isAbsolute(id) ? path.resolve(path.dirname(importer), id) : id;
    return !bundled.some((prefix) => resolved === prefix || resolved.startsWith(prefix + path.sep));
  },
  // An external module whose bindings the bundle does not use is not loaded for its side
  // effects: the validator's cache (lru-cache) is the server's, not the command's.
  treeshake: { moduleSideEffects: 'no-external' },
  // CommonJS, run by copilot-service.cjs from V8's code cache (src/cli/copilot-service.cts); an
  // `import()` in code compiled that way has no loader to call, so the modules the commands
  // load when they run (ES modules all) are required instead, as Node 20.19 and later allow.
  output: { file: 'dist/cli/copilot-service.bundle.cjs', format: 'cjs', codeSplitting: false, dynamicImportInCjs: false },
};

// Bundles the command-line entry with the validator into one file, so that
// `copilot-service validate` loads one module instead of ~25 (Node's ESM loader costs
// about a millisecond per module; issue 5 measures the command as a user runs it).
// Everything the other commands load lazily (server, storage, HTTP client) stays a
// separate module, imported from the tsc output beside it.
import path from 'node:path';

const dist = path.resolve('dist');
// errors.js stays shared with the unbundled modules: one AppError class for everyone.
const bundled = [path.join(dist, 'cli'), path.join(dist, 'domain', 'validator'), path.join(dist, 'domain', 'sized-lru.js'), path.resolve('node_modules', 'commander')];

// commander requires node:child_process when it loads, only to spawn executable
// subcommands, which this CLI has none of; loading it (with net, dgram, streams) is most
// of the CLI's start-up beyond node's own. The bundle gives commander a stand-in that
// loads the real module on first use.
const LAZY_CHILD_PROCESS = '\0lazy-child-process';
const isCommander = (importer) => importer?.startsWith(path.resolve('node_modules', 'commander') + path.sep) ?? false;
const lazyChildProcess = {
  name: 'lazy-child-process',
  resolveId(id, importer) {
    if (id === 'node:child_process' && isCommander(importer)) return LAZY_CHILD_PROCESS;
    return null;
  },
  load(id) {
    if (id !== LAZY_CHILD_PROCESS) return null;
    return "module.exports = { spawn: (...args) => require('node:child_process').spawn(...args) };";
  },
};

export default {
  input: 'dist/cli/index.js',
  platform: 'node',
  plugins: [lazyChildProcess],
  external(id, importer) {
    if (id === LAZY_CHILD_PROCESS || (id === 'node:child_process' && isCommander(importer))) return false;
    if (id.startsWith('node:')) return true;
    if (id === 'commander') return false;
    if (!id.startsWith('.') && !path.isAbsolute(id)) return true; // other packages
    const resolved = importer && !path.isAbsolute(id) ? path.resolve(path.dirname(importer), id) : id;
    return !bundled.some((prefix) => resolved === prefix || resolved.startsWith(prefix + path.sep));
  },
  output: { file: 'dist/cli/copilot-service.js', format: 'esm', codeSplitting: false },
};

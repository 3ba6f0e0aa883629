import { Command, CommanderError, InvalidArgumentError, Option } from 'commander';
import { AppError, isAppError } from '../errors.js';
import { stderr, stdout } from './output.js';
import { VERSION } from './version.js';

// Each command imports what it needs when it runs, so `validate` starts without
// loading the HTTP framework or the database drivers.

const EXIT_CODES =
  'Exit codes: 0 success (validate: no finding at or above --fail-on); 1 validate: findings at or above --fail-on; 2 anything that failed: a usage error, a bad value, an unknown id, an input or a database that cannot be read. serve: 0 once drained after SIGTERM or SIGINT, 1 when it cannot start or its drain outlasts SHUTDOWN_TIMEOUT_MS.';

/** A line of a command's result on standard output. */
const print = (line: string) => void stdout.write(`${line}\n`);

const program = new Command();
program
  .name('copilot-service')
  .description('Copilot Management Service: serve the API, manage the database and API keys, validate API descriptions.')
  .version(VERSION)
  .showHelpAfterError()
  // Before any command is added: subcommands inherit them. Commander's errors are thrown and
  // given their exit code at the end of this file (2 for a usage error). Its help, version and
  // errors go through output.ts, as every other line: a reader that stops early (`| head`) or a
  // full disk never ends the run with a stack trace.
  .exitOverride()
  .configureOutput({ writeOut: (text) => void stdout.write(text), writeErr: (text) => void stderr.write(text) })
  .addHelpText('after', `\n${EXIT_CODES}`);

/** Where the document commands write: their results to standard output (output.ts), their complaints to standard error. */
const documentIo: import('./validate.js').CliIo = { stdout: (data) => void stdout.write(data), stderr: (s: string) => void stderr.write(s) };

/**
 * Opens the configured database, brings its schema up to date (`applied`: the migrations run
 * now), runs `work`, closes it. `existing`: the database must be the service's already (the
 * admin commands): pointed elsewhere (a shell without the unit's DATABASE_URL, another
 * DATA_DIR), they made and migrated a new, empty one and printed a key no service knew.
 */
async function withStorage<T>(
  work: (storage: import('../storage/database.js').Storage, applied: string[]) => Promise<T>,
  { existing = true }: { existing?: boolean } = {},
): Promise<T> {
  const { loadConfig } = await import('../config.js');
  const { createServices } = await import('../services.js');
  const { migrateToLatest, hasSchema } = await import('../storage/migrate.js');
  const { SQLITE_FILE_NAME } = await import('../storage/database.js');
  const config = loadConfig();
  const { existsSync } = await import('node:fs');
  const { join } = await import('node:path');
  const file = join(config.dataDir, SQLITE_FILE_NAME);
  if (existing && config.databaseUrl === null && !existsSync(file)) {
    throw new AppError('invalid_request', `There is no SQLite database at ${file}: is DATA_DIR the service's? (A new one is made by serve or migrate.)`);
  }
  const services = createServices(config);
  try {
    if (existing && !(await hasSchema(services.storage))) {
      throw new AppError(
        'invalid_request',
        `${services.storage.name} holds no copilot-service schema: is DATABASE_URL the service's? (A new one is made by serve or migrate.)`,
      );
    }
    const applied = await migrateToLatest(services.storage);
    // What the command writes is timed by the database server's clock, as the service's writes are.
    const { followDatabaseClock } = await import('../jobs/database-clock.js');
    await followDatabaseClock(services.storage);
    return await work(services.storage, applied);
  } finally {
    await services.close();
  }
}

const list = (value: string): string[] =>
  value
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
/** A list option given several times holds them all (`--scopes a --scopes b`), as `validate --platform` does; Commander kept the last. */
const lists = (value: string, previous: string[] | undefined): string[] => [...(previous ?? []), ...list(value)];

program
  .command('serve')
  .description('Run the HTTP service (configuration from the environment and .env)')
  .action(async () => {
    const { serve, reportStartupError } = await import('../server.js');
    await serve().catch(reportStartupError);
  });

program
  .command('migrate')
  .description('Bring the database schema to the latest version and exit')
  .action(async () => {
    const applied = await withStorage(async (_storage, applied) => applied, { existing: false });
    print(applied.length > 0 ? `Applied: ${applied.join(', ')}` : 'The schema is up to date.');
  });

program
  .command('backup')
  .description('Copy the database to a new file while the service runs (SQLite: VACUUM INTO; PostgreSQL: pg_dump --format=custom); never migrates')
  .requiredOption('--out <file>', 'the file to write (mode 0600); an existing file is refused', (value: string) => {
    // "-" means standard output to every other command; a backup is a file (the copy is checked, then named).
    if (value === '-') throw new InvalidArgumentError('a file: a backup cannot go to standard output (write ./- for a file named "-")');
    return value;
  })
  .action(async (options: { out: string }) => {
    const { loadConfig } = await import('../config.js');
    const { backupPostgres, backupSqlite, BackupError } = await import('../storage/backup.js');
    const config = loadConfig();
    try {
      const result = config.databaseUrl ? await backupPostgres(config.databaseUrl, options.out) : await backupSqlite(config.dataDir, options.out);
      const what = config.databaseUrl ? 'the PostgreSQL database (pg_dump custom format)' : 'the SQLite database';
      print(`Backed up ${what} to ${result.file}: ${result.bytes} bytes, schema ${result.schema ?? 'empty'}`);
    } catch (err) {
      if (!(err instanceof BackupError)) throw err;
      stderr.write(`${err.message}\n`);
      process.exitCode = 2;
    }
  });

const keys = program.command('keys').description('Manage API keys');

keys
  .command('create')
  .description('Create an API key and print it alone on stdout (it is shown only once)')
  .requiredOption(
    '--scopes <list>',
    'comma-separated scopes (or the option repeated): copilots:read, copilots:write, knowledgebase:read, knowledgebase:write, knowledgebase:delete, admin',
    lists,
  )
  .option('--bots <ids>', 'comma-separated copilot ids the key is limited to (or the option repeated)', lists)
  .option('--name <label>', 'a label to recognise the key by', '')
  .action(async (options: { scopes: string[]; bots?: string[]; name: string }) => {
    const { checkKeyRequest, createApiKey, revokeApiKey } = await import('../domain/auth/api-keys.js');
    // The limits of POST /backend/api/keys (its body's schema), before the database is opened.
    checkKeyRequest(options);
    await withStorage(async (storage) => {
      const created = await createApiKey(storage.db, options);
      // The secret is shown once: a key whose secret no one could read is revoked at once.
      let shown = false;
      try {
        shown = stdout.write(`${created.key}\n`);
      } finally {
        if (!shown) {
          await revokeApiKey(storage.db, created.id);
          stderr.write(`The key ${created.id} was revoked: its secret could not be written to standard output.\n`);
          process.exitCode = 2;
        }
      }
    });
  });

keys
  .command('generate')
  .description("Print a new key in the service's format without storing it (a value for ADMIN_API_KEY)")
  .action(async () => {
    const { randomAlphanumeric } = await import('../domain/ids.js');
    print(`cms_${randomAlphanumeric(16)}_${randomAlphanumeric(32)}`);
  });

keys
  .command('list')
  .description('List API keys (never their secrets)')
  .option('--json', 'print JSON instead of a table')
  .action(async (options: { json?: boolean }) => {
    const { listApiKeys } = await import('../domain/auth/api-keys.js');
    const { printable } = await import('./formats.js');
    const all = await withStorage((storage) => listApiKeys(storage.db));
    if (options.json) {
      print(JSON.stringify(all, null, 2));
      return;
    }
    // A name is anyone's text: its control characters escaped, so it can neither forge a row nor drive the terminal.
    const rows = all.map((k) => [
      k.id,
      k.revoked_at ? 'revoked' : 'active',
      k.scopes.join(','),
      // Up to three bots, else two and a count: one key of a thousand bots widened every row (--json lists them all).
      k.bots ? (k.bots.length <= 3 ? k.bots.join(',') : `${k.bots.slice(0, 2).join(',')},+${k.bots.length - 2}`) : '*',
      printable(k.name),
      k.created_at,
    ]);
    const header = ['ID', 'STATE', 'SCOPES', 'BOTS', 'NAME', 'CREATED'];
    const widths = header.map((h, i) => rows.reduce((widest, r) => Math.max(widest, r[i]!.length), h.length));
    for (const row of [header, ...rows])
      print(
        row
          .map((c, i) => c.padEnd(widths[i]!))
          .join('  ')
          .trimEnd(),
      );
  });

keys
  .command('revoke')
  .description('Revoke an API key; it stops working at once')
  .argument('<id>', 'the key id (from keys list)')
  .action(async (id: string) => {
    const { revokeApiKey } = await import('../domain/auth/api-keys.js');
    await withStorage((storage) => revokeApiKey(storage.db, id));
    print(`Revoked ${id}`);
  });

const copilotCommands = program.command('copilots').description('Administer copilots');

/**
 * A purge hides the knowledge base's passages and leaves their deletion to the service's
 * housekeeping job (a batch per transaction); the CLI runs none, so it deletes them before it exits.
 */
async function deleteHiddenPassages(storage: import('../storage/database.js').Storage): Promise<void> {
  const { deleteRetiredPassages } = await import('../storage/knowledge-base.repository.js');
  await deleteRetiredPassages(storage.db, storage.dialect, { budget: Number.POSITIVE_INFINITY });
}

copilotCommands
  .command('purge')
  .description('Remove a deleted copilot for good, with its documents, knowledge base and passages')
  .argument('<id>', 'the id of a soft-deleted copilot')
  .action(async (id: string) => {
    const { purgeCopilot } = await import('../domain/copilots/copilot.service.js');
    const result = await withStorage(async (storage) => {
      const purged = await purgeCopilot(storage.db, storage.dialect, id);
      await deleteHiddenPassages(storage);
      return purged;
    });
    print(`Purged ${result.id}: ${result.documents} documents, ${result.links} links, ${result.passages} passages`);
  });

copilotCommands
  .command('purge-deleted')
  .description('Purge every copilot deleted more than the given number of days ago')
  .requiredOption('--older-than-days <days>', 'whole days since deletion (0: every deleted copilot)', (value: string) => {
    if (!/^\d{1,5}$/.test(value)) throw new InvalidArgumentError('a whole number of days, 0 to 99999');
    return Number(value);
  })
  .action(async (options: { olderThanDays: number }) => {
    const { purgeDeletedBefore } = await import('../domain/copilots/copilot.service.js');
    const { daysAgo } = await import('../domain/ids.js');
    const purged = await withStorage(async (storage) => {
      // 0: every deleted copilot, even one dated ahead by an instance whose clock runs fast.
      const ids = await purgeDeletedBefore(storage, options.olderThanDays === 0 ? null : daysAgo(options.olderThanDays));
      await deleteHiddenPassages(storage);
      return ids;
    });
    print(`Purged ${purged.length} deleted copilot${purged.length === 1 ? '' : 's'}`);
  });

/** The options of every command that reads API descriptions: how large one may be, and whether a URL may name a private address. */
const inputOptions = (command: Command): Command =>
  command
    .option(
      '--max-bytes <n>',
      'refuse a document larger than n bytes (default: no limit for files and stdin; MAX_DOCUMENT_BYTES for URLs)',
      (value: string) => {
        if (!/^[1-9]\d{0,15}$/.test(value)) throw new InvalidArgumentError('a positive whole number of bytes');
        return Number(value);
      },
    )
    .option('--deny-private', 'fetch URLs only from public addresses, as the server does (default: localhost and private addresses allowed)');

type InputFlags = { maxBytes?: number; denyPrivate?: boolean };
const readOptions = (flags: InputFlags) => ({ maxBytes: flags.maxBytes, denyPrivate: flags.denyPrivate === true });

inputOptions(
  program
    .command('tools')
    .description('Print the tool definitions an LLM would be given for an API description (JSON)')
    .argument('<input>', 'OpenAPI 3.x or Swagger 2.0 document, JSON or YAML: a file, a URL, or - for standard input')
    // Checked in the action, not by Commander, so that a misspelt option is named first (with a suggestion).
    .option('--platform <platform>', 'openai, anthropic, gemini or mcp (required)', (value: string) => {
      if (!['openai', 'anthropic', 'gemini', 'mcp'].includes(value)) throw new InvalidArgumentError('use openai, anthropic, gemini or mcp');
      return value as import('../domain/validator/tools.js').ToolPlatform;
    }),
).action(async (file: string, options: { platform?: import('../domain/validator/tools.js').ToolPlatform } & InputFlags, command: Command) => {
  if (options.platform === undefined) command.error("error: required option '--platform <platform>' not specified");
  const { runTools } = await import('./tools.js');
  process.exitCode = await runTools(file, { platform: options.platform, ...readOptions(options) }, documentIo);
});

inputOptions(
  program
    .command('fix')
    .description("Print the validator's computable fixes for an API description as an OpenAPI Overlay 1.0 (in the description's format: JSON or YAML)")
    .argument('<input>', 'OpenAPI 3.x or Swagger 2.0 document, JSON or YAML: a file, a URL, or - for standard input')
    .option('--apply', 'print the document with the fixes applied instead of the overlay (written anew: comments, anchors and layout are not kept)')
    .addOption(new Option('--format <format>', "json or yaml; default: the description's own").choices(['json', 'yaml'])),
).action(async (file: string, options: { apply?: boolean; format?: 'json' | 'yaml' } & InputFlags) => {
  const { runFix } = await import('./fix.js');
  process.exitCode = await runFix(file, { apply: options.apply, format: options.format, ...readOptions(options) }, documentIo);
});

inputOptions(
  program
    .command('validate')
    .description('Validate API descriptions (files, globs, http(s) URLs, - for standard input) as the validator endpoint does')
    .argument('<inputs...>', 'OpenAPI 3.x or Swagger 2.0 documents, JSON or YAML: files, globs (quote them), URLs, or -')
    .addOption(
      new Option(
        '--format <format>',
        "json: the endpoint's answer (JSON Lines with a file key for several inputs); text: file:line:col per finding and a summary; sarif: SARIF 2.1.0; junit: JUnit XML; github: workflow annotations",
      )
        .choices(['json', 'text', 'sarif', 'junit', 'github'])
        .default('json'),
    )
    .addOption(new Option('--fail-on <severity>', 'least finding severity that makes the exit code 1').choices(['error', 'warning', 'info']).default('error'))
    .option(
      '--platform <list>',
      'only findings for these platforms (comma-separated, or the option repeated: openai, gpt_actions, anthropic, gemini, mcp, copilot_studio)',
      (value: string, previous?: string[]) => [...(previous ?? []), ...list(value)],
    ),
)
  .addHelpText('after', '\nExit codes: 0 no finding at or above --fail-on, 1 findings at or above --fail-on, 2 usage error or an input that cannot be read.')
  .action(
    async (
      inputs: string[],
      options: { format: import('./formats.js').Format; failOn: 'error' | 'warning' | 'info'; platform?: string[] } & InputFlags,
      command: Command,
    ) => {
      const { runValidate, unknownPlatforms, PLATFORMS } = await import('./validate.js');
      const unknown = options.platform === undefined ? [] : unknownPlatforms(options.platform);
      if (unknown.length > 0 || options.platform?.length === 0)
        command.error(`error: --platform takes platform ids among ${PLATFORMS.join(', ')}${unknown.length > 0 ? ` (unknown: ${unknown.join(', ')})` : ''}`);
      process.exitCode = await runValidate(
        inputs,
        {
          format: options.format,
          failOn: options.failOn,
          platforms: options.platform as import('../domain/validator/index.js').Platform[] | undefined,
          ...readOptions(options),
        },
        documentIo,
      );
    },
  );

/**
 * The first word when it names no command (`serv --help`, `help nothing`): parsed alone, it gets
 * Commander's "unknown command" error and its suggestion, where `--help` after it would print
 * the main help and exit 0, and `help` would print it without a word.
 */
function unknownCommand(args: readonly string[]): string | undefined {
  const known = new Set(['help', ...program.commands.flatMap((c) => [c.name(), ...c.aliases()])]);
  const word = args[0] === 'help' ? args[1] : args[0];
  return word !== undefined && !word.startsWith('-') && !known.has(word) ? word : undefined;
}

// A bare `copilot-service` prints the help (serving is `copilot-service serve`). `done`: when
// the command has ended (scripts/build-cli-code-cache.mjs runs several in one process).
const unknown = unknownCommand(process.argv.slice(2));
export const done: Promise<unknown> = (
  process.argv.length <= 2
    ? Promise.resolve().then(() => program.outputHelp())
    : program.parseAsync(unknown === undefined ? process.argv : [...process.argv.slice(0, 2), unknown])
).catch(async (err: unknown) => {
  if (err instanceof CommanderError) {
    // Commander has printed the message (or the help, or the version): 0 for those, 2 for a usage error.
    process.exitCode = err.exitCode === 0 ? 0 : 2;
    return;
  }
  const { ConfigError } = await import('../config.js');
  // Loaded here, not at the top: every command would pay for node:util at start (bench/README.md, the CLI's start).
  const { inspect } = await import('node:util');
  // Something not an Error (a value a library rejected with) is shown whole, not as "[object Object]".
  const message =
    isAppError(err) || err instanceof ConfigError
      ? err.message
      : `Error: ${typeof (err as Error | undefined)?.message === 'string' ? (err as Error).message : inspect(err, { depth: 4, breakLength: Infinity })}`;
  stderr.write(`${message}\n`);
  process.exitCode = 2;
});

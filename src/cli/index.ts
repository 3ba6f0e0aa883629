#!/usr/bin/env node
import { Command, InvalidArgumentError } from 'commander';

// Each command imports what it needs when it runs, so `validate` starts without
// loading the HTTP framework or the database drivers.

const program = new Command();
program
  .name('copilot-service')
  .description('Copilot Management Service: serve the API, manage the database and API keys, validate API descriptions.')
  .showHelpAfterError();

async function withStorage<T>(work: (storage: import('../storage/database.js').Storage) => Promise<T>): Promise<T> {
  const { loadConfig } = await import('../config.js');
  const { createServices } = await import('../services.js');
  const { migrateToLatest } = await import('../storage/migrate.js');
  const services = createServices(loadConfig());
  try {
    await migrateToLatest(services.storage);
    return await work(services.storage);
  } finally {
    await services.close();
  }
}

const list = (value: string): string[] =>
  value
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');

program
  .command('serve', { isDefault: true })
  .description('Run the HTTP service (configuration from the environment and .env)')
  .action(async () => {
    const { serve, reportStartupError } = await import('../server.js');
    await serve().catch(reportStartupError);
  });

program
  .command('migrate')
  .description('Bring the database schema to the latest version and exit')
  .action(async () => {
    const { loadConfig } = await import('../config.js');
    const { createServices } = await import('../services.js');
    const { migrateToLatest } = await import('../storage/migrate.js');
    const services = createServices(loadConfig());
    try {
      const applied = await migrateToLatest(services.storage);
      process.stdout.write(applied.length > 0 ? `Applied: ${applied.join(', ')}\n` : 'The schema is up to date.\n');
    } finally {
      await services.close();
    }
  });

const keys = program.command('keys').description('Manage API keys');

keys
  .command('create')
  .description('Create an API key and print it alone on stdout (it is shown only once)')
  .requiredOption(
    '--scopes <list>',
    'comma-separated scopes: copilots:read, copilots:write, knowledgebase:read, knowledgebase:write, knowledgebase:delete, admin',
    list,
  )
  .option('--bots <ids>', 'comma-separated copilot ids the key is limited to', list)
  .option('--name <label>', 'a label to recognise the key by', '')
  .action(async (options: { scopes: string[]; bots?: string[]; name: string }) => {
    const { createApiKey } = await import('../domain/auth/api-keys.js');
    const created = await withStorage((storage) => createApiKey(storage.db, options));
    process.stdout.write(`${created.key}\n`);
  });

keys
  .command('list')
  .description('List API keys (never their secrets)')
  .option('--json', 'print JSON instead of a table')
  .action(async (options: { json?: boolean }) => {
    const { listApiKeys } = await import('../domain/auth/api-keys.js');
    const all = await withStorage((storage) => listApiKeys(storage.db));
    if (options.json) {
      process.stdout.write(`${JSON.stringify(all, null, 2)}\n`);
      return;
    }
    const rows = all.map((k) => [k.id, k.revoked_at ? 'revoked' : 'active', k.scopes.join(','), k.bots ? k.bots.join(',') : '*', k.name, k.created_at]);
    const header = ['ID', 'STATE', 'SCOPES', 'BOTS', 'NAME', 'CREATED'];
    const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
    for (const row of [header, ...rows])
      process.stdout.write(
        `${row
          .map((c, i) => c.padEnd(widths[i]!))
          .join('  ')
          .trimEnd()}\n`,
      );
  });

keys
  .command('revoke')
  .description('Revoke an API key; it stops working at once')
  .argument('<id>', 'the key id (from keys list)')
  .action(async (id: string) => {
    const { revokeApiKey } = await import('../domain/auth/api-keys.js');
    await withStorage((storage) => revokeApiKey(storage.db, id));
    process.stdout.write(`Revoked ${id}\n`);
  });

const copilotCommands = program.command('copilots').description('Administer copilots');

copilotCommands
  .command('purge')
  .description('Remove a deleted copilot for good, with its documents, knowledge base and passages')
  .argument('<id>', 'the id of a soft-deleted copilot')
  .action(async (id: string) => {
    const { purgeCopilot } = await import('../domain/copilots/copilot.service.js');
    const result = await withStorage((storage) => purgeCopilot(storage.db, storage.dialect, id));
    process.stdout.write(`Purged ${result.id}: ${result.documents} documents, ${result.links} links, ${result.passages} passages\n`);
  });

copilotCommands
  .command('purge-deleted')
  .description('Purge every copilot deleted more than the given number of days ago')
  .requiredOption('--older-than-days <days>', 'whole days since deletion (0: every deleted copilot)', (value: string) => {
    if (!/^\d{1,5}$/.test(value)) throw new InvalidArgumentError('a whole number of days');
    return Number(value);
  })
  .action(async (options: { olderThanDays: number }) => {
    const { purgeDeletedBefore } = await import('../domain/copilots/copilot.service.js');
    const { daysAgo } = await import('../domain/ids.js');
    const purged = await withStorage((storage) => purgeDeletedBefore(storage, daysAgo(options.olderThanDays)));
    process.stdout.write(`Purged ${purged.length} deleted copilot${purged.length === 1 ? '' : 's'}\n`);
  });

program
  .command('validate')
  .description('Validate an API description (file or http(s) URL) as the validator endpoint does')
  .argument('<file-or-url>', 'OpenAPI 3.x or Swagger 2.0 document, JSON or YAML')
  .option(
    '--format <format>',
    "json (the endpoint's answer) or text (a readable summary)",
    (value: string) => {
      if (value !== 'json' && value !== 'text') throw new InvalidArgumentError('use json or text');
      return value;
    },
    'json',
  )
  .action(async (target: string, options: { format: 'json' | 'text' }) => {
    const { runValidate } = await import('./validate.js');
    const io = { stdout: (s: string) => process.stdout.write(s), stderr: (s: string) => process.stderr.write(s) };
    let fetchPolicy: import('../net/guarded-fetch.js').FetchPolicy | undefined;
    if (/^https?:\/\//i.test(target)) {
      const { loadConfig } = await import('../config.js');
      const config = loadConfig();
      const { fetchPolicyOf } = await import('../net/guarded-fetch.js');
      fetchPolicy = fetchPolicyOf(config);
    }
    process.exitCode = await runValidate(target, { format: options.format, fetchPolicy }, io);
  });

program.parseAsync(process.argv).catch(async (err: unknown) => {
  const { AppError } = await import('../errors.js');
  const { ConfigError } = await import('../config.js');
  const message = err instanceof AppError || err instanceof ConfigError ? err.message : `Error: ${(err as Error).message ?? String(err)}`;
  process.stderr.write(`${message}\n`);
  process.exitCode = err instanceof AppError ? 1 : 2;
});

/**
 * Ad hoc (issue 16 §2, not in `npm run bench`): what PostgreSQL costs to send part of a large
 * `bytea` kept out of line (storage external, as kb_blocks' blocks are), against the whole of it.
 * A scratch database on the loopback server is created and dropped.
 * `node dist-bench/bench/pg-slices.js [postgres://postgres@127.0.0.1:5432/postgres]`
 *
 * Each query runs 30 times; the median and the 90th percentile are printed. The offsets are
 * scattered over the value as a rarer word's passages are over a common word's chunks.
 */
import pg from 'pg';

const adminUrl = process.argv[2] ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const name = `pg_slices_${process.pid}`;
const admin = new pg.Client({ connectionString: adminUrl });
await admin.connect();
await admin.query(`create database ${name}`);
const url = new URL(adminUrl);
url.pathname = `/${name}`;
const client = new pg.Client({ connectionString: url.toString() });
try {
  await client.connect();
  await client.query('create table t (id int primary key, b bytea)');
  await client.query('alter table t alter column b set storage external');
  const whole = Buffer.alloc(1_800_000);
  for (let i = 0; i < whole.length; i++) whole[i] = (i * 7919) & 0x7f;
  await client.query('insert into t values (1, $1)', [whole]);
  const offsets = Array.from({ length: 1100 }, (_, i) => Math.floor((i * 1597.7) % (whole.length - 280)));

  const time = async (label: string, text: string, values: unknown[] = []) => {
    const ms: number[] = [];
    for (let i = 0; i < 30; i++) {
      const started = performance.now();
      await client.query(text, values);
      ms.push(performance.now() - started);
    }
    ms.sort((a, b) => a - b);
    process.stdout.write(`${label}: median ${ms[15]!.toFixed(2)} ms, p90 ${ms[27]!.toFixed(2)} ms\n`);
  };
  const value = '(select b from t where id = 1) d';
  await time('the whole 1.8 MB value', 'select b from t where id = 1');
  await time('500 single bytes by get_byte', `select array(select get_byte(d.b, o) from ${value}, unnest($1::int[]) o) as v`, [offsets.slice(0, 500)]);
  await time('1,100 slices of 280 bytes, as a bytea[]', `select array(select substring(d.b from o + 1 for 280) from ${value}, unnest($1::int[]) o) as v`, [
    offsets,
  ]);
  await time(
    '1,100 slices of 280 bytes, joined into one bytea',
    `select string_agg(substring(d.b from u.o + 1 for 280), ''::bytea order by u.n) as v from ${value}, unnest($1::int[]) with ordinality u(o, n)`,
    [offsets],
  );
  await time(
    '1,100 slices of 280 bytes, only their total length sent',
    `select sum(length(substring(d.b from o + 1 for 280))) from ${value}, unnest($1::int[]) o`,
    [offsets],
  );
} finally {
  await client.end().catch(() => undefined);
  await admin.query(`drop database if exists ${name}`);
  await admin.end();
}

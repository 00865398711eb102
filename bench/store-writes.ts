// What a durable turn write costs in each store, and how PostgreSQL should hold token arrays.
//
//   npx tsx bench/store-writes.ts [--writes 100] [--bigWrites 10] [--rounds 3] [--promptTokens 400]
//                                 [--bigPromptTokens 50000]
//   npm run bench:store
//
// Writes turn records shaped like the gateway's (messages, prompt ids, response ids and log-probs), each with
// its outbox entry, at concurrency 1, 8 and 32:
//   file, no fsync       FileSampleStore with fsync off (what it did before: durable against a process crash only)
//   file, fsync          FileSampleStore writing the files before it returns: file and directory fsync'd,
//                        record then entry (store.journal false)
//   file, journal        FileSampleStore as `dev` runs it: one journal append and fdatasync shared by the turns
//                        written together, the files written afterwards (store.journal, the default)
//   postgres packed      PostgresSampleStore as shipped: JSON text plus the arrays packed as int32/float64 bytea
//   postgres json        the whole record as `json` text (same table shape, arrays left in the JSON)
//   postgres jsonb       the whole record as `jsonb`
// and reads each record back, in `rounds` rounds with the stores in a rotating order. A small prompt (`promptTokens`) and a long one (`bigPromptTokens`, the size of a
// real OpenClaw agent's prompt). Prints p50 / p99 per write and read, writes per second and bytes stored.
// Figures only; never passes or fails.

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PostgresSampleStore } from '../store/postgres-store.js';
import { FileSampleStore, type SampleStore } from '../store/sample-store.js';
import { testTurnEntry } from '../test/support/outbox-entries.js';
import { startPostgres } from '../test/support/postgres-server.js';
import { reportLoad } from './support/machine-load.js';
import { intOptions, median, ms, p99, printTable, runConcurrently } from './support/stats.js';

const options = intOptions(
  { writes: 100, bigWrites: 10, rounds: 3, promptTokens: 400, bigPromptTokens: 50_000, responseTokens: 256 },
  'npx tsx bench/store-writes.ts [options]',
);

function turnRecord(sessionId: string, promptTokens: number) {
  return {
    sessionId,
    turn: 1,
    sampleId: `${sessionId}:1`,
    requestHash: 'f'.repeat(64),
    recordedAt: new Date().toISOString(),
    model: 'tiny',
    messages: [
      { role: 'system', content: 'You are a helpful agent. '.repeat(Math.ceil(promptTokens / 8)) },
      { role: 'user', content: 'What should I pack for a day trip?' },
    ],
    tools: null,
    response: { content: 'A water bottle and a map. '.repeat(10), reasoningContent: null, toolCalls: null },
    promptIds: Array.from({ length: promptTokens }, (_, i) => (i * 7919) % 151_936),
    responseIds: Array.from({ length: options.responseTokens }, (_, i) => (i * 104_729) % 151_936),
    responseLogProbs: Array.from(
      { length: options.responseTokens },
      (_, i) => -Math.abs(Math.sin(i + 1)) * 2.5,
    ),
    policyVersion: 3,
    finishReason: 'stop',
  };
}

/** The outbox row the stores write with a turn: the same for every variant, so only the record differs. */
function entryColumns(id: string, value: ReturnType<typeof turnRecord>): unknown[] {
  const entry = testTurnEntry(value.sessionId, 1, undefined, value.policyVersion);
  return [
    id,
    entry.sessionId,
    JSON.stringify(entry.message),
    JSON.stringify(entry.workflow),
    entry.createdAt,
  ];
}

interface Writer {
  name: string;
  write(key: string, value: ReturnType<typeof turnRecord>): Promise<void>;
  read(key: string): Promise<unknown>;
  bytes(): Promise<number | null>;
}

let run = 0;

async function measure(writer: Writer, promptTokens: number, count: number, concurrency: number) {
  const writes: number[] = [];
  const reads: number[] = [];
  const keys: string[] = [];
  run++;
  const started = performance.now();
  await runConcurrently(count, concurrency, async (i) => {
    const session = `bench-${run}-${i}`;
    const key = `turns/${session}/1`;
    const record = turnRecord(session, promptTokens);
    const t0 = performance.now();
    await writer.write(key, record);
    writes.push(performance.now() - t0);
    keys.push(key);
  });
  const wallMs = performance.now() - started;
  await runConcurrently(keys.length, concurrency, async (i) => {
    const t0 = performance.now();
    await writer.read(keys[i] as string);
    reads.push(performance.now() - t0);
  });
  return { writes, reads, wallMs };
}

async function main(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'store-bench-'));
  const postgres = await startPostgres();
  const stores: SampleStore[] = [];
  try {
    const viaStore = (name: string, store: SampleStore, bytes: () => Promise<number | null>): Writer => {
      stores.push(store);
      return {
        name,
        async write(key, value) {
          await store.putIfAbsent(key, value, { outbox: testTurnEntry(value.sessionId, 1, undefined, 3) });
        },
        read: (key) => store.get(key),
        bytes,
      };
    };
    const pg = new PostgresSampleStore({ url: postgres.databaseUrl('bench') });
    await pg.query('SELECT 1');
    const tableBytes = (table: string) => async () =>
      Number((await pg.query<{ n: string }>(`SELECT pg_total_relation_size('${table}') AS n`)).rows[0]?.n);
    // The same table shape with the whole record in one column, for comparison.
    const plain = (type: 'json' | 'jsonb'): Writer => ({
      name: `postgres ${type}`,
      async write(key, value) {
        await pg.query(
          `WITH created AS (INSERT INTO bench_${type} (key, doc) VALUES ($1, $2) ON CONFLICT (key) DO NOTHING RETURNING key)
           INSERT INTO outbox (id, session_id, message, workflow, created_at)
           SELECT $3, $4, $5, $6, $7 FROM created`,
          [key, JSON.stringify(value), ...entryColumns(`bench-${type}:${key}`, value)],
        );
      },
      async read(key) {
        return (await pg.query(`SELECT doc FROM bench_${type} WHERE key = $1`, [key])).rows[0]?.doc;
      },
      bytes: tableBytes(`bench_${type}`),
    });
    for (const type of ['json', 'jsonb'])
      await pg.query(`CREATE TABLE bench_${type} (key text COLLATE "C" PRIMARY KEY, doc ${type} NOT NULL)`);

    const writers: Writer[] = [
      viaStore(
        'file, no fsync',
        new FileSampleStore(join(dir, 'nosync'), { fsync: false }),
        async () => null,
      ),
      viaStore('file, fsync', new FileSampleStore(join(dir, 'sync')), async () => null),
      viaStore(
        'file, journal',
        new FileSampleStore(join(dir, 'journal'), { journal: true }),
        async () => null,
      ),
      { ...viaStore('postgres packed', pg, tableBytes('turns')), name: 'postgres packed' },
      plain('json'),
      plain('jsonb'),
    ];
    console.log(
      `turn records: ${options.promptTokens} and ${options.bigPromptTokens} prompt tokens, ` +
        `${options.responseTokens} response tokens; ${options.writes} writes (${options.bigWrites} long ones) ` +
        `per store and concurrency; PostgreSQL ${postgres.url} (fsync and synchronous_commit on)`,
    );
    for (const [label, tokens, count] of [
      ['short prompt', options.promptTokens, options.writes],
      ['long prompt', options.bigPromptTokens, options.bigWrites],
    ] as const) {
      for (const concurrency of [1, 8, 32]) {
        // Rounds with the stores in a rotating order, so a noisy moment does not land on one store only.
        const totals = writers.map(() => ({
          writes: [] as number[],
          reads: [] as number[],
          wallMs: 0,
          bytes: 0,
        }));
        for (const writer of writers) await measure(writer, tokens, 4, concurrency); // warm-up: pools, caches
        for (let round = 0; round < options.rounds; round++) {
          for (let k = 0; k < writers.length; k++) {
            const index = (k + round) % writers.length;
            const writer = writers[index] as Writer;
            const total = totals[index] as (typeof totals)[number];
            const before = (await writer.bytes()) ?? 0;
            const result = await measure(writer, tokens, count, concurrency);
            total.writes.push(...result.writes);
            total.reads.push(...result.reads);
            total.wallMs += result.wallMs;
            total.bytes += ((await writer.bytes()) ?? 0) - before;
          }
        }
        const rows = writers.map((writer, index) => {
          const total = totals[index] as (typeof totals)[number];
          return [
            writer.name,
            `${ms(median(total.writes))} / ${ms(p99(total.writes))}`,
            (total.writes.length / (total.wallMs / 1000)).toFixed(0),
            `${ms(median(total.reads))} / ${ms(p99(total.reads))}`,
            writer.name.startsWith('file')
              ? '-'
              : `${(total.bytes / total.writes.length / 1024).toFixed(1)} KiB`,
          ];
        });
        console.log(`\n### ${label} (${tokens} tokens), concurrency ${concurrency}\n`);
        printTable(['store', 'write p50 / p99', 'writes/s', 'read p50 / p99', 'stored per record'], rows);
      }
    }
  } finally {
    for (const store of stores) await store.close?.();
    await postgres.destroy();
    await rm(dir, { recursive: true, force: true });
  }
}

const loadAtEnd = reportLoad('store bench');
await main();
loadAtEnd();

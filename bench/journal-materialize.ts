// What a journaled turn costs the machine in the filesystem store: made durable by the journal's append, then its
// files written afterwards ("materializing": the record, the outbox entry and two index entries, each written
// and fsync'd, named, and their directories fsync'd). No engine, no HTTP, no gateway: the store alone, so the
// figures are the store's own.
//
//   npx tsx bench/journal-materialize.ts [--turns 800] [--concurrency 8] [--sessions 40] [--recordBytes 3000]
//                                        [--rounds 3]
//
//   npm run bench:materialize
//
// Each round opens a store with its journal in a new folder under the working directory (the disk the store
// would use, not a tmpfs), records `turns` turns from `concurrency` writers at once, each with its outbox entry
// and two index entries (as the gateway records a main turn), then waits until every line is materialized.
// Printed per round and as medians: the appends' wall time, the drain's, and per turn the CPU of this process
// (user and system), of its threads by name (`journal-sync`, `store-files`, the main thread, V8's and libuv's),
// and of the whole machine (/proc/stat: the kernel's threads that flush and commit what the fsyncs ask for).
// Figures only; never passes or fails.

import { mkdtemp, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { FileSampleStore, storeKey } from '../store/sample-store.js';
import { testTurnEntry } from '../test/support/outbox-entries.js';
import { reportLoad } from './support/machine-load.js';
import { machineBusySeconds, threadCpuByName, threadCpuMsBetween } from './support/process-cpu.js';
import { intOptions, median, ms, printTable } from './support/stats.js';

const options = intOptions(
  { turns: 800, concurrency: 8, sessions: 40, recordBytes: 3000, rounds: 3 },
  'npx tsx bench/journal-materialize.ts [options]',
);

interface Round {
  appendsMs: number;
  drainMs: number;
  /** CPU ms per turn by where it was spent. */
  perTurn: Record<string, number>;
}

const PLACES = [
  'process',
  'process: system',
  'main thread',
  'journal-sync',
  'store-files',
  'node',
  'machine',
];

async function round(index: number): Promise<Round> {
  const root = await mkdtemp(join(process.cwd(), '.bench-materialize-'));
  const store = new FileSampleStore(root, { journal: true });
  const padding = 'x'.repeat(options.recordBytes);
  let next = 0;
  try {
    const machine = machineBusySeconds();
    const cpu = process.cpuUsage();
    const threads = threadCpuByName(process.pid);
    const started = performance.now();
    await Promise.all(
      Array.from({ length: options.concurrency }, async () => {
        for (let turn = next++; turn < options.turns; turn = next++) {
          const session = `r${index}-s${turn % options.sessions}`;
          const entry = testTurnEntry(session, turn);
          await store.putIfAbsent(
            storeKey('turns', session, turn),
            { turn, padding },
            {
              outbox: entry,
              alongside: [
                { key: storeKey('continuations', session, turn), value: { turn }, ifAbsent: true },
                { key: storeKey('replies', session, turn), value: { turn }, ifAbsent: false },
              ],
            },
          );
        }
      }),
    );
    const appended = performance.now();
    await store.openedJournal?.drain();
    const drained = performance.now();
    const used = process.cpuUsage(cpu);
    const machineMs = (machineBusySeconds() - machine) * 1000;
    const spent = threadCpuMsBetween(threads, threadCpuByName(process.pid));
    const thread = (name: string) => {
      const { user, system } = spent.get(name) ?? { user: 0, system: 0 };
      return (user + system) / options.turns;
    };
    return {
      appendsMs: appended - started,
      drainMs: drained - appended,
      perTurn: {
        process: (used.user + used.system) / 1000 / options.turns,
        'process: system': used.system / 1000 / options.turns,
        'main thread': thread('main thread'),
        'journal-sync': thread('journal-sync'),
        'store-files': thread('store-files'),
        node: thread('node'),
        machine: machineMs / options.turns,
      },
    };
  } finally {
    await store.close();
    await rm(root, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const loadAfter = reportLoad('journal materialize bench');
  console.log(
    `parameters: ${options.turns} turns from ${options.concurrency} writers over ${options.sessions} sessions, ` +
      `records of ${options.recordBytes} bytes, ${options.rounds} rounds; CPU per turn from /proc (10 ms ticks)`,
  );
  const rounds: Round[] = [];
  for (let index = 0; index < options.rounds; index++) rounds.push(await round(index));
  const header = ['round', 'appends', 'drain', ...PLACES.map((place) => `${place} per turn`)];
  const row = (label: string, pick: (selector: (each: Round) => number) => number) => [
    label,
    ms(pick((each) => each.appendsMs)),
    ms(pick((each) => each.drainMs)),
    ...PLACES.map((place) => ms(pick((each) => each.perTurn[place] ?? 0))),
  ];
  printTable(header, [
    ...rounds.map((each, index) => row(String(index + 1), (selector) => selector(each))),
    row('median', (selector) => median(rounds.map(selector))),
  ]);
  loadAfter();
}

await main();

// Where a main turn's time goes on the gateway's event loop, against a side turn's: V8's CPU profile of this
// process's main thread, taken around each block of turns (support/cpu-profile.ts), read as milliseconds per turn
// in each function with what it called synchronously.
//
//   npx tsx bench/event-loop-profile.ts [--turns 160] [--rounds 4] [--concurrency 8] [--sessionTurns 10]
//                                       [--intervalUs 250] [--top 30] [--pattern follow|new|rewritten]
//                                       [--maxTokens 1]
//
//   npm run bench:profile
//
// Starts what `bench:ingest` starts for the filesystem store (Temporal dev server, the reference engine, the fake
// judge, a control worker, a gateway with its journal); the clients send non-streaming turns of at most
// `maxTokens` tokens (one by default) from this process, `concurrency` at a time, as side turns and as main turns
// in alternate blocks (each block once the outbox is empty and the worker idle for 300 ms). With one token a
// block ends before the relay's deliveries (held up to 2 s while serving) and what they set off begin; with more,
// that work runs inside the main blocks and shows in their CPU. `follow`: each client keeps a session for
// `sessionTurns` turns and sends back the replies it received, so most main turns find the turn they continue;
// `rewritten`: the same, but every reply sent back is a text the gateway never gave, so each main turn looks for
// the turn it continues twice and finds none (the `follow` of the figures recorded before 2026-12-06 evening);
// `new`: every turn opens a session. The profile is of the main thread only: the journal's sync thread, the
// store's file thread and Node's I/O threads are in the process's CPU time, not in the functions' rows.
// Beside it, each block's CPU time by process, from /proc: this
// process's main thread and its other threads, the engine, and the rest of this process's children (the Temporal
// dev server, the fake judge), so a main turn's cost shows wherever it is paid; the whole machine's busy time
// (/proc/stat: the kernel's threads too, which flush and commit what fsyncs ask for); this process's threads by
// name (the journal's `journal-sync` and the store's `store-files` name themselves); the journal's hand-overs to
// its sync thread and its fdatasyncs per main turn (each hand-over wakes the thread; fewer fdatasyncs than turns
// when appends share one); and the main thread's garbage-collection pauses. Figures only; never passes or fails.

import { type PlannedChat, packingConversation, runChatLanes } from './support/chat-client.js';
import { CpuProfiler, type InclusiveTimes, SELF } from './support/cpu-profile.js';
import { describePairings, gatewayPairings } from './support/gateway-pairings.js';
import { emptyGcTally, GcPauses, type GcTally } from './support/gc-pauses.js';
import { reportLoad } from './support/machine-load.js';
import {
  cpuSeconds,
  machineBusySeconds,
  threadCpuByName,
  threadCpuMsBetween,
  threadCpuSeconds,
  treeCpuSeconds,
} from './support/process-cpu.js';
import { type Stack, startStack, stopOnSignal } from './support/stack.js';
import { intOptions, median, ms, p99, printTable, ratio, signedMs, stringOption } from './support/stats.js';

const pattern = stringOption('pattern', 'follow');
if (pattern !== 'follow' && pattern !== 'new' && pattern !== 'rewritten')
  throw new Error(`--pattern ${pattern}?`);
const options = intOptions(
  { turns: 160, rounds: 4, concurrency: 8, sessionTurns: 10, intervalUs: 250, top: 30, maxTokens: 1 },
  'npx tsx bench/event-loop-profile.ts [options] [--pattern follow|new|rewritten]',
);

const KINDS = ['side', 'main'] as const;
type Kind = (typeof KINDS)[number];

/** The functions docs/benchmarks.md follows from run to run (name and file, as the profile gives them). */
const FOLLOWED: [string, string][] = [
  ['finding the continued turn', 'findContinued turn-persistence.ts'],
  ["the store's read of an index entry", 'get sample-store.ts'],
  ["materializing's temporary files (I/O threads)", 'writeTemporary durable-file.ts'],
  ['materializing: the rest', 'writeCreated sample-store.ts'],
  ["the journal's append", 'journalCreate sample-store.ts'],
  ["the hand-over to the journal's sync thread", 'handOver journal-syncer.ts'],
  ["the conversation's hash", 'conversationIdentity conversation-identity.ts'],
  ["zod, every schema (the request's too)", 'safeParse schemas.js'],
];

/** Where a block's CPU time went, by process (ms). */
const PLACES = ['main thread', 'other threads', 'engine', 'other children'] as const;
type Place = (typeof PLACES)[number];

/** CPU ms so far of each place (the engine's tree, and this process's children but the engine's). */
function cpuByPlace(enginePid: number): Record<Place, number> {
  const thread = threadCpuSeconds(process.pid, process.pid);
  const whole = cpuSeconds(process.pid);
  const engine = treeCpuSeconds(enginePid);
  const children = treeCpuSeconds(process.pid) - whole - engine;
  return {
    'main thread': thread * 1000,
    'other threads': (whole - thread) * 1000,
    engine: engine * 1000,
    'other children': children * 1000,
  };
}

interface Tally {
  turns: number;
  wallMs: number;
  cpuMs: number;
  places: Record<Place, number>;
  /** This process's threads by name: user and system ms. */
  threads: Map<string, { user: number; system: number }>;
  /** The whole machine's busy ms (every process, the kernel's threads too). */
  machineMs: number;
  gc: GcTally;
  latencies: number[];
  times: InclusiveTimes;
  /** The file store journal's hand-overs to its sync thread, and its fdatasyncs. */
  handOvers: number;
  syncs: number;
}

let stack = null as Stack | null;
stopOnSignal(() => stack);
let blockCounter = 0;

function plan(kind: Kind, url: string): PlannedChat[][] {
  const block = blockCounter++;
  const perLane = Math.ceil(options.turns / options.concurrency);
  return Array.from({ length: options.concurrency }, (_, lane) =>
    Array.from({ length: perLane }, (_, i) => {
      const session =
        pattern === 'new'
          ? `profile-${process.pid}-b${block}-l${lane}-${i}`
          : `profile-${process.pid}-b${block}-l${lane}-s${Math.floor(i / options.sessionTurns)}`;
      const headers: Record<string, string> = { 'x-session-id': session };
      if (kind === 'side') headers['x-turn-type'] = 'side';
      const turn = pattern === 'new' ? 1 : (i % options.sessionTurns) + 1;
      const body = {
        model: 'tiny',
        messages: packingConversation(turn),
        max_tokens: options.maxTokens,
        temperature: 1,
        seed: i,
      };
      return { url, headers, body, ...(pattern === 'follow' && { conversation: session }) };
    }),
  );
}

async function main(): Promise<void> {
  const loadAfter = reportLoad('event-loop profile');
  console.log(
    'starting: temporal dev server, reference engine (tiny model, --trainer), fake judge, control worker, gateway',
  );
  stack = await startStack({
    gateway: true,
    judge: true,
    config: {
      runId: 'bench-profile',
      method: 'rl',
      judge: { votes: 1 },
      training: { batchSize: 4096 },
      session: { idleTimeoutMs: 3_600_000 },
      store: { journal: true },
    },
  });
  const url = `${stack.gateway?.url}/v1/chat/completions`;
  console.log(
    `parameters: pattern ${pattern} (${options.sessionTurns} turns per session); c${options.concurrency}; ` +
      `${options.rounds} rounds of (side, main) blocks of ${options.turns} turns of at most ` +
      `${options.maxTokens} token(s); samples every ${options.intervalUs} µs; clients in this process`,
  );
  // Warm-up: the engine, the pools, the worker's first session workflows.
  for (const kind of KINDS) await runChatLanes(plan(kind, url));

  const gatewayUrl = stack.gateway?.url ?? '';
  const pairingsBefore = await gatewayPairings(gatewayUrl);
  const profiler = await CpuProfiler.start(options.intervalUs);
  const enginePid = stack.engine.process.pid ?? 0;
  const tally = (): Tally => ({
    turns: 0,
    wallMs: 0,
    cpuMs: 0,
    places: Object.fromEntries(PLACES.map((place) => [place, 0])) as Record<Place, number>,
    threads: new Map(),
    machineMs: 0,
    gc: emptyGcTally(),
    latencies: [],
    times: new Map(),
    handOvers: 0,
    syncs: 0,
  });
  const tallies: Record<Kind, Tally> = { side: tally(), main: tally() };
  const gcPauses = new GcPauses();
  // Opened by the first main turn: null before it.
  const journal = () => stack?.store.openedJournal;
  for (let round = 0; round < options.rounds; round++) {
    for (const kind of round % 2 === 0 ? KINDS : [...KINDS].reverse()) {
      await stack.settle(300);
      const lanes = plan(kind, url);
      const into = tallies[kind];
      const cpu = process.cpuUsage();
      const places = cpuByPlace(enginePid);
      const threads = threadCpuByName(process.pid);
      const machine = machineBusySeconds();
      const handOvers = journal()?.handOvers ?? 0;
      const syncs = journal()?.appends ?? 0;
      const started = performance.now();
      const timings = await profiler.around(() => runChatLanes(lanes), into.times);
      const ended = performance.now();
      into.wallMs += ended - started;
      const used = process.cpuUsage(cpu);
      into.cpuMs += (used.user + used.system) / 1000;
      const placesAfter = cpuByPlace(enginePid);
      for (const place of PLACES) into.places[place] += placesAfter[place] - places[place];
      into.machineMs += (machineBusySeconds() - machine) * 1000;
      into.handOvers += (journal()?.handOvers ?? 0) - handOvers;
      into.syncs += (journal()?.appends ?? 0) - syncs;
      for (const [name, spent] of threadCpuMsBetween(threads, threadCpuByName(process.pid))) {
        const sum = into.threads.get(name) ?? { user: 0, system: 0 };
        sum.user += spent.user;
        sum.system += spent.system;
        into.threads.set(name, sum);
      }
      await gcPauses.addSpan(started, ended, into.gc);
      into.turns += lanes.flat().length;
      into.latencies.push(...timings.flat().map((timing) => timing.totalMs));
    }
  }
  profiler.close();
  gcPauses.close();

  const perTurn = (kind: Kind, name: string) => (tallies[kind].times.get(name) ?? 0) / tallies[kind].turns;
  const rate = (kind: Kind) => tallies[kind].turns / (tallies[kind].wallMs / 1000);
  const pairings = describePairings(pairingsBefore, await gatewayPairings(gatewayUrl));
  console.log(`\nthe main turns' pairings with the turns they continue (the gateway's counter): ${pairings}`);
  const main = tallies.main;
  console.log(
    `the journal per main turn: ${(main.handOvers / main.turns).toFixed(2)} hand-overs to its sync thread ` +
      `(each wakes it), ${(main.syncs / main.turns).toFixed(2)} fdatasyncs (fewer when appends share one)`,
  );
  console.log('\n### The blocks\n');
  printTable(
    [
      'kind',
      'turns/s (vs side)',
      'p50 / p99',
      'process CPU per turn (all threads)',
      'event loop busy per turn',
    ],
    KINDS.map((kind) => [
      kind,
      `${rate(kind).toFixed(1)} (${ratio(rate(kind) / rate('side'))})`,
      `${ms(median(tallies[kind].latencies))} / ${ms(p99(tallies[kind].latencies))}`,
      ms(tallies[kind].cpuMs / tallies[kind].turns),
      ms(perTurn(kind, '(root)') - perTurn(kind, '(idle)')),
    ]),
  );
  console.log('\n### CPU per turn by process (/proc, 10 ms ticks summed over the blocks)\n');
  const cpuPerTurn = (kind: Kind, place: Place) => tallies[kind].places[place] / tallies[kind].turns;
  printTable(
    ['where', 'main', 'side', 'main − side'],
    [...PLACES, 'all' as const].map((place) => {
      const of = (kind: Kind) =>
        place === 'all'
          ? PLACES.reduce((sum, each) => sum + cpuPerTurn(kind, each), 0)
          : cpuPerTurn(kind, place);
      return [place, ms(of('main')), ms(of('side')), signedMs(of('main') - of('side'))];
    }),
  );
  const machineMs = (kind: Kind) => tallies[kind].machineMs / tallies[kind].turns;
  console.log(
    `\nthe whole machine (/proc/stat, every process and the kernel's threads): main ${ms(machineMs('main'))}, ` +
      `side ${ms(machineMs('side'))}, main − side ${signedMs(machineMs('main') - machineMs('side'))} per turn`,
  );
  console.log("\n### This process's threads by name, CPU per turn (user + system, /proc)\n");
  const threadNames = [...new Set([...tallies.main.threads.keys(), ...tallies.side.threads.keys()])].sort();
  const threadMs = (kind: Kind, name: string) => {
    const sum = tallies[kind].threads.get(name) ?? { user: 0, system: 0 };
    return { user: sum.user / tallies[kind].turns, system: sum.system / tallies[kind].turns };
  };
  printTable(
    ['thread', 'main: user + system', 'side: user + system', 'main − side'],
    threadNames.map((name) => {
      const main = threadMs('main', name);
      const side = threadMs('side', name);
      return [
        name === 'node' ? "node (V8's and libuv's threads)" : name,
        `${ms(main.user)} + ${ms(main.system)}`,
        `${ms(side.user)} + ${ms(side.system)}`,
        signedMs(main.user + main.system - side.user - side.system),
      ];
    }),
  );
  console.log("\n### The main thread's garbage-collection pauses in the blocks\n");
  printTable(
    ['kind', 'main: pauses, ms per turn', 'side: pauses, ms per turn'],
    (['scavenge', 'mark-compact', 'other'] as const).map((gcKind) => [
      gcKind,
      ...KINDS.slice()
        .reverse()
        .map((kind) => {
          const { count, ms: pausedMs } = tallies[kind].gc[gcKind];
          return `${count}, ${ms(pausedMs / tallies[kind].turns)}`;
        }),
    ]),
  );
  console.log('\n### Followed functions, event loop ms per turn (with what they call synchronously)\n');
  printTable(
    ['what', 'function', 'main', 'side'],
    FOLLOWED.map(([what, name]) => [
      what,
      name,
      perTurn('main', name).toFixed(3),
      perTurn('side', name).toFixed(3),
    ]),
  );
  const names = new Set([...tallies.main.times.keys(), ...tallies.side.times.keys()]);
  const mostMore = (self: boolean) =>
    [...names]
      .filter((name) => name.startsWith(SELF) === self)
      .map((name) => ({ name, main: perTurn('main', name), side: perTurn('side', name) }))
      .sort((a, b) => b.main - b.side - (a.main - a.side))
      .slice(0, options.top)
      .map((row) => [
        self ? row.name.slice(SELF.length) : row.name,
        (row.main - row.side).toFixed(3),
        row.main.toFixed(3),
        row.side.toFixed(3),
      ]);
  console.log(`\n### The ${options.top} functions a main turn spends most more in than a side turn\n`);
  printTable(['function', 'main − side', 'main', 'side'], mostMore(false));
  console.log(
    `\n### The ${options.top} functions a main turn spends most more in, themselves (what they call aside)\n`,
  );
  printTable(['function', 'main − side', 'main', 'side'], mostMore(true));
  loadAfter();
}

main()
  .catch((error) => {
    console.error(error);
    process.exitCode = 1;
  })
  .finally(async () => {
    await stack?.close();
  });

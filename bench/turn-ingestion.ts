// Durable turn ingestion: turns per second recorded end to end, and what the durable hand-off adds.
//
//   npx tsx bench/turn-ingestion.ts [--turns1 40] [--turns8 120] [--turns32 256] [--rounds 2]
//                                   [--sessionTurns 10] [--settleMs 300] [--settleCapMs 20000]
//
//   npm run bench:ingest
//
// Starts a Temporal dev server, the reference engine (tiny random model, --trainer), the fake judge, the
// control worker and the gateway. Clients send non-streaming chat completions with `max_tokens` 1 (so the
// engine's share is as small as it gets) through the gateway, as main turns (client -> gateway -> engine ->
// store write + signal-with-start accepted -> response) and, for the same requests, as side turns (proxied
// only). Two session patterns:
//   new      every turn opens its own session: signal-with-start starts a session workflow;
//   follow   each client keeps a session for `sessionTurns` turns (the conversation grows): most hand-offs
//            signal a running workflow, which hands the previous turn to scoring (fake judge, rl, 1 vote; no
//            training step: batch size 4096), as it would in production.
// At concurrency 1, 8 and 32, side and main blocks alternate (order swapped each round); each block starts
// once the control worker has been idle for `settleMs`, and the time that took after a main block is the
// worker's drain (the session workflows, and for follow the scoring, the block left behind). Afterwards the
// histories of up to `historySessions` sessions of the last c32 main block show how long the session
// workflow took to take in each turn after the server accepted its signal. Figures only; never passes or
// fails.

import { type ChatTiming, timedChat } from './support/chat-client.js';
import { signalDeliveries } from './support/history.js';
import { type Stack, startStack, stopOnSignal } from './support/stack.js';
import {
  intOptions,
  median,
  ms,
  p99,
  printTable,
  ratio,
  runConcurrently,
  signedMs,
} from './support/stats.js';

const options = intOptions(
  {
    turns1: 40,
    turns8: 120,
    turns32: 256,
    rounds: 2,
    sessionTurns: 10,
    historySessions: 24,
    maxTokens: 1,
    settleMs: 300,
    settleCapMs: 20_000,
  },
  'npx tsx bench/turn-ingestion.ts [options]',
);

type Pattern = 'new' | 'follow';
type Kind = 'side' | 'main';

interface Block {
  latencies: number[];
  wallMs: number;
  count: number;
}

interface Cell {
  side: Block[];
  main: Block[];
  recordMs: number[];
  storeMs: number[];
  /** After each main block: how long until the control worker had been idle for `settleMs`. */
  drainMs: number[];
  /** Session ids and client completion times of the last main block, for the history check. */
  lastMain: Map<string, number[]>;
}

let stack = null as Stack | null;
stopOnSignal(() => stack);
let blockCounter = 0;

function messagesFor(turn: number): Record<string, string>[] {
  const messages: Record<string, string>[] = [{ role: 'system', content: 'You are a concise assistant.' }];
  for (let i = 1; i <= turn; i++) {
    messages.push({ role: 'user', content: `Question ${i}: what should I pack for a day trip?` });
    if (i < turn) messages.push({ role: 'assistant', content: 'A water bottle and a map.' });
  }
  return messages;
}

/** One block: `count` requests over `concurrency` lanes; lane sessions follow `pattern`. */
async function runBlock(pattern: Pattern, kind: Kind, concurrency: number, count: number, cell: Cell) {
  if (!stack?.gateway) throw new Error('stack not started');
  const url = `${stack.gateway.url}/v1/chat/completions`;
  const block = blockCounter++;
  const perLane = Math.ceil(count / concurrency);
  const latencies: number[] = [];
  const completions = new Map<string, number[]>();
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async (_, lane) => {
      for (let i = 0; i < perLane && lane * perLane + i < count; i++) {
        const turn = pattern === 'new' ? 1 : (i % options.sessionTurns) + 1;
        const session =
          pattern === 'new'
            ? `ingest-${process.pid}-b${block}-l${lane}-${i}`
            : `ingest-${process.pid}-b${block}-l${lane}-s${Math.floor(i / options.sessionTurns)}`;
        const headers: Record<string, string> = { 'x-session-id': session };
        if (kind === 'side') headers['x-turn-type'] = 'side';
        const timing: ChatTiming = await timedChat(
          url,
          {
            model: 'tiny',
            messages: messagesFor(turn),
            max_tokens: options.maxTokens,
            temperature: 1,
            seed: i,
          },
          headers,
        );
        latencies.push(timing.totalMs);
        if (kind === 'main') {
          const list = completions.get(session) ?? [];
          list.push(timing.completedAt);
          completions.set(session, list);
        }
      }
    }),
  );
  const result: Block = { latencies, wallMs: performance.now() - started, count: latencies.length };
  if (kind === 'main') {
    cell.main.push(result);
    cell.recordMs.push(...stack.recordTimes.splice(0));
    cell.storeMs.push(...stack.storeTimes.splice(0));
    cell.lastMain = completions;
  } else cell.side.push(result);
  // The next block starts once the control worker has finished what this one started.
  const drained = await stack.settle(options.settleMs, options.settleCapMs);
  if (kind === 'main') cell.drainMs.push(drained);
}

async function measure(pattern: Pattern, concurrency: number, count: number): Promise<Cell> {
  const cell: Cell = { side: [], main: [], recordMs: [], storeMs: [], drainMs: [], lastMain: new Map() };
  for (let round = 0; round < options.rounds; round++) {
    const order: Kind[] = round % 2 === 0 ? ['side', 'main'] : ['main', 'side'];
    for (const kind of order) await runBlock(pattern, kind, concurrency, count, cell);
  }
  return cell;
}

const all = (blocks: Block[]) => blocks.flatMap((b) => b.latencies);
const throughput = (blocks: Block[]) =>
  blocks.reduce((n, b) => n + b.count, 0) / (blocks.reduce((t, b) => t + b.wallMs, 0) / 1000);

/** How long after the server accepted each turn's signal the session workflow had taken it in. */
async function historyCheck(cell: Cell): Promise<{ handled: number[]; afterClient: number[] }> {
  if (!stack) throw new Error('stack not started');
  const sessions = [...cell.lastMain.entries()].slice(0, options.historySessions);
  const handled: number[] = [];
  const afterClient: number[] = [];
  await runConcurrently(sessions.length, 4, async (index) => {
    const [session, completedAt] = sessions[index] as [string, number[]];
    const deadline = Date.now() + 30_000;
    for (;;) {
      const history = await stack?.client.workflow.getHandle(`session-${session}`).fetchHistory();
      const deliveries = signalDeliveries(history?.events ?? []);
      if (deliveries.length >= completedAt.length || Date.now() > deadline) {
        deliveries.forEach((d, i) => {
          handled.push(d.handledMs - d.signaledMs);
          const client = completedAt[i];
          if (client !== undefined) afterClient.push(d.handledMs - client);
        });
        return;
      }
      await new Promise((r) => setTimeout(r, 200));
    }
  });
  return { handled, afterClient };
}

async function main(): Promise<void> {
  const started = Date.now();
  console.log(
    'starting: temporal dev server, reference engine (tiny model, --trainer), fake judge, control worker, gateway',
  );
  stack = await startStack({
    gateway: true,
    judge: true,
    config: {
      runId: 'bench-ingest',
      method: 'rl',
      judge: { votes: 1 },
      training: { batchSize: 4096 },
      session: { idleTimeoutMs: 3_600_000 },
    },
  });
  console.log(`ready in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  const levels: [number, number][] = [
    [1, options.turns1],
    [8, options.turns8],
    [32, options.turns32],
  ];
  console.log(
    `parameters: non-streaming, max_tokens ${options.maxTokens}; turns per block ` +
      `${levels.map(([c, n]) => `c${c}: ${n}`).join(', ')}; ${options.rounds} rounds of (side, main) blocks; ` +
      `follow pattern: ${options.sessionTurns} turns per session; each block starts once the control worker ` +
      `has been idle ${options.settleMs} ms (waiting at most ${options.settleCapMs} ms)`,
  );

  // Warm-up: pools, the engine, the worker's first session and scoring workflows.
  const warm: Cell = { side: [], main: [], recordMs: [], storeMs: [], drainMs: [], lastMain: new Map() };
  await runBlock('follow', 'main', 4, 40, warm);
  await runBlock('new', 'main', 4, 20, warm);
  await runBlock('new', 'side', 4, 20, warm);

  for (const pattern of ['new', 'follow'] as const) {
    console.log(`\n### Pattern "${pattern}"\n`);
    const rows: string[][] = [];
    const handoff: string[][] = [];
    let last: Cell | null = null;
    for (const [concurrency, count] of levels) {
      const cell = await measure(pattern, concurrency, count);
      last = cell;
      const side = all(cell.side);
      const mainTurns = all(cell.main);
      rows.push([
        String(concurrency),
        `${throughput(cell.side).toFixed(1)}`,
        `${throughput(cell.main).toFixed(1)}`,
        ratio(throughput(cell.main) / throughput(cell.side)),
        `${ms(median(side))} / ${ms(p99(side))}`,
        `${ms(median(mainTurns))} / ${ms(p99(mainTurns))}`,
        `${signedMs(median(mainTurns) - median(side))} / ${signedMs(p99(mainTurns) - p99(side))}`,
      ]);
      const signalMs = cell.recordMs.map((r, i) => r - (cell.storeMs[i] ?? 0));
      handoff.push([
        String(concurrency),
        `${ms(median(cell.recordMs))} / ${ms(p99(cell.recordMs))}`,
        `${ms(median(cell.storeMs))} / ${ms(p99(cell.storeMs))}`,
        `${ms(median(signalMs))} / ${ms(p99(signalMs))}`,
        cell.drainMs.map((d) => (d >= options.settleCapMs ? `>${ms(d)}` : ms(d))).join(', '),
      ]);
    }
    printTable(
      [
        'concurrency',
        'side turns/s',
        'main turns/s',
        'main/side',
        'side p50 / p99',
        'main p50 / p99',
        'main - side p50 / p99',
      ],
      rows,
    );
    console.log('\nthe hand-off inside the gateway, per main turn (store write + signal-with-start):\n');
    printTable(
      [
        'concurrency',
        'hand-off p50 / p99',
        'store write p50 / p99',
        'signal-with-start p50 / p99',
        'worker drain after each main block',
      ],
      handoff,
    );
    if (last) {
      const { handled, afterClient } = await historyCheck(last);
      console.log(
        `\nsession histories (${Math.min(last.lastMain.size, options.historySessions)} sessions of the last c32 ` +
          `main block, ${handled.length} turns): signal accepted -> session workflow task completed ` +
          `p50 ${ms(median(handled))}, p99 ${ms(p99(handled))}; client got its response -> workflow had the ` +
          `turn p50 ${signedMs(median(afterClient))}, p99 ${signedMs(p99(afterClient))}`,
      );
    }
  }
  console.log(`\ntotal ${((Date.now() - started) / 1000).toFixed(0)} s`);
}

try {
  await main();
} finally {
  await stack?.close();
}

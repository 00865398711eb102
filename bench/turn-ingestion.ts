// Durable turn ingestion: turns per second recorded end to end, for both stores, against side turns.
//
//   npx tsx bench/turn-ingestion.ts [--turns1 40] [--turns8 120] [--turns32 256] [--rounds 2]
//                                   [--sessionTurns 10] [--settleMs 300] [--settleCapMs 60000]
//                                   [--settleBusyPercent 25] [--patterns new,follow] [--yieldMs 10000]
//                                   [--journal 1] [--poolSize 20]
//                                   [--clients inline|process]
//
//   npm run bench:ingest
//
// Starts a Temporal dev server, the reference engine (tiny random model, --trainer), the fake judge, a
// PostgreSQL server, a control worker per store and two gateways (the filesystem store, fsync'd; PostgreSQL).
// Clients send non-streaming chat completions with `max_tokens` 1 (so the engine's share is as small as it
// gets), as main turns through each gateway (client -> gateway -> engine -> turn + outbox entry durable ->
// response; the relay delivers to the session workflow afterwards) and, for the same requests, as side turns
// (proxied only). Three session patterns (`--patterns`, default `new,follow`):
//   new       every turn opens its own session: its delivery starts a session workflow;
//   follow    each client keeps a session for `sessionTurns` turns (the conversation grows) and sends back the
//             replies it received, as a real client does, so each turn pairs with the turn it continues: most
//             deliveries signal a running workflow, which hands the previous turn to scoring (fake judge, rl, 1
//             vote; no training step: batch size 4096), as it would in production;
//   rewritten as follow, but every reply sent back is a text the gateway never gave ("A water bottle and a
//             map."): each main turn looks for the turn it continues twice (while the engine answers, and
//             again after) and finds none. The `follow` figures recorded before 2026-12-06 evening were this.
// At concurrency 1, 8 and 32, side and main blocks alternate (order rotated each round); each block starts once
// the outboxes are empty, the control workers idle and the whole machine under `settleBusyPercent` busy for
// `settleMs` (PostgreSQL's autovacuum or a checkpoint after a block lands on no block), and the time that took
// after a main block is the drain (deliveries, session workflows, and for follow the scoring, the block left
// behind). Beside the rate of all main blocks against all side blocks, each round's main block against the side
// block of the same round, and their median: one block slowed by the machine weighs on one round only.
// Afterwards the histories of up to `historySessions` sessions of each store's last main block show how long
// after the client got its response the session workflow had taken the turn in. The clients send from this process,
// whose event loop the gateways, relays and control workers share (the figures recorded so far), or with
// `--clients process` from a process of their own (support/client-process.ts), as real clients do. Figures only;
// never passes or fails.

import { LOCAL_TENANT, scopedSessionId } from '../core/tenant.js';
import { sessionWorkflowId } from '../temporal/workflow-ids.js';
import {
  type ChatTiming,
  type PlannedChat,
  packingConversation,
  runChatLanes,
} from './support/chat-client.js';
import { ClientProcess } from './support/client-process.js';
import { signalDeliveries } from './support/history.js';
import { reportLoad } from './support/machine-load.js';
import { type Stack, startStack, stopOnSignal } from './support/stack.js';
import {
  intOptions,
  median,
  middleValue,
  ms,
  p99,
  printTable,
  ratio,
  runConcurrently,
  signedMs,
  stringOption,
} from './support/stats.js';

type Pattern = 'new' | 'follow' | 'rewritten';
const PATTERNS: readonly Pattern[] = ['new', 'follow', 'rewritten'];
/** `--patterns new,follow` (the default; `rewritten` too on request): the session patterns to measure, in this order. */
const patterns = stringOption('patterns', 'new,follow')
  .split(',')
  .map((name) => {
    if (!(PATTERNS as readonly string[]).includes(name)) throw new Error(`unknown pattern ${name}`);
    return name as Pattern;
  });
/** `--clients inline` (default): requests are sent from this process; `process`: from a process of their own. */
const clientsWhere = stringOption('clients', 'inline');
if (clientsWhere !== 'process' && clientsWhere !== 'inline') throw new Error(`--clients ${clientsWhere}?`);
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
    // The scoring of a follow block of 128 paired turns takes 13-20 s after it on this machine.
    settleCapMs: 60_000,
    settleBusyPercent: 25,
    yieldMs: 10_000,
    journal: 1,
    poolSize: 20,
  },
  'npx tsx bench/turn-ingestion.ts [options]',
);

const KINDS = ['side', 'main file', 'main postgres'] as const;
type Kind = (typeof KINDS)[number];

interface Block {
  latencies: number[];
  wallMs: number;
  count: number;
}

interface Cell {
  blocks: Record<Kind, Block[]>;
  storeMs: Record<'file' | 'postgres', number[]>;
  lagMs: Record<'file' | 'postgres', number[]>;
  /** After each main block: how long until the outboxes were empty and the workers idle for `settleMs`. */
  drainMs: Record<'file' | 'postgres', number[]>;
  /** Session ids and client completion times of the last main block per store, for the history check. */
  lastMain: Record<'file' | 'postgres', Map<string, number[]>>;
}

const emptyCell = (): Cell => ({
  blocks: { side: [], 'main file': [], 'main postgres': [] },
  storeMs: { file: [], postgres: [] },
  lagMs: { file: [], postgres: [] },
  drainMs: { file: [], postgres: [] },
  lastMain: { file: new Map(), postgres: new Map() },
});

let stack = null as Stack | null;
stopOnSignal(() => stack);
let clients = null as ClientProcess | null;
let blockCounter = 0;

const storeOf = (kind: Kind): 'file' | 'postgres' | null =>
  kind === 'main file' ? 'file' : kind === 'main postgres' ? 'postgres' : null;

/** One block: `count` requests over `concurrency` lanes; lane sessions follow `pattern`. */
async function runBlock(pattern: Pattern, kind: Kind, concurrency: number, count: number, cell: Cell) {
  if (!stack?.file || !stack.postgres) throw new Error('stack not started');
  const store = storeOf(kind);
  const lane = stack[store ?? 'file'];
  if (!lane) throw new Error('stack not started');
  const url = `${lane.gateway.url}/v1/chat/completions`;
  const block = blockCounter++;
  const perLane = Math.ceil(count / concurrency);
  const plan: PlannedChat[][] = Array.from({ length: concurrency }, (_, laneIndex) => {
    const lane: PlannedChat[] = [];
    for (let i = 0; i < perLane && laneIndex * perLane + i < count; i++) {
      const turn = pattern === 'new' ? 1 : (i % options.sessionTurns) + 1;
      const session =
        pattern === 'new'
          ? `ingest-${process.pid}-b${block}-l${laneIndex}-${i}`
          : `ingest-${process.pid}-b${block}-l${laneIndex}-s${Math.floor(i / options.sessionTurns)}`;
      const headers: Record<string, string> = { 'x-session-id': session };
      if (kind === 'side') headers['x-turn-type'] = 'side';
      const body = {
        model: 'tiny',
        messages: packingConversation(turn),
        max_tokens: options.maxTokens,
        temperature: 1,
        seed: i,
      };
      lane.push({ url, body, headers, ...(pattern === 'follow' && { conversation: session }) });
    }
    return lane;
  });
  const started = performance.now();
  const timings = await runLanes(plan);
  const wallMs = performance.now() - started;
  const latencies: number[] = [];
  const completions = new Map<string, number[]>();
  plan.forEach((lane, laneIndex) => {
    lane.forEach((chat, i) => {
      const timing = timings[laneIndex]?.[i];
      if (!timing) throw new Error('a request of the block has no timing');
      latencies.push(timing.totalMs);
      if (store) {
        const session = chat.headers['x-session-id'] as string;
        const list = completions.get(session) ?? [];
        list.push(timing.completedAt);
        completions.set(session, list);
      }
    });
  });
  cell.blocks[kind].push({ latencies, wallMs: wallMs, count: latencies.length });
  // The next block starts once the outboxes are empty and the workers have finished what this one started.
  const drained = await stack.settle(options.settleMs, options.settleCapMs, options.settleBusyPercent / 100);
  if (store) {
    cell.storeMs[store].push(...lane.storeTimes.splice(0));
    cell.lagMs[store].push(...lane.lagMs.splice(0));
    cell.drainMs[store].push(drained);
    cell.lastMain[store] = completions;
  }
}

/** Runs the lanes concurrently (each lane's requests in order) from the clients' process, or from this one. */
async function runLanes(lanes: PlannedChat[][]): Promise<ChatTiming[][]> {
  return clients ? clients.run(lanes) : runChatLanes(lanes);
}

async function measure(pattern: Pattern, concurrency: number, count: number): Promise<Cell> {
  const cell = emptyCell();
  for (let round = 0; round < options.rounds; round++) {
    const order = KINDS.map((_, i) => KINDS[(i + round) % KINDS.length] as Kind);
    for (const kind of order) await runBlock(pattern, kind, concurrency, count, cell);
  }
  return cell;
}

const all = (blocks: Block[]) => blocks.flatMap((b) => b.latencies);
const rateOf = (block: Block) => block.count / (block.wallMs / 1000);
const throughput = (blocks: Block[]) =>
  blocks.reduce((n, b) => n + b.count, 0) / (blocks.reduce((t, b) => t + b.wallMs, 0) / 1000);

/** How long after the client got its response each session workflow had taken the turn in. */
async function historyCheck(sessions: Map<string, number[]>): Promise<number[]> {
  if (!stack) throw new Error('stack not started');
  const picked = [...sessions.entries()].slice(0, options.historySessions);
  const afterClient: number[] = [];
  await runConcurrently(picked.length, 4, async (index) => {
    const [session, completedAt] = picked[index] as [string, number[]];
    const deadline = Date.now() + 30_000;
    for (;;) {
      const history = await stack?.client.workflow
        .getHandle(sessionWorkflowId(scopedSessionId(LOCAL_TENANT, session)))
        .fetchHistory();
      const deliveries = signalDeliveries(history?.events ?? []);
      if (deliveries.length >= completedAt.length || Date.now() > deadline) {
        deliveries.forEach((d, i) => {
          const client = completedAt[i];
          if (client !== undefined) afterClient.push(d.handledMs - client);
        });
        return;
      }
      await new Promise((r) => setTimeout(r, 200));
    }
  });
  return afterClient;
}

async function main(): Promise<void> {
  const started = Date.now();
  console.log(
    'starting: temporal dev server, reference engine (tiny model, --trainer), fake judge, PostgreSQL, ' +
      'a control worker and a gateway per store',
  );
  stack = await startStack({
    gateway: true,
    judge: true,
    postgres: true,
    config: {
      runId: 'bench-ingest',
      method: 'rl',
      judge: { votes: 1 },
      training: { batchSize: 4096 },
      session: { idleTimeoutMs: 3_600_000 },
      // How long the gateways' relays hold deliveries while they answer (store.outboxYieldMs).
      // The file store's turn journal (1, the default) or files before the answer (0), and PostgreSQL's pool.
      store: { outboxYieldMs: options.yieldMs, journal: options.journal === 1, poolSize: options.poolSize },
    },
  });
  if (clientsWhere === 'process') clients = await ClientProcess.start();
  console.log(`ready in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  // A level with no turns (`--turns1 0`) is left out.
  const levels = (
    [
      [1, options.turns1],
      [8, options.turns8],
      [32, options.turns32],
    ] as [number, number][]
  ).filter(([, count]) => count > 0);
  console.log(
    `parameters: clients ${clientsWhere === 'process' ? 'in a process of their own' : "in the gateways' process"}; non-streaming, max_tokens ${options.maxTokens}; turns per block ` +
      `${levels.map(([c, n]) => `c${c}: ${n}`).join(', ')}; ${options.rounds} rounds of (side, main file, ` +
      `main postgres) blocks; follow pattern: ${options.sessionTurns} turns per session; relays yield ` +
      `${options.yieldMs} ms to serving; file store journal ${options.journal === 1 ? 'on' : 'off'}; PostgreSQL pool ${options.poolSize}; each block starts ` +
      `once the outboxes are empty, the workers idle and the machine under ${options.settleBusyPercent}% busy ` +
      `for ${options.settleMs} ms (waiting at most ` +
      `${options.settleCapMs} ms)`,
  );

  // Warm-up: pools, the engine, the workers' first session and scoring workflows.
  const warm = emptyCell();
  for (const kind of KINDS) {
    await runBlock('follow', kind, 4, 40, warm);
    await runBlock('new', kind, 4, 20, warm);
  }

  for (const pattern of patterns) {
    console.log(`\n### Pattern "${pattern}"\n`);
    const rows: string[][] = [];
    const handoff: string[][] = [];
    const roundRows: string[][] = [];
    let last: { cell: Cell; concurrency: number } | null = null;
    for (const [concurrency, count] of levels) {
      const cell = await measure(pattern, concurrency, count);
      last = { cell, concurrency };
      const side = all(cell.blocks.side);
      const sideRate = throughput(cell.blocks.side);
      const row = [String(concurrency), sideRate.toFixed(1), `${ms(median(side))} / ${ms(p99(side))}`];
      for (const kind of ['main file', 'main postgres'] as const) {
        const turns = all(cell.blocks[kind]);
        const rate = throughput(cell.blocks[kind]);
        row.push(
          `${rate.toFixed(1)} (${ratio(rate / sideRate)})`,
          `${ms(median(turns))} / ${ms(p99(turns))}`,
          signedMs(median(turns) - median(side)),
        );
      }
      rows.push(row);
      for (const kind of ['main file', 'main postgres'] as const) {
        const rounds = cell.blocks[kind].map((block, round) => {
          const side = cell.blocks.side[round];
          return side ? rateOf(block) / rateOf(side) : Number.NaN;
        });
        roundRows.push([
          String(concurrency),
          kind === 'main file' ? 'file' : 'postgres',
          ratio(middleValue(rounds)),
          `${ratio(Math.min(...rounds))}, ${ratio(Math.max(...rounds))}`,
          rounds.map(ratio).join(', '),
        ]);
      }
      for (const store of ['file', 'postgres'] as const)
        handoff.push([
          String(concurrency),
          store,
          `${ms(median(cell.storeMs[store]))} / ${ms(p99(cell.storeMs[store]))}`,
          `${ms(median(cell.lagMs[store]))} / ${ms(p99(cell.lagMs[store]))}`,
          cell.drainMs[store].map((d) => (d >= options.settleCapMs ? `>${ms(d)}` : ms(d))).join(', '),
        ]);
    }
    printTable(
      [
        'concurrency',
        'side turns/s',
        'side p50 / p99',
        'main file turns/s (vs side)',
        'file p50 / p99',
        'file - side p50',
        'main postgres turns/s (vs side)',
        'postgres p50 / p99',
        'postgres - side p50',
      ],
      rows,
    );
    console.log(
      "\neach round's main block against the side block of the same round (the machine's speed drifts between " +
        'runs and within one; a round compares blocks a few seconds apart):\n',
    );
    printTable(['concurrency', 'store', 'median of rounds', 'lowest, highest', 'rounds in order'], roundRows);
    console.log("\nper main turn: the durable write, then the relay's delivery to the session workflow:\n");
    printTable(
      [
        'concurrency',
        'store',
        'durable write p50 / p99',
        'delivery lag p50 / p99',
        'drain after each main block',
      ],
      handoff,
    );
    if (last)
      for (const store of ['file', 'postgres'] as const) {
        const sessions = last.cell.lastMain[store];
        const afterClient = await historyCheck(sessions);
        console.log(
          `\n${store}: session histories (${Math.min(sessions.size, options.historySessions)} sessions ` +
            `of the last c${last.concurrency} main block, ${afterClient.length} turns): client got its response -> session ` +
            `workflow task that took the turn in completed p50 ${signedMs(median(afterClient))}, ` +
            `p99 ${signedMs(p99(afterClient))}`,
        );
      }
  }
  console.log(`\ntotal ${((Date.now() - started) / 1000).toFixed(0)} s`);
}

const loadAtEnd = reportLoad('ingestion bench');
try {
  await main();
} finally {
  clients?.close();
  await stack?.close();
}
loadAtEnd();

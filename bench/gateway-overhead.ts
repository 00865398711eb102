// Gateway overhead versus calling the engine directly, measured side by side in one run, for both stores.
//
//   npx tsx bench/gateway-overhead.ts [--engine reference|vllm] [--rounds1 50] [--rounds8 3] [--rounds32 3]
//                                      [--perLane 2] [--maxTokens 16] [--settleMs 20] [--settle32Ms 300]
//                                      [--yieldMs 10000] [--journal 1] [--poolSize 20]
//                                      [--clients inline|process]
//   npm run bench:gateway
//
// Starts a Temporal dev server, the policy engine (the reference engine with --trainer, or vLLM with the
// reference trainer beside it; tiny random model), a PostgreSQL server, a control worker per store and two
// gateways (one on the filesystem store, fsync'd; one on PostgreSQL), then sends the same chat completion
// (fixed seed, `ignore_eos`, `max_tokens` tokens) five ways:
//   direct           to the engine, the client's body as it is;
//   direct+rl        to the engine, plus what the gateway adds for a main turn (the engine adapter's
//                    exact-token fields);
//   gateway side     through the gateway with `X-Turn-Type: side` (proxy only, nothing recorded);
//   main file        through the filesystem gateway with a fresh `X-Session-Id` each: answered once the turn
//                    and its outbox entry are fsync'd; the relay then starts its session workflow;
//   main postgres    the same through the PostgreSQL gateway (one transaction per turn).
// Non-streaming latency, streaming time to first token and streaming time to `[DONE]`, at concurrency 1
// (variants and modes interleaved request by request), 8 and 32 (block by block), in a seeded shuffled order,
// each request (c1) or block starting once the outboxes are empty and the control workers idle, so the session
// workflows a main turn starts are not charged to the request that happens to follow it. The clients send from
// this process, whose event loop the gateways share (the figures recorded so far), or with `--clients process`
// from a process of their own (support/client-process.ts), as real clients do. Prints medians,
// p99s, ratios and differences, the durable write and the delivery lag (entry durable -> session workflow
// accepted the signal); never passes or fails on time.

import { createHistogram, type RecordableHistogram } from 'node:perf_hooks';
import { type ChatTiming, type PlannedChat, runChatLanes } from './support/chat-client.js';
import { ClientProcess } from './support/client-process.js';
import { reportLoad } from './support/machine-load.js';
import { type BenchGateway, type Stack, startStack, stopOnSignal } from './support/stack.js';
import {
  intOptions,
  median,
  ms,
  p99,
  printTable,
  ratio,
  seededRandom,
  shuffled,
  signedMs,
  stringOption,
} from './support/stats.js';

const engineKind = stringOption('engine', 'reference');
/** `--clients inline` (default): requests are sent from this process; `process`: from a process of their own. */
const clientsWhere = stringOption('clients', 'inline');
if (clientsWhere !== 'process' && clientsWhere !== 'inline') throw new Error(`--clients ${clientsWhere}?`);
const options = intOptions(
  {
    rounds1: 50,
    rounds8: 3,
    rounds32: 3,
    perLane: 2,
    maxTokens: 16,
    seed: 1234,
    settleMs: 20,
    settle32Ms: 300,
    yieldMs: 10_000,
    journal: 1,
    poolSize: 20,
  },
  'npx tsx bench/gateway-overhead.ts [options]',
);

const VARIANTS = ['direct', 'direct+rl', 'gateway side', 'main file', 'main postgres'] as const;
type Variant = (typeof VARIANTS)[number];
type Mode = 'json' | 'stream';

interface Samples {
  json: number[];
  ttft: number[];
  streamTotal: number[];
  /** Event-loop delay of this process (the gateways, relays and control workers run here) while it ran. */
  loopDelay: RecordableHistogram;
}

const MESSAGES = [
  { role: 'system', content: 'You are a concise assistant.' },
  { role: 'user', content: 'What is the weather like in Lisbon today? Answer briefly.' },
];

let stack = null as Stack | null;
stopOnSignal(() => stack);
let clients = null as ClientProcess | null;
let sessionCounter = 0;

/** The request a variant sends in a mode: where, with what body and headers. */
function plannedRequest(variant: Variant, mode: Mode): PlannedChat {
  if (!stack?.file || !stack.postgres) throw new Error('stack not started');
  const stream = mode === 'stream';
  const body: Record<string, unknown> = {
    model: stack.modelName,
    messages: MESSAGES,
    max_tokens: options.maxTokens,
    temperature: 1,
    seed: options.seed,
    ignore_eos: true,
    stream,
  };
  const chat = (gateway: BenchGateway, headers: Record<string, string>): PlannedChat => ({
    url: `${gateway.gateway.url}/v1/chat/completions`,
    body,
    headers,
  });
  const session = { 'x-session-id': `bench-${process.pid}-${sessionCounter++}` };
  const engineUrl = `${stack.engine.url}/v1/chat/completions`;
  switch (variant) {
    case 'direct':
      return { url: engineUrl, body, headers: {} };
    case 'direct+rl':
      return {
        url: engineUrl,
        body: stack.adapter.chatBody(
          { ...body, ...(stream ? { stream_options: { include_usage: true } } : {}) },
          { capture: true },
        ),
        headers: {},
      };
    case 'gateway side':
      return chat(stack.file, { 'x-turn-type': 'side' });
    case 'main file':
      return chat(stack.file, session);
    case 'main postgres':
      return chat(stack.postgres, session);
  }
}

/** Runs the lanes of requests concurrently (each lane's in order) from the clients' process, or from this one. */
async function runLanes(lanes: PlannedChat[][]): Promise<ChatTiming[]> {
  return (await (clients ? clients.run(lanes) : runChatLanes(lanes))).flat();
}

function emptySamples(): Record<Variant, Samples> {
  const samples = {} as Record<Variant, Samples>;
  for (const v of VARIANTS)
    samples[v] = { json: [], ttft: [], streamTotal: [], loopDelay: createHistogram() };
  return samples;
}

const random = seededRandom(options.seed);
const PAIRS = VARIANTS.flatMap((variant) => (['json', 'stream'] as const).map((mode) => ({ variant, mode })));
let settledMs = 0;

const LOOP_PROBE_MS = 2;

/**
 * Runs `work` while recording into `samples.loopDelay` how late a 2 ms timer fires (what perf_hooks'
 * monitorEventLoopDelay measures, kept in a histogram that adds up over blocks).
 */
async function watchingLoop(samples: Samples, work: () => Promise<void>): Promise<void> {
  let last = performance.now();
  const probe = setInterval(() => {
    const now = performance.now();
    samples.loopDelay.record(Math.max(1, Math.round((now - last - LOOP_PROBE_MS) * 1e6)));
    last = now;
  }, LOOP_PROBE_MS);
  try {
    await work();
  } finally {
    clearInterval(probe);
  }
}

/** Runs `lanes` lanes of `perLane` requests of a variant and mode, and keeps their timings. */
async function block(samples: Samples, variant: Variant, mode: Mode, lanes: number, perLane: number) {
  const plan = Array.from({ length: lanes }, () =>
    Array.from({ length: perLane }, () => plannedRequest(variant, mode)),
  );
  for (const t of await runLanes(plan)) {
    if (mode === 'json') samples.json.push(t.totalMs);
    else {
      samples.ttft.push(t.ttftMs);
      samples.streamTotal.push(t.totalMs);
    }
  }
}

/**
 * Concurrency 1: every round sends each variant once per mode, in a shuffled order. After each request the
 * control worker is left to finish what the request started (a main turn's session workflow), so that
 * work is not charged to whichever request comes next.
 */
async function measureSequential(rounds: number): Promise<Record<Variant, Samples>> {
  const samples = emptySamples();
  for (let round = 0; round < rounds; round++) {
    for (const { variant, mode } of shuffled(PAIRS, random)) {
      await watchingLoop(samples[variant], () => block(samples[variant], variant, mode, 1, 1));
      settledMs += (await stack?.settle(options.settleMs)) ?? 0;
    }
  }
  return samples;
}

/**
 * Concurrency c: every round runs one block of c x perLane requests per variant and mode, in a shuffled
 * order, each block starting once the control worker has been idle for `settle32Ms`.
 */
async function measureConcurrent(
  c: number,
  rounds: number,
  perLane: number,
): Promise<Record<Variant, Samples>> {
  const samples = emptySamples();
  for (let round = 0; round < rounds; round++) {
    for (const { variant, mode } of shuffled(PAIRS, random)) {
      settledMs += (await stack?.settle(options.settle32Ms)) ?? 0;
      await watchingLoop(samples[variant], () => block(samples[variant], variant, mode, c, perLane));
    }
  }
  return samples;
}

interface HandOff {
  store: string;
  /** The record with its outbox entry (create-if-absent). */
  write: number[];
  /** The whole durable write: record, entry and reply index. */
  record: number[];
  /** Engine's last byte to the answer's, main turns. */
  afterEngine: number[];
  lag: number[];
}

/** Hand-off figures gathered since the last call, per store, and side turns' time after the engine. */
function takeHandOff(): { lanes: HandOff[]; sideAfterEngine: number[] } {
  const lanes = (['file', 'postgres'] as const).map((name) => {
    const lane = stack?.[name];
    return {
      store: name,
      write: lane?.storeTimes.splice(0) ?? [],
      record: lane?.recordMs.splice(0) ?? [],
      afterEngine: lane?.afterEngineMs.main.splice(0) ?? [],
      lag: lane?.lagMs.splice(0) ?? [],
    };
  });
  const sideAfterEngine = [
    ...(stack?.file?.afterEngineMs.side.splice(0) ?? []),
    ...(stack?.postgres?.afterEngineMs.side.splice(0) ?? []),
  ];
  return { lanes, sideAfterEngine };
}

function loopFigure(h: RecordableHistogram, q: number): string {
  return h.count === 0 ? '-' : ms(h.percentile(q) / 1e6);
}

function report(title: string, samples: Record<Variant, Samples>): void {
  const count = samples.direct.json.length;
  console.log(`\n### ${title} (${count} requests per variant and mode)\n`);
  const figures: [string, (s: Samples) => number][] = [
    ['non-streaming p50', (s) => median(s.json)],
    ['non-streaming p99', (s) => p99(s.json)],
    ['stream TTFT p50', (s) => median(s.ttft)],
    ['stream TTFT p99', (s) => p99(s.ttft)],
    ['stream to [DONE] p50', (s) => median(s.streamTotal)],
    ['stream to [DONE] p99', (s) => p99(s.streamTotal)],
  ];
  const rows = figures.map(([name, f]) => {
    const [direct, rl, side, file, pg] = VARIANTS.map((v) => f(samples[v])) as [
      number,
      number,
      number,
      number,
      number,
    ];
    return [
      name,
      ms(direct),
      ms(rl),
      ms(side),
      ms(file),
      ms(pg),
      `${ratio(side / direct)} (${signedMs(side - direct)})`,
      signedMs(file - side),
      signedMs(pg - side),
    ];
  });
  printTable(
    [
      'figure',
      'direct',
      'direct+rl',
      'side',
      'main file',
      'main postgres',
      'side vs direct',
      'main file - side',
      'main postgres - side',
    ],
    rows,
  );
  console.log('');
  printTable(
    ['event-loop delay of the gateways process', ...VARIANTS],
    [50, 99, 100].map((q) => [
      q === 100 ? 'max' : `p${q}`,
      ...VARIANTS.map((v) => loopFigure(samples[v].loopDelay, q)),
    ]),
  );
  console.log('');
  const { lanes, sideAfterEngine } = takeHandOff();
  const pair = (values: number[]) => `${ms(median(values))} / ${ms(p99(values))}`;
  printTable(
    ['inside the gateway, p50 / p99', 'file', 'postgres'],
    [
      ['main: engine done -> answer sent', ...lanes.map((l) => pair(l.afterEngine))],
      ['main: whole durable write (record, entry, index)', ...lanes.map((l) => pair(l.record))],
      ['main: record + outbox entry', ...lanes.map((l) => pair(l.write))],
      ['delivery lag (entry durable -> signal accepted)', ...lanes.map((l) => pair(l.lag))],
      ['side: engine done -> answer sent', pair(sideAfterEngine), ''],
    ],
  );
  console.log(`(${lanes.map((l) => `${l.store}: ${l.record.length} main turns`).join(', ')})`);
}

async function main(): Promise<void> {
  const started = Date.now();
  console.log(
    `starting: temporal dev server, ${engineKind === 'vllm' ? 'vLLM + the reference trainer' : 'reference engine (--trainer)'} (tiny model), control worker, gateway`,
  );
  stack = await startStack({
    engineKind: engineKind as 'reference' | 'vllm',
    gateway: true,
    postgres: true,
    // Each main turn opens its own session, which stays open (no scoring runs during the measurement).
    config: {
      runId: 'bench-gateway',
      method: 'rl',
      session: { idleTimeoutMs: 3_600_000 },
      // How long the gateways' relays hold deliveries while they answer (store.outboxYieldMs).
      // The file store's turn journal (1, the default) or files before the answer (0), and PostgreSQL's pool.
      store: { outboxYieldMs: options.yieldMs, journal: options.journal === 1, poolSize: options.poolSize },
    },
  });
  if (clientsWhere === 'process') clients = await ClientProcess.start();
  console.log(`ready in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  console.log(
    `parameters: clients ${clientsWhere === 'process' ? 'in a process of their own' : "in the gateways' process"}; max_tokens ${options.maxTokens} (ignore_eos), seed ${options.seed}, temperature 1; ` +
      `concurrency 1: ${options.rounds1} rounds; concurrency 8: ${options.rounds8} rounds x ` +
      `${8 * options.perLane} requests per block; concurrency 32: ${options.rounds32} rounds x ` +
      `${32 * options.perLane} requests per block; settle: outboxes empty and control workers idle ` +
      `${options.settleMs} ms before each c1 request, ${options.settle32Ms} ms before each block; relays yield ` +
      `${options.yieldMs} ms to serving; file store journal ${options.journal === 1 ? 'on' : 'off'}; PostgreSQL pool ${options.poolSize}`,
  );

  // Same output on every path (same seed), so every path does the same engine work.
  const outputs = await Promise.all(
    VARIANTS.map(async (v) => (await runLanes([[plannedRequest(v, 'json')]]))[0] as ChatTiming),
  );
  const identical = outputs.every((o) => o.content === outputs[0]?.content);
  console.log(
    `same output on all five paths: ${identical ? 'yes' : 'NO'} (${JSON.stringify(outputs[0]?.content)})`,
  );

  // Warm-up: connection pools, the engine's first batches, the workers' first session workflows.
  await measureSequential(3);
  await measureConcurrent(32, 1, 1);
  takeHandOff();

  const c1 = await measureSequential(options.rounds1);
  report('Concurrency 1', c1);
  console.log(`(waiting for the outboxes and workers to settle: ${(settledMs / 1000).toFixed(1)} s in all)`);
  for (const [c, rounds] of [
    [8, options.rounds8],
    [32, options.rounds32],
  ] as const) {
    settledMs = 0;
    report(`Concurrency ${c}`, await measureConcurrent(c, rounds, options.perLane));
    console.log(
      `(waiting for the outboxes and workers to settle: ${(settledMs / 1000).toFixed(1)} s in all)`,
    );
  }
  console.log(`\ntotal ${((Date.now() - started) / 1000).toFixed(0)} s`);
}

const loadAtEnd = reportLoad('gateway bench');
try {
  await main();
} finally {
  clients?.close();
  await stack?.close();
}
loadAtEnd();

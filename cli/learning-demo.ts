// `openclaw-rl demo`: the learning loop, shown end to end on the embedded stack. Conversations from a fixed prompt
// list go through the gateway; each reply is rated by a deterministic style rule (core/reply-scorers.ts) centred
// on a running baseline and posted as feedback, so the run trains on it; each published version is scored on a
// held-out prompt set with fixed seeds, straight from the engine (so measuring never trains). What this shows and
// what it does not: docs/evaluation.md#the-learning-demo.
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { type Client, WorkflowNotFoundError } from '@temporalio/client';
import { z } from 'zod';
import { type OpenClawConfig, parseConfig } from '../core/config.js';
import type { EvalSetItem } from '../core/eval-set.js';
import { parsePolicyVersion } from '../core/policy-version.js';
import { type ReplyScorer, replyScorer } from '../core/reply-scorers.js';
import { policyEngineFromConfig } from '../engines/engine-adapters.js';
import { engineAuthHeaders } from '../security/engine-token.js';
import { storeFromConfig } from '../store/store-from-config.js';
import { connectClient } from '../temporal/connection.js';
import { conversePast, DemoBatchFill, type RunSampleCounts } from './demo-batch-fill.js';
import { runDev } from './dev.js';
import { readTrainingStatus } from './train-status.js';

/** Prompts the demo converses with; the rule does not depend on them, they only vary the context. */
export const DEMO_TRAIN_PROMPTS: readonly string[] = [
  'Tell me about your day.',
  'What should I cook tonight?',
  'Describe the sea.',
  'Give me a reason to go outside.',
  'What is a good book?',
  'How do plants grow?',
  'Say something kind.',
  'What is music for?',
  'Plan a short trip.',
  'Why is the sky blue?',
  'Teach me a new word.',
  'What makes a good friend?',
];

/** Held out: never rated, never trained on; written as an evaluation set (core/eval-set.ts). */
export const DEMO_HELD_OUT_PROMPTS: readonly string[] = [
  'What is the weather like?',
  'How do I cook rice?',
  'Explain gravity briefly.',
  'Write a short poem.',
  'What is your name?',
  'Give me a tip for sleep.',
  'Summarise the news.',
  'How are you today?',
];

export const demoOptionsSchema = z.strictObject({
  /** Versions to train past the base before the demo reports. */
  versions: z.number().int().min(1).max(1000),
  scorer: z.string().refine((name) => replyScorer(name) !== null, 'no such reply scorer (try style:vowels)'),
  /** Tokens per reply, in training and in measurement. */
  maxTokens: z.number().int().min(1).max(4096),
  /** Seeded replies per held-out prompt. */
  samples: z.number().int().min(1).max(100),
  /** rating = clip((score − baseline) · gain, −1, 1). */
  gain: z.number().positive(),
  /** How long to wait for a version after its batch is rated. */
  versionTimeoutMs: z.number().int().positive(),
  /** Stop the stack when done rather than keep serving. */
  exit: z.boolean(),
});
export type DemoOptions = z.output<typeof demoOptionsSchema>;

export const DEMO_DEFAULTS: DemoOptions = {
  versions: 15,
  scorer: 'style:vowels',
  maxTokens: 16,
  samples: 2,
  gain: 5,
  versionTimeoutMs: 300_000,
  exit: false,
};

/**
 * The run settings the demo trains with unless the environment or flags say otherwise: rl on the ratings
 * alone (the tiny judge cannot vote), small batches, a learning rate that moves the tiny model in a few
 * versions, temperature 1 so replies vary, and a judge kept short since it is never needed.
 */
export const DEMO_ENV_DEFAULTS: Readonly<Record<string, string>> = {
  OPENCLAW_RUN_ID: 'demo',
  OPENCLAW_METHOD: 'rl',
  OPENCLAW_BATCH_SIZE: '4',
  OPENCLAW_LEARNING_RATE: '1e-2',
  OPENCLAW_SAMPLING_TEMPERATURE: '1',
  OPENCLAW_JUDGE_VOTES: '1',
  OPENCLAW_JUDGE_MAX_TOKENS: '8',
};

export interface DemoScore {
  version: number;
  /** Mean held-out score. */
  score: number;
  /** Held-out replies scored. */
  items: number;
  at: string;
}

export interface DemoResult {
  scores: DemoScore[];
  gatewayUrl: string;
  dashboardUrl: string;
  evalSetPath: string;
}

/** The store key of a run's demo scores, for the dashboard. */
export function demoScoresKey(runId: string): string {
  return `evaluations/${runId}/demo.json`;
}

/** The held-out prompts as an evaluation set (one JSON object per line). */
export function demoEvalSet(): EvalSetItem[] {
  return DEMO_HELD_OUT_PROMPTS.map((content, index) => ({
    id: `held-out-${index + 1}`,
    messages: [{ role: 'user', content }],
    next_role: 'user',
  }));
}

/**
 * The config with the publish gate on the demo's evaluation set, scorer, reply length and samples, so every version
 * is scored before it is served (its score is in the lineage, which the dashboard plots) and one that scores below
 * the served version is held. The gate's threshold stays the configured one (OPENCLAW_GATE_THRESHOLD).
 */
export function withDemoGate(
  config: OpenClawConfig,
  evalSet: string,
  options: Pick<DemoOptions, 'scorer' | 'maxTokens' | 'samples'>,
): OpenClawConfig {
  const gate = {
    ...config.training.gate,
    evalSet,
    scorer: options.scorer,
    maxTokens: options.maxTokens,
    samples: options.samples,
  };
  const parsed = parseConfig({ ...config, training: { ...config.training, gate } });
  if (!parsed.ok) throw new Error(`the demo's publish gate: ${parsed.error}`);
  return parsed.config;
}

const chatReplySchema = z.looseObject({
  turn_id: z.string().optional(),
  choices: z
    .array(z.looseObject({ message: z.looseObject({ content: z.string().nullable().optional() }) }))
    .min(1),
});

async function postJson(url: string, body: unknown, headers: Record<string, string> = {}): Promise<unknown> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
  const text = await response.text();
  if (!response.ok) throw new Error(`${url}: HTTP ${response.status}: ${text.slice(0, 300)}`);
  return JSON.parse(text);
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Ratings centred on a running mean of the scores, so every batch has replies above and below it. */
export class RunningBaseline {
  private value: number | null = null;
  constructor(private readonly gain: number) {}
  rate(score: number): number {
    const base = this.value ?? score;
    this.value = 0.9 * base + 0.1 * score;
    return Math.max(-1, Math.min(1, (score - base) * this.gain));
  }
}

export class LearningDemo {
  readonly scorer: ReplyScorer;
  private readonly baseline: RunningBaseline;
  private readonly engine: ReturnType<typeof policyEngineFromConfig>;
  private turns = 0;
  // Sessions of this demo's own: a demo started again on the same data dir never continues an old one.
  private readonly sessionPrefix = `demo-${Date.now().toString(36)}`;

  constructor(
    private readonly config: OpenClawConfig,
    private readonly options: DemoOptions,
    private readonly gatewayUrl: string,
  ) {
    const scorer = replyScorer(options.scorer);
    if (!scorer) throw new Error(`no reply scorer ${options.scorer}`);
    this.scorer = scorer;
    this.baseline = new RunningBaseline(options.gain);
    this.engine = policyEngineFromConfig(config);
  }

  async servedVersion(): Promise<number> {
    return parsePolicyVersion(await this.engine.weightVersion()) ?? 0;
  }

  /** One conversation through the gateway, rated at once. */
  async converse(): Promise<void> {
    const index = this.turns++;
    const prompt = DEMO_TRAIN_PROMPTS[index % DEMO_TRAIN_PROMPTS.length] as string;
    const reply = chatReplySchema.parse(
      await postJson(
        `${this.gatewayUrl}/v1/chat/completions`,
        {
          model: 'policy',
          messages: [{ role: 'user', content: prompt }],
          max_tokens: this.options.maxTokens,
          temperature: 1,
          seed: 100_000 + index,
        },
        // A session of its own per conversation: the rating scores the turn at once (docs/scoring.md#feedback).
        { 'X-Session-Id': `${this.sessionPrefix}-${index}` },
      ),
    );
    if (!reply.turn_id) throw new Error('the gateway answered without a turn_id');
    const rating = this.baseline.rate(this.scorer.score(reply.choices[0]?.message.content ?? ''));
    await postJson(`${this.gatewayUrl}/v1/feedback`, { turn_id: reply.turn_id, rating });
  }

  /** The served policy's mean score on the held-out prompts, `samples` fixed seeds each, from the engine. */
  async measure(version: number): Promise<DemoScore> {
    const scores: number[] = [];
    for (const [i, content] of DEMO_HELD_OUT_PROMPTS.entries()) {
      for (let j = 0; j < this.options.samples; j++) {
        const reply = chatReplySchema.parse(
          await postJson(
            `${this.config.engine.url.replace(/\/+$/, '')}/v1/chat/completions`,
            {
              model: 'policy',
              messages: [{ role: 'user', content }],
              max_tokens: this.options.maxTokens,
              temperature: 1,
              seed: 1000 + i * 10 + j,
            },
            engineAuthHeaders(this.config),
          ),
        );
        scores.push(this.scorer.score(reply.choices[0]?.message.content ?? ''));
      }
    }
    const score = scores.reduce((a, b) => a + b, 0) / scores.length;
    return { version, score, items: scores.length, at: new Date().toISOString() };
  }

  /**
   * Converses until the served version passes `after`, then that version. How many conversations come from the
   * run's counts (cli/demo-batch-fill.ts), never from a timer: the same demo trains on the same replies however
   * long a step takes.
   */
  trainPast(after: number, fill: DemoBatchFill, counts: () => Promise<RunSampleCounts>): Promise<number> {
    return conversePast<number>(
      fill,
      {
        // The served version first: the engine serves a version before the run counts its batch trained
        // (trainAndPublish, then recordStep), so counts read after it never show a batch gone without its version.
        look: async () => {
          const version = await this.servedVersion();
          return version > after ? { arrived: version } : { counts: await counts() };
        },
        converse: () => this.converse(),
      },
      { pollMs: 250, timeoutMs: this.options.versionTimeoutMs },
      `version after ${after}`,
    );
  }
}

/** The run's sample counts; none while its training workflow has not started (it starts with its first sample). */
async function runSampleCounts(client: Client, runId: string): Promise<RunSampleCounts> {
  try {
    const status = await readTrainingStatus(client, runId);
    return {
      pending: status.pendingSamples,
      trained: status.samplesTrained,
      excluded: status.samplesExcluded,
    };
  } catch (error) {
    if (error instanceof WorkflowNotFoundError) return { pending: 0, trained: 0, excluded: 0 };
    throw error;
  }
}

async function untilGateway(url: string, dev: Promise<void>, timeoutMs: number): Promise<void> {
  let devError: unknown = null;
  let devDone = false;
  dev.then(
    () => {
      devDone = true;
    },
    (error: unknown) => {
      devDone = true;
      devError = error;
    },
  );
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (devDone) throw devError ?? new Error('the dev stack stopped before its gateway answered');
    const ok = await fetch(`${url}/healthz`).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) return;
    await sleep(300);
  }
  throw new Error(`the gateway at ${url} did not answer within ${timeoutMs} ms`);
}

export interface DemoRun {
  config: OpenClawConfig;
  options: DemoOptions;
  /** Resolves to stop serving (after the scores, unless `exit`). */
  stop: Promise<void>;
  say?: (line: string) => void;
}

/** Runs the demo; resolves after the scores with `exit`, or once `stop` resolves. */
export async function runLearningDemo(run: DemoRun): Promise<DemoResult> {
  const options = demoOptionsSchema.parse(run.options);
  const say = run.say ?? ((line: string) => console.log(line));
  const evalSetPath = join(run.config.dataDir, 'demo', 'held-out.jsonl');
  await mkdir(join(run.config.dataDir, 'demo'), { recursive: true });
  await writeFile(
    evalSetPath,
    `${demoEvalSet()
      .map((item) => JSON.stringify(item))
      .join('\n')}\n`,
  );
  const config = withDemoGate(run.config, evalSetPath, options);

  const host = config.gateway.host === '0.0.0.0' ? '127.0.0.1' : config.gateway.host;
  const gatewayUrl = `http://${host}:${config.gateway.port}`;
  let release: () => void = () => {};
  const released = new Promise<void>((resolve) => {
    release = resolve;
  });
  const dev = runDev(config, released);
  const store = storeFromConfig(config);
  try {
    await untilGateway(gatewayUrl, dev, 600_000);
    const demo = new LearningDemo(config, options, gatewayUrl);
    say(
      `demo: rating replies by ${options.scorer} (${demo.scorer.description}); batch ${config.training.batchSize}, learning rate ${config.training.learningRate}`,
    );
    const scores: DemoScore[] = [];
    const record = async (score: DemoScore) => {
      scores.push(score);
      say(`version ${score.version}  score ${score.score.toFixed(3)}  (${score.items} held-out replies)`);
      await store.put(demoScoresKey(config.runId), scores);
    };
    const temporal = await connectClient(config);
    try {
      const counts = () => runSampleCounts(temporal.client, config.runId);
      const fill = new DemoBatchFill(await counts(), config.training.batchSize);
      let version = await demo.servedVersion();
      await record(await demo.measure(version));
      const last = version + options.versions;
      while (version < last) {
        version = await demo.trainPast(version, fill, counts);
        await record(await demo.measure(version));
      }
    } finally {
      await temporal.close();
    }
    const dashboardUrl = `${gatewayUrl}/dashboard`;
    say(`scores ${scores.map((s) => `v${s.version}=${s.score.toFixed(3)}`).join(' ')}`);
    say(`held-out set ${evalSetPath}`);
    say(`dashboard ${dashboardUrl}`);
    if (!options.exit) {
      say('serving until stopped (Ctrl-C)');
      await Promise.race([run.stop, dev]);
    }
    return { scores, gatewayUrl, dashboardUrl, evalSetPath };
  } finally {
    release();
    await dev.catch((error: Error) => say(`stopping: ${error.message}`));
    await store.close?.();
  }
}

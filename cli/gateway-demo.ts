// `openclaw-rl demo --gateway-url URL`: the learning demo against a gateway that is already running (compose's,
// started with docker-compose.demo.yml), through its public HTTP API only. The same conversations and ratings as
// on the embedded stack (cli/learning-demo.ts); the scores it prints are the publish gate's, read from the run's
// lineage through the dashboard API (/dashboard/api/runs/<run>), so they are the numbers the dashboard plots.
import { z } from 'zod';
import { type ReplyScorer, replyScorer } from '../core/reply-scorers.js';
import { conversePast, DemoBatchFill, type RunSampleCounts } from './demo-batch-fill.js';
import { DEMO_TRAIN_PROMPTS, RunningBaseline } from './learning-demo.js';

export interface GatewayDemoOptions {
  gatewayUrl: string;
  apiKey: string;
  /** Versions to see past the served one before the demo reports. */
  versions: number;
  scorer: string;
  maxTokens: number;
  gain: number;
  /** Conversations per training step (the stack's batch size). */
  batchSize: number;
  versionTimeoutMs: number;
  /** How long to wait for the gateway to answer its health check. */
  startTimeoutMs?: number;
}

/** One version's score as the publish gate recorded it. */
export interface GateScore {
  version: number;
  score: number;
  /** Held-out conversations scored. */
  items: number;
  decision: 'served' | 'held' | 'base';
  scorer: string;
}

export interface GatewayDemoResult {
  runId: string;
  scores: GateScore[];
  dashboardUrl: string;
}

const evaluationSchema = z.looseObject({
  score: z.number(),
  baseline: z.number().nullable(),
  baselineVersion: z.number().nullable(),
  decision: z.enum(['served', 'held']),
  items: z.number(),
  scorer: z.string(),
});

/** What the demo reads of the dashboard API's run view (gateway/dashboard/run-view.ts). */
const runViewSchema = z.looseObject({
  runId: z.string(),
  status: z
    .looseObject({
      servedVersion: z.number().nullable(),
      policyVersion: z.number(),
      pendingSamples: z.number(),
      samplesTrained: z.number(),
      samplesExcluded: z.number(),
    })
    .nullable(),
  versions: z.array(z.looseObject({ version: z.number(), evaluation: evaluationSchema.nullable() })),
});
export type DemoRunView = z.output<typeof runViewSchema>;

const runsSchema = z.looseObject({
  data: z.array(z.looseObject({ runId: z.string(), tenant: z.string().nullable() })).min(1),
});

const chatReplySchema = z.looseObject({
  turn_id: z.string().optional(),
  choices: z
    .array(z.looseObject({ message: z.looseObject({ content: z.string().nullable().optional() }) }))
    .min(1),
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The gateway's HTTP API as the demo uses it: chat, feedback and the dashboard's run view, with the key. */
class GatewayClient {
  constructor(
    readonly baseUrl: string,
    private readonly apiKey: string,
  ) {}

  private async request(path: string, init: RequestInit = {}): Promise<unknown> {
    const response = await fetch(`${this.baseUrl}${path}`, {
      ...init,
      headers: {
        authorization: `Bearer ${this.apiKey}`,
        ...(init.body !== undefined && { 'content-type': 'application/json' }),
        ...(init.headers as Record<string, string> | undefined),
      },
    });
    const text = await response.text();
    if (!response.ok)
      throw new Error(`${init.method ?? 'GET'} ${path}: HTTP ${response.status}: ${text.slice(0, 300)}`);
    return JSON.parse(text);
  }

  post(path: string, body: unknown, headers: Record<string, string> = {}): Promise<unknown> {
    return this.request(path, { method: 'POST', body: JSON.stringify(body), headers });
  }

  async healthy(): Promise<boolean> {
    return fetch(`${this.baseUrl}/healthz`, { signal: AbortSignal.timeout(5_000) }).then(
      (r) => r.ok,
      () => false,
    );
  }

  /** The shared run the gateway records for (the first run the dashboard lists). */
  async sharedRunId(): Promise<string> {
    const runs = runsSchema.parse(await this.request('/dashboard/api/runs'));
    const shared = runs.data.find((run) => run.tenant === null) ?? runs.data[0];
    return (shared as { runId: string }).runId;
  }

  async runView(runId: string): Promise<DemoRunView> {
    return runViewSchema.parse(await this.request(`/dashboard/api/runs/${encodeURIComponent(runId)}`));
  }
}

/**
 * The gate's scores in a run view, one per version, the base (or whatever version the first verdict compared
 * with) from the first verdict's baseline. Versions without a verdict are left out.
 */
export function gateScores(view: DemoRunView): GateScore[] {
  const scores = new Map<number, GateScore>();
  for (const { version, evaluation } of [...view.versions].sort((a, b) => a.version - b.version)) {
    if (!evaluation) continue;
    const { baselineVersion, baseline } = evaluation;
    if (baselineVersion !== null && baseline !== null && !scores.has(baselineVersion))
      scores.set(baselineVersion, {
        version: baselineVersion,
        score: baseline,
        items: evaluation.items,
        decision: 'base',
        scorer: evaluation.scorer,
      });
    scores.set(version, {
      version,
      score: evaluation.score,
      items: evaluation.items,
      decision: evaluation.decision,
      scorer: evaluation.scorer,
    });
  }
  return [...scores.values()].sort((a, b) => a.version - b.version);
}

/**
 * The run's sample counts. A run whose training workflow has not started (it starts with its first scored sample)
 * has none yet; one that does not answer for a moment counts as none too, which only makes the demo wait.
 */
function sampleCounts(view: DemoRunView): RunSampleCounts {
  const { status } = view;
  if (status === null) return { pending: 0, trained: 0, excluded: 0 };
  return { pending: status.pendingSamples, trained: status.samplesTrained, excluded: status.samplesExcluded };
}

/** The newest version in the run's lineage (0: none yet). */
function newestVersion(view: DemoRunView): number {
  return view.versions.reduce((max, v) => Math.max(max, v.version), 0);
}

export class GatewayDemo {
  readonly scorer: ReplyScorer;
  readonly gateway: GatewayClient;
  private readonly baseline: RunningBaseline;
  private turns = 0;
  // Sessions of this demo's own: a demo started again on the same stack never continues an old one.
  private readonly sessionPrefix = `demo-${Date.now().toString(36)}`;

  constructor(private readonly options: GatewayDemoOptions) {
    const scorer = replyScorer(options.scorer);
    if (!scorer) throw new Error(`no reply scorer ${options.scorer}`);
    this.scorer = scorer;
    this.baseline = new RunningBaseline(options.gain);
    this.gateway = new GatewayClient(options.gatewayUrl.replace(/\/+$/, ''), options.apiKey);
  }

  /** One conversation through the gateway, rated at once by the style rule. */
  async converse(): Promise<void> {
    const index = this.turns++;
    const prompt = DEMO_TRAIN_PROMPTS[index % DEMO_TRAIN_PROMPTS.length] as string;
    const reply = chatReplySchema.parse(
      await this.gateway.post(
        '/v1/chat/completions',
        {
          model: 'policy',
          messages: [{ role: 'user', content: prompt }],
          max_tokens: this.options.maxTokens,
          temperature: 1,
          seed: 100_000 + index,
        },
        { 'X-Session-Id': `${this.sessionPrefix}-${index}` },
      ),
    );
    if (!reply.turn_id) throw new Error('the gateway answered without a turn_id');
    const rating = this.baseline.rate(this.scorer.score(reply.choices[0]?.message.content ?? ''));
    await this.gateway.post('/v1/feedback', { turn_id: reply.turn_id, rating });
  }

  /**
   * Converses until the run's lineage has a version past `after`, then returns the view. How many conversations
   * come from the run's counts (cli/demo-batch-fill.ts), never from a timer: the same demo trains on the same
   * replies however long a step takes.
   */
  trainPast(runId: string, after: number, fill: DemoBatchFill): Promise<DemoRunView> {
    return conversePast<DemoRunView>(
      fill,
      {
        look: async () => {
          const view = await this.gateway.runView(runId);
          return newestVersion(view) > after ? { arrived: view } : { counts: sampleCounts(view) };
        },
        converse: () => this.converse(),
      },
      { pollMs: 500, timeoutMs: this.options.versionTimeoutMs },
      `version after v${after}`,
    );
  }

  /**
   * The run's counts before the demo's first conversation: none for a run that has not trained yet, else once its
   * training workflow answers.
   */
  async startingCounts(
    runId: string,
    deadline: number,
  ): Promise<{ view: DemoRunView; counts: RunSampleCounts }> {
    for (;;) {
      const view = await this.gateway.runView(runId);
      if (view.status !== null || view.versions.length === 0) return { view, counts: sampleCounts(view) };
      if (Date.now() > deadline) throw new Error(`run ${runId}: its training workflow does not answer`);
      await sleep(1_000);
    }
  }
}

/** Runs the demo against `options.gatewayUrl`; resolves once `versions` new versions have their gate scores. */
export async function runGatewayDemo(
  options: GatewayDemoOptions,
  say: (line: string) => void = (line) => console.log(line),
): Promise<GatewayDemoResult> {
  const demo = new GatewayDemo(options);
  const { gateway } = demo;
  const startDeadline = Date.now() + (options.startTimeoutMs ?? 300_000);
  while (!(await gateway.healthy())) {
    if (Date.now() > startDeadline)
      throw new Error(`the gateway at ${gateway.baseUrl} does not answer /healthz`);
    await sleep(1_000);
  }
  const runId = await gateway.sharedRunId();
  const start = await demo.startingCounts(runId, startDeadline);
  let view = start.view;
  const fill = new DemoBatchFill(start.counts, options.batchSize);
  say(
    `demo: ${gateway.baseUrl}, run ${runId}: rating replies by ${options.scorer} (${demo.scorer.description}), ${options.batchSize} per step`,
  );
  const printed = new Set<number>();
  const report = () => {
    for (const score of gateScores(view)) {
      if (printed.has(score.version)) continue;
      printed.add(score.version);
      say(
        `version ${score.version}  score ${score.score.toFixed(3)}  (publish gate, ${score.scorer}, ${score.items} held-out prompts, ${score.decision})`,
      );
    }
  };
  report();
  let version = newestVersion(view);
  const last = version + options.versions;
  while (version < last) {
    view = await demo.trainPast(runId, version, fill);
    const newest = newestVersion(view);
    if (!view.versions.some((v) => v.version > version && v.evaluation))
      throw new Error(
        `v${newest} has no publish-gate score: the stack runs without a gate (training.gate.evalSet); start compose with docker-compose.demo.yml`,
      );
    version = newest;
    report();
  }
  const scores = gateScores(view);
  const dashboardUrl = `${gateway.baseUrl}/dashboard`;
  say(`scores ${scores.map((s) => `v${s.version}=${s.score.toFixed(3)}`).join(' ')}`);
  say(`dashboard ${dashboardUrl}`);
  return { runId, scores, dashboardUrl };
}

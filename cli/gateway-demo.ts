// `openclaw-rl demo --gateway-url URL`: the learning demo against a gateway that is already running (compose's,
// started with docker-compose.demo.yml), through its public HTTP API only. The same conversations and ratings as
// on the embedded stack (cli/learning-demo.ts); the scores it prints are the publish gate's, read from the run's
// lineage through the dashboard API (/dashboard/api/runs/<run>), so they are the numbers the dashboard plots.
import { z } from 'zod';
import { type ReplyScorer, replyScorer } from '../core/reply-scorers.js';
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
  status: z.looseObject({ servedVersion: z.number().nullable(), policyVersion: z.number() }).nullable(),
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
   * Converses until the run's lineage has a version past `after`, then returns the view. A batch first, then one
   * at a time while none comes (a neutral rating trains nothing, so a batch may need more).
   */
  async trainPast(runId: string, after: number): Promise<DemoRunView> {
    const deadline = Date.now() + this.options.versionTimeoutMs;
    let toSend = this.options.batchSize;
    while (Date.now() < deadline) {
      if (toSend > 0) {
        await this.converse();
        toSend--;
        continue;
      }
      const waitUntil = Math.min(deadline, Date.now() + 5_000);
      while (Date.now() < waitUntil) {
        const view = await this.gateway.runView(runId);
        if (newestVersion(view) > after) return view;
        await sleep(500);
      }
      toSend = 1;
    }
    throw new Error(`no version after v${after} within ${this.options.versionTimeoutMs} ms`);
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
  let view = await gateway.runView(runId);
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
    view = await demo.trainPast(runId, version);
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

// Track 2 commands: `worker env` (an env host), `rollout` (one rollout through Temporal), and `agentic
// start|status|pause|resume` (the Track 2 training loop). `registerTrack2Commands(program)` adds them to the
// `openclaw-rl` program; the functions below them are what the commands run, and what tests call.
import { existsSync } from 'node:fs';
import { hostname } from 'node:os';
import { resolve } from 'node:path';
import type { Client, WorkflowHandle } from '@temporalio/client';
// The client's own converter (its codec included) decodes heartbeat details; the SDK exports it only here.
import { decodeFromPayloadsAtIndex } from '@temporalio/common/lib/internal-non-workflow/index.js';
import { type Command, Option } from 'commander';
import { OpenAIJudge } from '../activities/judge-client.js';
import type { RolloutHeartbeat } from '../activities/policy-step.js';
import type { OpenClawConfig } from '../core/config.js';
import { agenticTrainingInputSchema, envRolloutInputSchema } from '../core/rollout-settings.js';
import { describeZodError } from '../core/training-settings.js';
import { createEnvironmentRegistry } from '../environments/registry.js';
import type { SandboxProvider } from '../environments/sandbox.js';
import { parseWarmPoolSizes, type WarmPoolSettingsInput } from '../environments/warm-pool.js';
import { engineAuthHeaders, judgeApiKey } from '../security/engine-token.js';
import { storeFromConfig } from '../store/store-from-config.js';
import { connectClient, connectWorker } from '../temporal/connection.js';
import { ENV_TASK_QUEUE } from '../temporal/task-queues.js';
import { agenticWorkflowId, envRolloutWorkflowId } from '../temporal/workflow-ids.js';
import { executeEnvRollout, startAgenticRun, startEnvRollout } from '../temporal/workflow-starts.js';
import { createEnvWorkers } from '../workers/env-worker.js';
import type { EpisodeProgress } from '../workflows/agentic-signals.js';
import {
  type AgenticStatus,
  type AgenticTrainingInput,
  agenticStatusQuery,
  type EnvRolloutInput,
  type EnvRolloutResult,
  pauseAgenticUpdate,
  resumeAgenticUpdate,
} from '../workflows/agentic-signals.js';
import { configFromFlags } from './cli-config.js';
import { drawsProgress, type ProgressStream, progressBar } from './progress.js';

export interface Track2Options {
  /** The sandbox provider of `worker env` (the Docker one); without it the host serves container-free kinds. */
  sandboxProvider?: (settings: { warmPool?: WarmPoolSettingsInput }) => Promise<SandboxProvider | null>;
}

function untilStopped(): Promise<void> {
  return new Promise((done) => {
    process.once('SIGINT', () => done());
    process.once('SIGTERM', () => done());
  });
}

function integer(flag: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const parsed = Number(value);
  if (!Number.isInteger(parsed)) throw new Error(`${flag} must be an integer, got "${value}"`);
  return parsed;
}

// ------------------------------------------------------------------------------------------- rollout
export interface RolloutFlags {
  env: string;
  task: string;
  policyUrl: string;
  policyModel?: string;
  mode?: string;
  maxTurns?: string;
  rolloutId?: string;
  envQueue?: string;
}

/** The rollout's start input from the flags; a task that names an existing file is passed as its full path. */
export function rolloutInputFromFlags(flags: RolloutFlags, now = Date.now()): EnvRolloutInput {
  const taskId = existsSync(flags.task) ? resolve(flags.task) : flags.task;
  const input: EnvRolloutInput = {
    rolloutId: flags.rolloutId ?? `cli-${flags.env}-${now.toString(36)}`,
    env: flags.env,
    taskId,
    policy: {
      url: flags.policyUrl,
      ...(flags.policyModel !== undefined && { model: flags.policyModel }),
      ...(flags.mode !== undefined && { mode: flags.mode as 'engine' | 'gateway' }),
    },
    ...(flags.maxTurns !== undefined && { maxTurns: integer('--max-turns', flags.maxTurns) }),
    ...(flags.envQueue !== undefined && { envTaskQueue: flags.envQueue }),
  };
  const checked = envRolloutInputSchema.safeParse(input);
  if (!checked.success) throw new Error(`invalid rollout: ${describeZodError(checked.error)}`);
  return input;
}

/** Runs one rollout on the workflow queue and waits for its result. */
export async function runRollout(
  client: Client,
  taskQueue: string,
  input: EnvRolloutInput,
): Promise<EnvRolloutResult> {
  return executeEnvRollout(client, taskQueue, input);
}

/** Turns a rollout has finished (its completed policy steps) and the activity it is on, from its history. */
export async function rolloutTurns(handle: WorkflowHandle): Promise<{ turns: number; activity: string }> {
  const history = await handle.fetchHistory();
  const scheduled = new Map<string, string>();
  let turns = 0;
  let activity = 'starting';
  for (const event of history.events ?? []) {
    const started = event.activityTaskScheduledEventAttributes;
    if (started) {
      activity = started.activityType?.name ?? activity;
      scheduled.set(String(event.eventId), activity);
    }
    const completed = event.activityTaskCompletedEventAttributes;
    if (completed && scheduled.get(String(completed.scheduledEventId)) === 'policyStep') turns++;
  }
  // An episode's loop runs inside one activity (startEpisode or runEpisode): where it is comes from that
  // activity's last heartbeat.
  const looping = await loopProgress(handle).catch(() => null);
  if (looping) return { turns: turns + looping.turns, activity: looping.phase };
  return { turns, activity };
}

async function loopProgress(handle: WorkflowHandle): Promise<EpisodeProgress | null> {
  const description = await handle.describe();
  for (const pending of description.raw.pendingActivities ?? []) {
    const payloads = pending.heartbeatDetails?.payloads;
    if (!payloads?.length) continue;
    const detail = await decodeFromPayloadsAtIndex<RolloutHeartbeat | string>(
      handle.client.options.loadedDataConverter,
      0,
      payloads,
    );
    if (typeof detail === 'object' && detail?.progress) return detail.progress;
  }
  return null;
}

/**
 * `runRollout` with a bar of the turns done (of maxTurns) and the activity the rollout is on, read from its
 * history every `intervalMs`; without a bar it is `runRollout`.
 */
export async function runRolloutWithProgress(
  client: Client,
  taskQueue: string,
  input: EnvRolloutInput,
  progress: { stream?: ProgressStream; enabled?: boolean; intervalMs?: number },
): Promise<EnvRolloutResult> {
  const bar = progressBar(
    `${envRolloutWorkflowId(input.rolloutId)} |{bar}| {value}/{total} turns | {activity}`,
    progress,
  );
  if (!bar.drawing) return runRollout(client, taskQueue, input);
  const maxTurns = envRolloutInputSchema.parse(input).maxTurns;
  try {
    const handle = await startEnvRollout(client, taskQueue, input);
    let finished = false;
    const result = (handle.result() as Promise<EnvRolloutResult>).finally(() => {
      finished = true;
    });
    while (!finished) {
      const seen = await rolloutTurns(handle).catch(() => null);
      if (seen) bar.update(seen.turns, maxTurns, { activity: seen.activity });
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        result.catch(() => undefined),
        new Promise((done) => (timer = setTimeout(done, progress.intervalMs ?? 1_000))),
      ]);
      clearTimeout(timer);
    }
    const out = await result;
    bar.update(out.steps, maxTurns, { activity: out.status });
    return out;
  } finally {
    bar.stop();
  }
}

export function formatRolloutResult(result: EnvRolloutResult): string {
  return [
    `rollout ${result.rolloutId}: ${result.status}`,
    `reward      ${result.reward ?? '-'}`,
    `steps       ${result.steps}${result.parseErrors > 0 ? ` (${result.parseErrors} parse errors)` : ''}`,
    `containers  ${result.containerIds.join(', ') || '-'}`,
    `hosts       ${result.hostIds.join(', ') || '-'}`,
    `detail      ${result.detail}`,
  ].join('\n');
}

// ------------------------------------------------------------------------------------------- agentic
export interface AgenticStartFlags {
  run?: string;
  env?: string;
  tasks?: string;
  taskSet?: string;
  tasksPerStep?: string;
  samplesPerTask?: string;
  rolloutsInFlight?: string;
  rolloutsAs?: string;
  steps?: string;
  policyUrl?: string;
  policyModel?: string;
  mode?: string;
  maxTurns?: string;
  envQueue?: string;
  trainQueue?: string;
  input?: string;
}

/** The run's start input: the `--input` JSON object (if any) with the flags on top, validated. */
export function agenticInputFromFlags(flags: AgenticStartFlags, fromFile: Record<string, unknown> = {}) {
  const input: Record<string, unknown> = { ...fromFile };
  if (flags.run !== undefined) input.runId = flags.run;
  if (flags.env !== undefined) input.env = flags.env;
  if (flags.tasks !== undefined) input.taskIds = flags.tasks.split(',').filter(Boolean);
  if (flags.taskSet !== undefined) {
    const limit = integer('--task-set', flags.taskSet === 'all' ? undefined : flags.taskSet);
    input.taskSet = { source: 'all', ...(limit !== undefined && { limit }) };
  }
  const numbers: [keyof AgenticStartFlags, string][] = [
    ['tasksPerStep', 'tasksPerStep'],
    ['samplesPerTask', 'samplesPerTask'],
    ['rolloutsInFlight', 'rolloutsInFlight'],
    ['steps', 'steps'],
    ['maxTurns', 'maxTurns'],
  ];
  for (const [flag, key] of numbers) {
    const value = integer(`--${flag}`, flags[flag]);
    if (value !== undefined) input[key] = value;
  }
  if (flags.policyUrl !== undefined || flags.policyModel !== undefined || flags.mode !== undefined) {
    input.policy = {
      ...(input.policy as object | undefined),
      ...(flags.policyUrl !== undefined && { url: flags.policyUrl }),
      ...(flags.policyModel !== undefined && { model: flags.policyModel }),
      ...(flags.mode !== undefined && { mode: flags.mode }),
    };
  }
  if (flags.rolloutsAs !== undefined) input.rolloutsAs = flags.rolloutsAs;
  if (flags.envQueue !== undefined) input.envTaskQueue = flags.envQueue;
  if (flags.trainQueue !== undefined)
    input.training = { ...(input.training as object | undefined), taskQueue: flags.trainQueue };
  const checked = agenticTrainingInputSchema.safeParse(input);
  if (!checked.success) throw new Error(`invalid agentic run: ${describeZodError(checked.error)}`);
  return input as AgenticTrainingInput;
}

export function readAgenticStatus(client: Client, runId: string): Promise<AgenticStatus> {
  return client.workflow.getHandle(agenticWorkflowId(runId)).query(agenticStatusQuery);
}

export function formatAgenticStatus(status: AgenticStatus): string {
  const r = status.rollouts;
  const reward = (value: number | null) => (value === null ? '-' : value.toFixed(3));
  const lines = [
    `run ${status.runId} (${status.env})${status.paused ? ' — PAUSED' : ''}: ${status.phase}`,
    `step            ${Math.min(status.step + 1, status.steps)} of ${status.steps} (${status.stepsCompleted} done)`,
    `policy version  ${status.policyVersion}`,
    `rollouts        ${r.done}/${r.total} done, ${r.failed} failed, ${r.inFlight} in flight, ${r.retried} retried`,
    `mean reward     ${reward(status.meanReward)}`,
  ];
  const last = status.lastStep;
  if (last) {
    const counts = Object.entries(last.byStatus)
      .map(([name, n]) => `${name.toLowerCase()} ${n}`)
      .join(', ');
    lines.push(
      `last step       ${last.stepId}: ${counts}; groups ${last.groups} (${last.groupsConstant} constant, ${last.groupsFailed} failed); ${last.samplesTrained} samples trained; mean reward ${reward(last.meanReward)}`,
    );
  }
  return lines.join('\n');
}

/**
 * Follows a run until it is done (or `stop` resolves): a progress bar of the step's rollouts on a terminal,
 * one status line per change elsewhere.
 */
export async function watchAgenticRun(
  read: () => Promise<AgenticStatus>,
  options: { stream?: NodeJS.WriteStream; intervalMs?: number; stop?: Promise<void> } = {},
): Promise<AgenticStatus> {
  const stream = options.stream ?? process.stderr;
  const bar = progressBar(
    'step {step} |{bar}| {value}/{total} rollouts | {phase} | failed {failed} | reward {reward} | v{version}',
    { stream },
  );
  let stopped = false;
  void options.stop?.then(() => {
    stopped = true;
  });
  let lastLine = '';
  try {
    for (;;) {
      const status = await read();
      const payload = {
        step: `${Math.min(status.step + 1, status.steps)}/${status.steps}`,
        phase: status.phase,
        failed: status.rollouts.failed,
        reward: status.meanReward === null ? '-' : status.meanReward.toFixed(3),
        version: status.policyVersion,
      };
      if (bar.drawing) bar.update(status.rollouts.done, Math.max(1, status.rollouts.total), payload);
      else {
        const line = `step ${payload.step} ${status.rollouts.done}/${status.rollouts.total} rollouts ${payload.phase} failed ${payload.failed} reward ${payload.reward} v${payload.version}`;
        if (line !== lastLine) stream.write(`${line}\n`);
        lastLine = line;
      }
      if (status.phase === 'done' || stopped) {
        return status;
      }
      await new Promise((done) => setTimeout(done, options.intervalMs ?? 1000));
    }
  } finally {
    bar.stop();
  }
}

// ------------------------------------------------------------------------------------------- env worker
export interface EnvWorkerFlags {
  hostId?: string;
  temporalAddress?: string;
  dataDir?: string;
  envQueue?: string;
  judgeUrl?: string;
  judgeModel?: string;
  judgeApiKey?: string;
  policyApiKey?: string;
  maxActivities?: string;
  reapIntervalMs?: string;
  warmPool?: string;
  envOptions?: string;
}

/** The kinds' options (`{"swe": {"instancesFile": ...}, "terminal": {...}}`) from a JSON object. */
export function parseEnvOptions(text: string | undefined): Record<string, unknown> {
  if (text === undefined || text.trim() === '') return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw new Error(`--env-options is not valid JSON: ${(error as Error).message}`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
    throw new Error('--env-options must be a JSON object keyed by environment kind');
  return parsed as Record<string, unknown>;
}

/**
 * The step judge at `judgeUrl`: `--judge-api-key`, else the config's judge key, else the engine token when the
 * URL is one of the project's own engines (a guarded frozen judge engine).
 */
export function stepJudge(
  config: OpenClawConfig,
  judgeUrl: string,
  flags: Pick<EnvWorkerFlags, 'judgeModel' | 'judgeApiKey'> = {},
): OpenAIJudge {
  return new OpenAIJudge({
    baseUrl: judgeUrl,
    model: flags.judgeModel ?? config.judge.model,
    apiKey: flags.judgeApiKey ?? judgeApiKey(config, judgeUrl),
    temperature: config.judge.temperature,
    maxTokens: config.judge.maxTokens,
  });
}

/** Runs an env host until Ctrl-C: the shared-queue worker, the host-queue worker, the lease reaper. */
export async function runEnvWorker(flags: EnvWorkerFlags, options: Track2Options = {}): Promise<void> {
  const config = configFromFlags({ temporalAddress: flags.temporalAddress, dataDir: flags.dataDir });
  const hostId =
    flags.hostId ?? process.env.OPENCLAW_ENV_HOST_ID ?? hostname().replace(/[^A-Za-z0-9._-]/g, '-');
  const warmPool = flags.warmPool
    ? {
        name: hostId.replace(/^[^A-Za-z0-9]+/, '').slice(0, 61) || 'pool',
        sizes: parseWarmPoolSizes(flags.warmPool),
      }
    : undefined;
  const provider = options.sandboxProvider ? await options.sandboxProvider({ warmPool }) : null;
  const maxActivities = integer('--max-activities', flags.maxActivities) ?? 200;
  const reapIntervalMs = integer(
    '--reap-interval-ms',
    flags.reapIntervalMs ?? process.env.OPENCLAW_REAP_INTERVAL_MS,
  );
  if (reapIntervalMs !== undefined && reapIntervalMs < 0)
    throw new Error(`--reap-interval-ms must be 0 (off) or more, got ${reapIntervalMs}`);
  const judgeUrl = flags.judgeUrl ?? process.env.OPENCLAW_JUDGE_URL;
  const connection = await connectWorker(config);
  const store = storeFromConfig(config);
  const workers = await createEnvWorkers({
    connection,
    namespace: config.temporal.namespace,
    hostId,
    provider,
    registry: createEnvironmentRegistry(
      parseEnvOptions(flags.envOptions ?? process.env.OPENCLAW_ENV_OPTIONS),
    ),
    store,
    sharedTaskQueue: flags.envQueue ?? ENV_TASK_QUEUE,
    policyApiKey: flags.policyApiKey ?? process.env.OPENCLAW_POLICY_API_KEY,
    engineHeaders: engineAuthHeaders(config),
    ...(judgeUrl && { judge: stepJudge(config, judgeUrl, flags) }),
    ...(reapIntervalMs !== undefined && { reapIntervalMs }),
    sharedWorkerOptions: { maxConcurrentActivityTaskExecutions: maxActivities },
    hostWorkerOptions: { maxConcurrentActivityTaskExecutions: maxActivities },
  });
  console.log(
    `env host ${hostId} on ${workers.sharedTaskQueue} and ${workers.hostTaskQueue} at ${config.temporal.address}` +
      ` (${provider ? 'containers' : 'container-free kinds only'})`,
  );
  const running = workers.run();
  await Promise.race([untilStopped(), running]);
  workers.shutdown();
  await running.catch(() => undefined);
  await provider?.close?.();
  await connection.close();
  await store.close?.();
}

// ------------------------------------------------------------------------------------------- commands
const temporalOption = () =>
  new Option(
    '--temporal-address <host:port>',
    'Temporal frontend (TEMPORAL_ADDRESS; default 127.0.0.1:7233)',
  );
const queueOption = () =>
  new Option('--task-queue <queue>', 'queue the workflows run on (the control worker; default control)');

export function registerTrack2Commands(program: Command, options: Track2Options = {}): void {
  const worker =
    program.commands.find((c) => c.name() === 'worker') ??
    program.command('worker').description('run a worker');
  worker
    .command('env')
    .description('run an env host: acquires sandboxes on the shared env queue, runs rollout steps on its own')
    .addOption(new Option('--host-id <id>', 'stable host id (OPENCLAW_ENV_HOST_ID; default the host name)'))
    .addOption(temporalOption())
    .addOption(
      new Option('--data-dir <dir>', 'sample store under <dir>/store (OPENCLAW_DATA_DIR; default data)'),
    )
    .addOption(new Option('--env-queue <queue>', 'shared env queue (default env)'))
    .addOption(new Option('--judge-url <url>', 'OpenAI-compatible judge for step votes (OPENCLAW_JUDGE_URL)'))
    .addOption(new Option('--judge-model <name>', 'judge model name'))
    .addOption(new Option('--judge-api-key <key>', 'judge bearer key'))
    .addOption(
      new Option('--policy-api-key <key>', 'bearer key for a gateway policy (OPENCLAW_POLICY_API_KEY)'),
    )
    .addOption(new Option('--max-activities <n>', 'concurrent activities per worker (default 200)'))
    .addOption(
      new Option(
        '--env-options <json>',
        'options of the environment kinds, e.g. {"swe":{"instancesFile":"rows.jsonl"}} (OPENCLAW_ENV_OPTIONS)',
      ),
    )
    .addOption(
      new Option('--warm-pool <image=N,...>', 'started containers kept ready per image (default none)'),
    )
    .addOption(
      new Option(
        '--reap-interval-ms <ms>',
        'how often expired sandboxes are removed (OPENCLAW_REAP_INTERVAL_MS; default 60000, 0 off)',
      ),
    )
    // `worker` (the control worker's command) has flags of the same names, and commander gives a flag to the
    // parent when both have it: read the parent's too, this command's own winning.
    .action((_flags: EnvWorkerFlags, command: Command) =>
      runEnvWorker(command.optsWithGlobals<EnvWorkerFlags>(), options),
    );

  program
    .command('rollout')
    .description('run one rollout through Temporal and print its status, reward, steps and containers')
    .requiredOption('--env <kind>', 'environment kind (e.g. arith, toolcall)')
    .requiredOption('--task <id|path>', 'task id, or a path to a task file the env hosts can read')
    .requiredOption('--policy-url <url>', 'the policy engine (or gateway) base URL')
    .option('--policy-model <name>', 'model name sent to the policy')
    .option('--mode <mode>', 'engine | gateway (default engine)')
    .option('--max-turns <n>', 'model turns before TRUNCATED (default 10)')
    .option('--rollout-id <id>', 'rollout id (default cli-<env>-<time>)')
    .option('--env-queue <queue>', 'shared env queue (default env)')
    .addOption(queueOption())
    .addOption(temporalOption())
    .option('--json', 'print the result as JSON')
    .option('--no-progress', 'no progress bar on stderr (drawn only on a terminal, never with --json)')
    .action(
      async (
        flags: RolloutFlags & {
          taskQueue?: string;
          temporalAddress?: string;
          json?: boolean;
          progress?: boolean;
        },
      ) => {
        const config = configFromFlags({ temporalAddress: flags.temporalAddress });
        const { client, close } = await connectClient(config);
        try {
          const result = await runRolloutWithProgress(
            client,
            flags.taskQueue ?? config.temporal.taskQueue,
            rolloutInputFromFlags(flags),
            { enabled: drawsProgress(flags) },
          );
          console.log(flags.json ? JSON.stringify(result, null, 2) : formatRolloutResult(result));
          if (result.status === 'FAILED') process.exitCode = 2;
        } finally {
          await close();
        }
      },
    );

  const agentic = program.command('agentic').description('start, follow and steer a Track 2 training run');
  agentic
    .command('start')
    .description(
      'start agentic-<runId> (flags on top of an optional --input JSON, the same object the UI takes)',
    )
    .option('--input <file>', 'JSON start input')
    .option('--run <id>', 'run id')
    .option('--env <kind>', 'environment kind')
    .option('--tasks <ids>', 'comma-separated task ids')
    .option('--task-set <all|N>', 'every task the environment lists (or the first N)')
    .option('--tasks-per-step <n>', 'tasks per training step (default: all)')
    .option('--samples-per-task <n>', 'rollouts per task: the GRPO group size (default 4)')
    .option('--rollouts-in-flight <n>', 'rollouts at once (default 64)')
    .option(
      '--rollouts-as <activities|workflows>',
      'each rollout as activities in its batch (default, faster) or as its own rollout-<id> workflow',
    )
    .option('--steps <n>', 'training steps (default 1)')
    .option('--policy-url <url>', 'the policy engine (or gateway) base URL')
    .option('--policy-model <name>', 'model name sent to the policy')
    .option('--mode <mode>', 'engine | gateway')
    .option('--max-turns <n>', 'model turns per rollout (default 10)')
    .option('--env-queue <queue>', 'shared env queue (default env)')
    .option('--train-queue <queue>', 'queue of trainStep/publishWeights (default control)')
    .addOption(queueOption())
    .addOption(temporalOption())
    .action(async (flags: AgenticStartFlags & { taskQueue?: string; temporalAddress?: string }) => {
      const { readFile } = await import('node:fs/promises');
      const fromFile = flags.input
        ? (JSON.parse(await readFile(flags.input, 'utf8')) as Record<string, unknown>)
        : {};
      const input = agenticInputFromFlags(flags, fromFile);
      const config = configFromFlags({ temporalAddress: flags.temporalAddress });
      const { client, close } = await connectClient(config);
      try {
        const outcome = await startAgenticRun(client, flags.taskQueue ?? config.temporal.taskQueue, input);
        console.log(
          `${agenticWorkflowId(input.runId)} ${outcome === 'started' ? 'started' : 'is already running'}`,
        );
      } finally {
        await close();
      }
    });

  agentic
    .command('status')
    .description("print a run's progress; --watch follows it with a progress bar until it is done")
    .requiredOption('--run <id>', 'run id')
    .option('--watch', 'follow the run')
    .option('--json', 'print JSON')
    .addOption(temporalOption())
    .action(async (flags: { run: string; watch?: boolean; json?: boolean; temporalAddress?: string }) => {
      const config = configFromFlags({ temporalAddress: flags.temporalAddress });
      const { client, close } = await connectClient(config);
      try {
        const read = () => readAgenticStatus(client, flags.run);
        const status = flags.watch ? await watchAgenticRun(read, { stop: untilStopped() }) : await read();
        console.log(flags.json ? JSON.stringify(status, null, 2) : formatAgenticStatus(status));
      } finally {
        await close();
      }
    });

  for (const [name, update] of [
    ['pause', pauseAgenticUpdate],
    ['resume', resumeAgenticUpdate],
  ] as const) {
    agentic
      .command(name)
      .description(`${name} a run between training steps (the step in progress finishes)`)
      .requiredOption('--run <id>', 'run id')
      .addOption(temporalOption())
      .action(async (flags: { run: string; temporalAddress?: string }) => {
        const config = configFromFlags({ temporalAddress: flags.temporalAddress });
        const { client, close } = await connectClient(config);
        try {
          const status = await client.workflow.getHandle(agenticWorkflowId(flags.run)).executeUpdate(update);
          console.log(formatAgenticStatus(status));
        } finally {
          await close();
        }
      });
  }
}

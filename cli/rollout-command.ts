// `openclaw-rl rollout`: one rollout through Temporal, its input from the flags, a progress bar of its turns
// read from its history, and the result as text. The policy is probed once first: a plain OpenAI-compatible
// endpoint (no token ids) runs text-only and the result says `mode: evaluate-only` and why.
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import type { Client, WorkflowHandle } from '@temporalio/client';
// The client's own converter (its codec included) decodes heartbeat details; the SDK exports it only here.
import { decodeFromPayloadsAtIndex } from '@temporalio/common/lib/internal-non-workflow/index.js';
import type { Command } from 'commander';
import type { RolloutHeartbeat } from '../activities/policy-step.js';
import { envRolloutInputSchema } from '../core/rollout-settings.js';
import { describeZodError } from '../core/training-settings.js';
import { connectClient } from '../temporal/connection.js';
import { envRolloutWorkflowId } from '../temporal/workflow-ids.js';
import { executeEnvRollout, startEnvRollout } from '../temporal/workflow-starts.js';
import type { EnvRolloutInput, EnvRolloutResult, EpisodeProgress } from '../workflows/agentic-signals.js';
import { configFromFlags } from './cli-config.js';
import { integer, taskQueueOption, temporalAddressOption } from './options.js';
import { drawsProgress, type ProgressStream, progressBar } from './progress.js';
import { planRolloutPolicy, probeKey, type RolloutMode } from './rollout-policy-plan.js';

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
      ...(flags.mode !== undefined && { mode: flags.mode as 'engine' | 'gateway' | 'chat' }),
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

/** A rollout's result with what its policy allows: `evaluate-only` (and why) for a text-only policy. */
export type RolloutOutcome = EnvRolloutResult & { mode: RolloutMode; modeReason: string | null };

/** The policy probed once at start (a plain endpoint runs text-only), then the rollout with its progress. */
export async function runPlannedRollout(
  client: Client,
  taskQueue: string,
  input: EnvRolloutInput,
  options: {
    apiKey?: string;
    progress?: { enabled?: boolean; stream?: ProgressStream };
    log?: (line: string) => void;
  },
): Promise<RolloutOutcome> {
  const plan = await planRolloutPolicy(input.policy, { apiKey: options.apiKey });
  if (plan.reason) options.log?.(`evaluate-only: ${plan.reason}`);
  const planned: EnvRolloutInput = { ...input, policy: { ...input.policy, mode: plan.policyMode } };
  const result = await runRolloutWithProgress(client, taskQueue, planned, options.progress ?? {});
  return { ...result, mode: plan.mode, modeReason: plan.reason };
}

export function formatRolloutResult(result: EnvRolloutResult & Partial<RolloutOutcome>): string {
  return [
    `rollout ${result.rolloutId}: ${result.status}`,
    ...(result.mode
      ? [`mode        ${result.mode}${result.modeReason ? ` (${result.modeReason})` : ''}`]
      : []),
    `reward      ${result.reward ?? '-'}`,
    `steps       ${result.steps}${result.parseErrors > 0 ? ` (${result.parseErrors} parse errors)` : ''}`,
    `containers  ${result.containerIds.join(', ') || '-'}`,
    `hosts       ${result.hostIds.join(', ') || '-'}`,
    `detail      ${result.detail}`,
  ].join('\n');
}

export function registerRolloutCommand(program: Command): void {
  program
    .command('rollout')
    .description('run one rollout through Temporal and print its status, reward, steps and containers')
    .requiredOption('--env <kind>', 'environment kind (e.g. arith, toolcall)')
    .requiredOption('--task <id|path>', 'task id, or a path to a task file the env hosts can read')
    .requiredOption('--policy-url <url>', 'the policy engine (or gateway) base URL')
    .option('--policy-model <name>', 'model name sent to the policy')
    .option(
      '--mode <mode>',
      'engine | gateway | chat (default: engine, or chat when the policy has no token-id routes: evaluate-only)',
    )
    .option('--max-turns <n>', 'model turns before TRUNCATED (default 10)')
    .option('--rollout-id <id>', 'rollout id (default cli-<env>-<time>)')
    .option('--env-queue <queue>', 'shared env queue (default env)')
    .addOption(taskQueueOption())
    .addOption(temporalAddressOption())
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
          const result = await runPlannedRollout(
            client,
            flags.taskQueue ?? config.temporal.taskQueue,
            rolloutInputFromFlags(flags),
            {
              apiKey: probeKey(config),
              progress: { enabled: drawsProgress(flags) },
              log: (line) => console.error(line),
            },
          );
          console.log(flags.json ? JSON.stringify(result, null, 2) : formatRolloutResult(result));
          if (result.status === 'FAILED') process.exitCode = 2;
        } finally {
          await close();
        }
      },
    );
}

// `openclaw-rl agentic`: a Track 2 training run's start input from the flags, its status as text, and
// following it until it is done.
import type { Client } from '@temporalio/client';
import type { Command } from 'commander';
import { agenticTrainingInputSchema } from '../core/rollout-settings.js';
import { describeZodError } from '../core/training-settings.js';
import { connectClient } from '../temporal/connection.js';
import { agenticWorkflowId } from '../temporal/workflow-ids.js';
import { startAgenticRun } from '../temporal/workflow-starts.js';
import {
  type AgenticStatus,
  type AgenticTrainingInput,
  agenticStatusQuery,
  pauseAgenticUpdate,
  resumeAgenticUpdate,
} from '../workflows/agentic-signals.js';
import { configFromFlags } from './cli-config.js';
import { integer, taskQueueOption, temporalAddressOption, untilStopped } from './options.js';
import { progressBar } from './progress.js';
import { checkTrainablePolicy, probeKey } from './rollout-policy-plan.js';

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

export function registerAgenticCommands(program: Command): void {
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
    .addOption(taskQueueOption())
    .addOption(temporalAddressOption())
    .action(async (flags: AgenticStartFlags & { taskQueue?: string; temporalAddress?: string }) => {
      const { readFile } = await import('node:fs/promises');
      const fromFile = flags.input
        ? (JSON.parse(await readFile(flags.input, 'utf8')) as Record<string, unknown>)
        : {};
      const input = agenticInputFromFlags(flags, fromFile);
      const config = configFromFlags({ temporalAddress: flags.temporalAddress });
      // A policy that cannot return token ids is refused here, not in the run's first step.
      await checkTrainablePolicy(agenticTrainingInputSchema.parse(input).policy, {
        apiKey: probeKey(config),
      });
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
    .addOption(temporalAddressOption())
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
      .addOption(temporalAddressOption())
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

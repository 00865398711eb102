// `openclaw-rl eval`: scores a checkpoint on held-out data. Conversations are answered by the served model and
// judged with the project's binary judge (prompt, votes and majority as in training); environment tasks run as
// rollouts through Temporal and score their evaluated reward.
import { readFile } from 'node:fs/promises';
import type { Client } from '@temporalio/client';
import { type Command, Option } from 'commander';
import OpenAI from 'openai';
import { z } from 'zod';
import { type Judge, OpenAIJudge } from '../activities/judge-client.js';
import { responseTextForJudge } from '../activities/turn-text.js';
import { buildBinaryJudgeMessages } from '../core/judge-prompts.js';
import { type JudgeScore, majorityVote, parseJudgeVote } from '../core/judge-votes.js';
import { describeZodError } from '../core/training-settings.js';
import { startReferenceEngine } from '../engines/reference-engine-process.js';
import { engineToken, judgeApiKey } from '../security/engine-token.js';
import { connectClient } from '../temporal/connection.js';
import { ENV_TASK_QUEUE } from '../temporal/task-queues.js';
import { configFromFlags } from './cli-config.js';
import { runCompare } from './eval-compare-command.js';
import { runSimulateCommand } from './eval-simulate-command.js';
import { formatTable } from './operator-commands.js';
import { taskQueueOption, temporalAddressOption } from './options.js';
import {
  drawsProgress,
  formatMean,
  type ProgressFlags,
  type ProgressStream,
  progressBar,
} from './progress.js';
import { rolloutInputFromFlags, runRollout } from './rollout-command.js';
import { refusedInlineSecretOption, secretFileOption } from './secret-flags.js';

const messageSchema = z.looseObject({
  role: z.enum(['system', 'developer', 'user', 'assistant', 'tool']),
  content: z.union([z.string(), z.array(z.unknown()), z.null()]),
});

/** One held-out line: the conversation so far, and what the user (or a tool) said after the model's reply. */
export const evalConversationSchema = z.strictObject({
  id: z.string().min(1).optional(),
  messages: z.array(messageSchema).min(1),
  next_user: z.string().min(1),
  /** `tool` when the reply is expected to be a tool call and `next_user` is its output. */
  next_role: z.enum(['user', 'tool']).default('user'),
});
export type EvalConversation = z.output<typeof evalConversationSchema>;

export interface EvalItem {
  id: string;
  kind: 'conversation' | 'task';
  /** Judge majority (1, 0, -1) for a conversation; the evaluated reward for a task; null when there is none. */
  score: number | null;
  detail: string;
}

export interface EvalReport {
  model: string;
  items: EvalItem[];
  /** Mean over the items that have a score; null when none has. */
  meanScore: number | null;
}

/** Reads a JSONL file of conversations; every bad line is reported with its number. */
export async function readEvalConversations(path: string): Promise<EvalConversation[]> {
  const lines = (await readFile(path, 'utf8')).split('\n');
  const out: EvalConversation[] = [];
  lines.forEach((line, index) => {
    if (line.trim() === '') return;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch (error) {
      throw new Error(`${path}:${index + 1}: not JSON (${(error as Error).message})`);
    }
    const parsed = evalConversationSchema.safeParse(value);
    if (!parsed.success) throw new Error(`${path}:${index + 1}: ${describeZodError(parsed.error)}`);
    out.push({ ...parsed.data, id: parsed.data.id ?? `line-${index + 1}` });
  });
  if (out.length === 0) throw new Error(`${path} holds no conversations`);
  return out;
}

export interface ConversationEvalOptions {
  /** The engine's base URL (its OpenAI API is under /v1). */
  engineUrl: string;
  /** The engine's bearer token, when it requires one (engine.token). */
  engineToken?: string | null;
  judge: Judge;
  votes: number;
  maxTokens: number;
  temperature: number;
  /** Called after each conversation is judged, with the items so far. */
  onItem?: (items: readonly EvalItem[], total: number) => void;
}

/** The model answers each conversation; the judge scores the answer against the recorded next message. */
export async function evaluateConversations(
  conversations: EvalConversation[],
  options: ConversationEvalOptions,
): Promise<EvalItem[]> {
  const policy = new OpenAI({
    baseURL: `${options.engineUrl.replace(/\/+$/, '')}/v1`,
    apiKey: options.engineToken || 'none',
    maxRetries: 1,
  });
  const items: EvalItem[] = [];
  for (const conversation of conversations) {
    const completion = await policy.chat.completions.create({
      model: 'default',
      messages: conversation.messages as OpenAI.Chat.ChatCompletionMessageParam[],
      max_tokens: options.maxTokens,
      temperature: options.temperature,
    });
    const message = completion.choices[0]?.message;
    const responseText = responseTextForJudge({
      content: message?.content ?? '',
      reasoningContent: null,
      toolCalls: message?.tool_calls ?? null,
    });
    const prompt = buildBinaryJudgeMessages({
      responseText,
      nextStateText: conversation.next_user,
      nextStateRole: conversation.next_role,
    });
    const replies = await Promise.all(
      Array.from({ length: options.votes }, (_, seed) =>
        options.judge.complete(prompt, { seed }).catch((error: unknown) => {
          // A judge that refuses the key refuses every vote: say so instead of scoring nothing.
          if (error instanceof OpenAI.AuthenticationError || error instanceof OpenAI.PermissionDeniedError)
            throw new Error(`the judge refused its key (${error.status}): ${error.message}`);
          return null as string | null;
        }),
      ),
    );
    const majority = majorityVote(replies.map(parseJudgeVote));
    const counted = majority.votes.filter((v) => v.score !== null).length;
    items.push({
      id: conversation.id ?? '',
      kind: 'conversation',
      score: counted === 0 ? null : (majority.score as JudgeScore),
      detail: `${majority.outcome} ${JSON.stringify(majority.counts)} reply: ${oneLine(responseText, 60)}`,
    });
    options.onItem?.(items, conversations.length);
  }
  return items;
}

export interface TaskEvalOptions {
  client: Client;
  taskQueue: string;
  env: string;
  policyUrl: string;
  envQueue?: string;
  maxTurns?: string;
  /** Called as each rollout ends (in the order they end), with the items ended so far. */
  onItem?: (items: readonly EvalItem[], total: number) => void;
}

/** Workers polling `queue` for the given kind of task (empty: nothing would run them). */
async function pollerCount(client: Client, queue: string, kind: 'workflow' | 'activity'): Promise<number> {
  const response = await client.workflowService.describeTaskQueue({
    namespace: client.options.namespace,
    taskQueue: { name: queue },
    taskQueueType: kind === 'workflow' ? 1 : 2,
  });
  return response.pollers?.length ?? 0;
}

/**
 * Checks that a control worker and an env worker are there, so a rollout would not wait forever. A worker
 * shows up once it polls, so the check looks again for `graceMs` before it gives up.
 */
export async function checkRolloutWorkers(
  client: Client,
  taskQueue: string,
  envQueue: string,
  graceMs = 5_000,
): Promise<void> {
  const deadline = Date.now() + graceMs;
  for (;;) {
    const missing: string[] = [];
    if ((await pollerCount(client, taskQueue, 'workflow')) === 0)
      missing.push(`a control worker on queue "${taskQueue}" (openclaw-rl worker)`);
    if ((await pollerCount(client, envQueue, 'activity')) === 0)
      missing.push(`an env worker on queue "${envQueue}" (openclaw-rl worker env)`);
    if (missing.length === 0) return;
    if (Date.now() > deadline)
      throw new Error(`--env needs ${missing.join(' and ')} on this Temporal server`);
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}

/** One rollout per task, all at once; the score is the environment's evaluated reward. */
export async function evaluateTasks(tasks: string[], options: TaskEvalOptions): Promise<EvalItem[]> {
  const stamp = Date.now().toString(36);
  const ended: EvalItem[] = [];
  return Promise.all(
    tasks.map(async (task, index): Promise<EvalItem> => {
      const result = await runRollout(
        options.client,
        options.taskQueue,
        rolloutInputFromFlags({
          env: options.env,
          task,
          policyUrl: options.policyUrl,
          rolloutId: `eval-${options.env}-${stamp}-${index}`,
          ...(options.envQueue !== undefined && { envQueue: options.envQueue }),
          ...(options.maxTurns !== undefined && { maxTurns: options.maxTurns }),
        }),
      );
      const item: EvalItem = {
        id: task,
        kind: 'task',
        score: result.reward,
        detail: `${result.status}, ${result.steps} steps`,
      };
      ended.push(item);
      options.onItem?.(ended, tasks.length);
      return item;
    }),
  );
}

export function evalReport(model: string, items: EvalItem[]): EvalReport {
  const scored = items.map((i) => i.score).filter((s): s is number => s !== null);
  const meanScore = scored.length === 0 ? null : scored.reduce((a, b) => a + b, 0) / scored.length;
  return { model, items, meanScore };
}

function oneLine(text: string, max: number): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

export function formatEvalReport(report: EvalReport): string {
  const rows = report.items.map((item) => [
    item.kind,
    item.id,
    item.score === null ? '-' : String(item.score),
    item.detail,
  ]);
  const mean = report.meanScore === null ? '-' : report.meanScore.toFixed(3);
  const scored = report.items.filter((i) => i.score !== null).length;
  return [
    formatTable(['KIND', 'ID', 'SCORE', 'DETAIL'], rows),
    '',
    `model ${report.model}: mean score ${mean} over ${scored} of ${report.items.length} items`,
  ].join('\n');
}

export interface EvalFlags extends ProgressFlags {
  engineUrl?: string;
  model?: string;
  device?: string;
  conversations?: string;
  env?: string;
  tasks?: string;
  votes?: string;
  maxTokens?: string;
  temperature?: string;
  judgeUrl?: string;
  judgeModel?: string;
  /** Refused: the key comes from `judgeApiKeyFile` or OPENCLAW_JUDGE_API_KEY. */
  judgeApiKey?: string;
  judgeApiKeyFile?: string;
  temporalAddress?: string;
  taskQueue?: string;
  envQueue?: string;
  maxTurns?: string;
}

/** A bar's update for the items done so far, with their running mean score. */
function barUpdate(bar: ReturnType<typeof progressBar>) {
  return (items: readonly EvalItem[], total: number) =>
    bar.update(items.length, total, { mean: formatMean(items.map((i) => i.score)) });
}

function positive(flag: string, value: string | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  const parsed = Number(value);
  if (!Number.isFinite(parsed) || parsed < 0)
    throw new Error(`${flag} must be a non-negative number, got "${value}"`);
  return parsed;
}

/**
 * Runs the evaluation the flags describe; starts (and stops) a reference engine for `--model`. Progress bars
 * (conversations judged, rollouts done, with the running mean score) go to `progressStream` when it is a
 * terminal and the flags allow them.
 */
export async function runEval(
  flags: EvalFlags,
  env: NodeJS.ProcessEnv = process.env,
  progressStream: ProgressStream = process.stderr,
): Promise<EvalReport> {
  if (!flags.conversations && !flags.env)
    throw new Error('give --conversations FILE.jsonl and/or --env KIND --tasks a,b');
  if (flags.env && !flags.tasks) throw new Error('--env needs --tasks a,b,c');
  if (flags.engineUrl && flags.model) throw new Error('give either --engine-url or --model, not both');
  const tasks = (flags.tasks ?? '')
    .split(',')
    .map((t) => t.trim())
    .filter((t) => t.length > 0);
  if (flags.env && !flags.temporalAddress && !env.TEMPORAL_ADDRESS)
    throw new Error(
      '--env runs rollouts through Temporal: give --temporal-address (or TEMPORAL_ADDRESS) of a server with a control worker and an env worker',
    );
  const conversations = flags.conversations ? await readEvalConversations(flags.conversations) : [];

  const engine = flags.model
    ? await startReferenceEngine({
        model: flags.model,
        ...(flags.device !== undefined && { device: flags.device as 'cpu' | 'cuda' }),
      })
    : null;
  try {
    const givenEngine = engine?.url ?? flags.engineUrl;
    const config = configFromFlags(
      {
        engineUrl: givenEngine,
        // Evaluating trains nothing, so the evaluated engine may judge itself unless a judge is named.
        judgeUrl:
          flags.judgeUrl ??
          (env.OPENCLAW_JUDGE_URL || givenEngine === undefined
            ? undefined
            : `${givenEngine.replace(/\/+$/, '')}/v1`),
        judgeModel: flags.judgeModel,
        judgeApiKey: flags.judgeApiKey,
        judgeApiKeyFile: flags.judgeApiKeyFile,
        temporalAddress: flags.temporalAddress,
      },
      env,
    );
    const engineUrl = config.engine.url;
    const items: EvalItem[] = [];
    const showBars = { stream: progressStream, enabled: drawsProgress(flags, progressStream) };
    if (conversations.length > 0) {
      const judge = new OpenAIJudge({
        baseUrl: config.judge.baseUrl,
        model: config.judge.model,
        apiKey: judgeApiKey(config),
        temperature: config.judge.temperature,
        maxTokens: config.judge.maxTokens ?? 4096,
      });
      const bar = progressBar('conversations |{bar}| {value}/{total} judged | mean score {mean}', showBars);
      try {
        bar.update(0, conversations.length, { mean: '-' });
        items.push(
          ...(await evaluateConversations(conversations, {
            engineUrl,
            engineToken: engineToken(config),
            judge,
            votes: positive('--votes', flags.votes, config.judge.votes ?? 1) || 1,
            maxTokens: positive('--max-tokens', flags.maxTokens, 512),
            temperature: positive('--temperature', flags.temperature, 0),
            onItem: barUpdate(bar),
          })),
        );
      } finally {
        bar.stop();
      }
    }
    if (flags.env) {
      const { client, close } = await connectClient(config);
      try {
        const taskQueue = flags.taskQueue ?? config.temporal.taskQueue;
        await checkRolloutWorkers(client, taskQueue, flags.envQueue ?? ENV_TASK_QUEUE);
        const bar = progressBar('tasks |{bar}| {value}/{total} rollouts done | mean score {mean}', showBars);
        try {
          bar.update(0, tasks.length, { mean: '-' });
          items.push(
            ...(await evaluateTasks(tasks, {
              client,
              taskQueue,
              env: flags.env,
              policyUrl: engineUrl,
              ...(flags.envQueue !== undefined && { envQueue: flags.envQueue }),
              ...(flags.maxTurns !== undefined && { maxTurns: flags.maxTurns }),
              onItem: barUpdate(bar),
            })),
          );
        } finally {
          bar.stop();
        }
      } finally {
        await close();
      }
    }
    return evalReport(flags.model ?? engineUrl, items);
  } finally {
    await engine?.stop();
  }
}

export function registerEvalCommand(program: Command): void {
  program
    .command('eval')
    .description('score a checkpoint on held-out conversations (judge) and/or environment tasks (rollouts)')
    .addOption(new Option('--engine-url <url>', 'an engine serving the checkpoint (OPENCLAW_ENGINE_URL)'))
    .addOption(new Option('--model <dir>', 'start the reference engine on this model folder instead'))
    .addOption(new Option('--device <device>', 'cpu | cuda, for --model'))
    .option(
      '--conversations <file>',
      'JSONL: {"messages":[...],"next_user":"...","id"?,"next_role"?} per line',
    )
    .option('--env <kind>', 'environment kind whose tasks to roll out')
    .option('--tasks <ids>', 'comma-separated task ids (or task files) for --env')
    .option('--votes <n>', 'judge votes per conversation (default judge.votes)')
    .option('--max-tokens <n>', 'longest model reply (default 512)')
    .option('--temperature <t>', 'model sampling temperature (default 0)')
    .addOption(new Option('--judge-url <url>', 'OpenAI-compatible judge (OPENCLAW_JUDGE_URL)'))
    .addOption(new Option('--judge-model <name>', 'judge model name'))
    .addOption(refusedInlineSecretOption('judge-api-key'))
    .addOption(secretFileOption('judge-api-key', 'OPENCLAW_JUDGE_API_KEY', 'judge bearer key'))
    .addOption(temporalAddressOption('Temporal frontend, for --env (TEMPORAL_ADDRESS)'))
    .addOption(taskQueueOption('control worker queue, for --env (default control)'))
    .option('--env-queue <queue>', 'env worker queue, for --env (default env)')
    .option('--max-turns <n>', 'model turns per rollout, for --env (default 10)')
    .option(
      '--checkpoints <dirs>',
      'compare these model folders (comma-separated) on --conversations, in order',
    )
    .option('--run <runId>', "compare this run's versions (its lineage in the sample store; with --versions)")
    .option('--versions <list>', 'with --run: 0,2,4 or all (default all; 0 is the base model)')
    .option('--data-dir <dir>', 'with --run: the data dir of its sample store (OPENCLAW_DATA_DIR)')
    .option(
      '--scorer <name>',
      'with --checkpoints: a style:<rule> scorer instead of the judge (style:vowels)',
    )
    .option('--samples <n>', 'with --checkpoints: seeded replies per item (default 3)')
    .option('--report <dir>', 'with --checkpoints: write report.json and report.html there')
    .option(
      '--simulate <file>',
      'JSONL personas ({"persona":"...","id"?,"opening"?}): a user model talks to the policy',
    )
    .option('--user-url <url>', 'with --simulate: the user model (OpenAI-compatible, .../v1)')
    .option('--user-model <name>', 'with --simulate: the user model name')
    .addOption(refusedInlineSecretOption('user-api-key'))
    .addOption(secretFileOption('user-api-key', 'OPENCLAW_USER_API_KEY', 'user model bearer key'))
    .option('--policy-url <url>', 'with --simulate: the policy (the gateway or an engine, .../v1)')
    .option('--policy-model <name>', 'with --simulate: the policy model name (default "default")')
    .option('--turns <n>', 'with --simulate: policy replies per persona (default 3)')
    .option('--json', 'print the report as JSON')
    .option(
      '--no-progress',
      'no progress bars on stderr (they are drawn only on a terminal, never with --json)',
    )
    .action(async (flags: EvalFlags & { checkpoints?: string }) => {
      if (
        flags.checkpoints !== undefined ||
        (flags as Record<string, unknown>).run !== undefined ||
        (flags as Record<string, unknown>).simulate !== undefined
      ) {
        const { progress: _progress, json, ...compare } = flags as EvalFlags & Record<string, unknown>;
        const compared =
          compare.simulate === undefined ? await runCompare(compare) : await runSimulateCommand(compare);
        console.log(
          json
            ? JSON.stringify(compared, null, 2)
            : compared.versions
                .map((v) => `${v.label}\t${v.mean === null ? '-' : v.mean.toFixed(3)}`)
                .join('\n'),
        );
        return;
      }
      const report = await runEval(flags);
      console.log(flags.json ? JSON.stringify(report, null, 2) : formatEvalReport(report));
    });
}

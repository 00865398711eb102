// What an operator runs besides `train status|pause|resume`: start a training run (with the same JSON the
// Temporal UI's Start Workflow form takes, and optionally wait for its first steps), list the runs, list the
// sessions. Human tables by default, `--json` for scripts, a progress bar for anything that waits.

import { readFile } from 'node:fs/promises';
import type { Client } from '@temporalio/client';
import { type Command, Option } from 'commander';
import type { z } from 'zod';
import type { OpenClawConfig } from '../core/config.js';
import {
  NO_TENANT,
  scopedSessionId,
  splitSessionId,
  TENANT_NAME,
  TENANT_NAME_RULE,
  tenantOfSession,
} from '../core/tenant.js';
import { adapterRunId } from '../core/tenant-adapters.js';
import { describeZodError, trainingInputSchema } from '../core/training-settings.js';
import { connectClient } from '../temporal/connection.js';
import { sessionWorkflowId, trainingWorkflowId } from '../temporal/workflow-ids.js';
import { startTrainingRun } from '../temporal/workflow-starts.js';
import { trainingInputFromConfig } from '../workers/control-worker.js';
import { type SessionStatus, sessionStatusQuery } from '../workflows/session-signals.js';
import {
  type LineageEntry,
  lineageQuery,
  rollbackUpdate,
  type TrainingInput,
  type TrainingRunStatus,
  trainingStatusQuery,
} from '../workflows/training-signals.js';
import { configFromFlags } from './cli-config.js';
import { temporalAddressOption } from './options.js';
import { drawsProgress, type ProgressFlags, type ProgressStream } from './progress.js';
import {
  contributionOf,
  followTrainingRun,
  formatContribution,
  formatTrainingStatus,
  STATUS_QUERY_TIMEOUT_MS,
} from './train-status.js';

type Json = Record<string, unknown>;

function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** `over` on top of `base`, objects merged key by key (arrays and scalars replaced). */
export function mergeJson(base: Json, over: Json): Json {
  const out: Json = { ...base };
  for (const [key, value] of Object.entries(over)) {
    out[key] = isObject(value) && isObject(out[key]) ? mergeJson(out[key] as Json, value) : value;
  }
  return out;
}

export interface TrainStartFlags {
  run?: string;
  method?: string;
  batchSize?: string;
  /** A JSON object or a path to a JSON file: the UI form's input. */
  input?: string;
}

/** The run's start input: the configured defaults, then `--input`, then the flags; validated. */
export type ResolvedTrainingInput = z.output<typeof trainingInputSchema> & TrainingInput;

export async function trainingInputFromFlags(
  config: OpenClawConfig,
  flags: TrainStartFlags,
): Promise<ResolvedTrainingInput> {
  let given: Json = {};
  if (flags.input !== undefined) {
    const text = flags.input.trim().startsWith('{') ? flags.input : await readFile(flags.input, 'utf8');
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch (error) {
      throw new Error(`--input is not valid JSON: ${(error as Error).message}`);
    }
    if (!isObject(parsed)) throw new Error('--input must be a JSON object (the Start Workflow input)');
    given = parsed;
  }
  let input = mergeJson(trainingInputFromConfig(config) as unknown as Json, given);
  if (flags.run !== undefined) input = { ...input, runId: flags.run };
  if (flags.method !== undefined) input = { ...input, method: flags.method };
  if (flags.batchSize !== undefined)
    input = mergeJson(input, { settings: { batchSize: Number(flags.batchSize) } });
  const parsed = trainingInputSchema.safeParse(input);
  if (!parsed.success) throw new Error(`invalid training run input: ${describeZodError(parsed.error)}`);
  // The schema checks `carried` as a whole in the workflow; its shape is the workflow's own (TrainingCarry).
  return parsed.data as ResolvedTrainingInput;
}

export interface WorkflowRow<Status> {
  workflowId: string;
  status: string;
  startTime: string;
  closeTime: string | null;
  /** The workflow's `status` query, for running ones (null when closed, or not answering within 3 s). */
  state: Status | null;
}

async function listByType<Status>(
  client: Client,
  workflowType: string,
  limit: number,
  query: (workflowId: string) => Promise<Status>,
  idPrefix?: string,
): Promise<WorkflowRow<Status>[]> {
  const rows: Omit<WorkflowRow<Status>, 'state'>[] = [];
  const prefix = idPrefix === undefined ? '' : ` AND WorkflowId STARTS_WITH '${idPrefix}'`;
  for await (const execution of client.workflow.list({
    query: `WorkflowType = '${workflowType}'${prefix}`,
  })) {
    // Continue-as-new leaves one closed execution per run; list each workflow id once, newest first.
    if (rows.some((row) => row.workflowId === execution.workflowId)) continue;
    rows.push({
      workflowId: execution.workflowId,
      status: execution.status.name,
      startTime: execution.startTime.toISOString(),
      closeTime: execution.closeTime?.toISOString() ?? null,
    });
    if (rows.length >= limit) break;
  }
  // All at once, each with a deadline, so runs without a worker cost one timeout, not one each.
  const deadline = Date.now() + STATUS_QUERY_TIMEOUT_MS;
  return Promise.all(
    rows.map(async (row) => ({
      ...row,
      state:
        row.status === 'RUNNING'
          ? await client.connection.withDeadline(deadline, () => query(row.workflowId)).catch(() => null)
          : null,
    })),
  );
}

export function listTrainingRuns(client: Client, limit = 50): Promise<WorkflowRow<TrainingRunStatus>[]> {
  return listByType(client, 'trainingWorkflow', limit, (id) =>
    client.workflow.getHandle(id).query(trainingStatusQuery),
  );
}

export type SessionRow = WorkflowRow<SessionStatus> & {
  /** Null for sessions recorded before tenants. */
  tenant: string | null;
};

/** Sessions, newest first, with their tenant; with `tenant`, only that tenant's. */
export async function listSessions(client: Client, limit = 50, tenant?: string): Promise<SessionRow[]> {
  if (tenant !== undefined && !TENANT_NAME.test(tenant)) throw new Error(`--tenant: ${TENANT_NAME_RULE}`);
  const rows = await listByType(
    client,
    'sessionWorkflow',
    limit,
    (id) => client.workflow.getHandle(id).query(sessionStatusQuery),
    tenant === undefined ? undefined : sessionWorkflowId(scopedSessionId(tenant, '')),
  );
  return rows.map((row) => ({ ...row, tenant: tenantOfSession(sessionIdOf(row)) }));
}

function sessionIdOf({ workflowId, state }: WorkflowRow<SessionStatus>): string {
  return state?.sessionId ?? workflowId.replace(/^session-/, '');
}

/** Left-aligned columns with a header, the way `docker ps` prints. */
export function formatTable(header: string[], rows: string[][]): string {
  const widths = header.map((title, i) =>
    Math.max(title.length, ...rows.map((row) => (row[i] ?? '').length)),
  );
  const line = (cells: string[]) =>
    cells
      .map((cell, i) => (i === cells.length - 1 ? cell : cell.padEnd(widths[i] ?? 0)))
      .join('  ')
      .trimEnd();
  return [line(header), ...rows.map(line)].join('\n');
}

/** A running workflow that did not answer its query has no worker polling its task queue. */
function statusText(status: string, state: unknown): string {
  return status === 'RUNNING' && state === null ? 'RUNNING (no worker answered)' : status;
}

export function formatTrainingRuns(rows: WorkflowRow<TrainingRunStatus>[]): string {
  if (rows.length === 0) return 'no training runs';
  return formatTable(
    ['RUN', 'STATUS', 'METHOD', 'VERSION', 'EPOCHS', 'WAITING', 'TRAINED', 'EXCLUDED', 'STARTED'],
    rows.map(({ workflowId, status, startTime, state }) => [
      state?.runId ?? workflowId.replace(/^training-/, ''),
      state?.paused ? 'PAUSED' : statusText(status, state),
      state?.method ?? '',
      state ? String(state.policyVersion) : '',
      state ? String(state.stepsCompleted) : '',
      state ? `${state.pendingSamples}/${state.settings.batchSize}` : '',
      state ? String(state.samplesTrained) : '',
      state ? String(state.samplesExcluded) : '',
      startTime,
    ]),
  );
}

/** DONE once ended; IDLE while closed by its idle timer, its open turns waiting for a late reply. */
function sessionStatusText(status: string, state: SessionStatus | null): string {
  if (state?.done) return 'DONE';
  if (status === 'RUNNING' && state?.phase === 'idle') return 'IDLE';
  return statusText(status, state);
}

export function formatSessions(rows: WorkflowRow<SessionStatus>[]): string {
  if (rows.length === 0) return 'no sessions';
  return formatTable(
    ['TENANT', 'SESSION', 'STATUS', 'TURNS', 'SCORED', 'WAITING', 'STARTED'],
    rows.map((row) => [
      ...tenantAndId(sessionIdOf(row)),
      sessionStatusText(row.status, row.state),
      row.state ? String(row.state.turnsReceived) : '',
      row.state ? String(row.state.turnsScored) : '',
      row.state ? String(row.state.openTurns.length) : '',
      row.startTime,
    ]),
  );
}

/** A session id as its tenant (`-` for sessions from before tenants) and the id its client sends. */
function tenantAndId(sessionId: string): [string, string] {
  const { tenant, id } = splitSessionId(sessionId);
  return [tenant ?? NO_TENANT, id];
}

/** Lineage entries, newest first: which samples made each version, and whose sessions they came from. */
export function formatLineage(entries: readonly LineageEntry[]): string {
  if (entries.length === 0) return 'no published versions';
  // The publish gate's column only for runs that have a gate (or a rollback): older output stays as it was.
  const gated = entries.some((entry) => entry.evaluation !== undefined || entry.rollbackOf !== undefined);
  return formatTable(
    ['VERSION', 'STEP', 'SAMPLES', 'TENANTS', ...(gated ? ['EVALUATION'] : []), 'CHECKPOINT'],
    [...entries]
      .reverse()
      .map((entry) => [
        `v${entry.version}`,
        entry.stepId,
        String(entry.sampleIds.length),
        formatContribution(contributionOf(entry)),
        ...(gated ? [formatEvaluation(entry)] : []),
        entry.checkpoint,
      ]),
  );
}

/** A version's gate verdict in one cell: `served 0.41 (v2 0.40)`, `held 0.30 (v2 0.40)`, `rollback of v1`. */
export function formatEvaluation(entry: LineageEntry): string {
  if (entry.rollbackOf !== undefined) return `rollback of v${entry.rollbackOf}`;
  const evaluation = entry.evaluation;
  if (evaluation === undefined) return '-';
  const baseline =
    evaluation.baseline === null ? '' : ` (v${evaluation.baselineVersion} ${evaluation.baseline.toFixed(3)})`;
  return `${evaluation.decision} ${evaluation.score.toFixed(3)}${baseline} ${evaluation.scorer}`;
}

/** `v3` or `3`: the version a rollback serves again. */
export function rollbackTarget(text: string): number {
  const match = /^v?(\d+)$/.exec(text.trim());
  const version = match ? Number(match[1]) : Number.NaN;
  if (!Number.isInteger(version) || version < 1)
    throw new Error(`--to takes a version such as v3, got ${text}`);
  return version;
}

function limitOf(text: string | undefined): number {
  const limit = text === undefined ? 50 : Number(text);
  if (!Number.isInteger(limit) || limit < 1)
    throw new Error(`--limit must be a positive integer, got ${text}`);
  return limit;
}

export interface TrainWaitFlags extends ProgressFlags {
  /** `--wait` alone is true; `--wait N` a string. */
  wait?: boolean | string;
  timeout?: string;
}

/** What `--wait [N]` and `--timeout S` ask for: steps to wait for (none without --wait) and a time limit. */
export function waitFromFlags(flags: TrainWaitFlags): { steps?: number; timeoutMs?: number } {
  if (flags.wait === undefined || flags.wait === false) {
    if (flags.timeout !== undefined) throw new Error('--timeout goes with --wait');
    return {};
  }
  const steps = flags.wait === true ? 1 : Number(flags.wait);
  if (!Number.isInteger(steps) || steps < 1)
    throw new Error(`--wait takes a positive number of steps, got "${flags.wait}"`);
  if (flags.timeout === undefined) return { steps };
  const seconds = Number(flags.timeout);
  if (!Number.isFinite(seconds) || seconds <= 0)
    throw new Error(`--timeout takes a positive number of seconds, got "${flags.timeout}"`);
  return { steps, timeoutMs: seconds * 1000 };
}

/** Steps a start input says the run has done already (a run carried over from an earlier one). */
function carriedSteps(input: ResolvedTrainingInput): number {
  const carried = input.carried as { stepsCompleted?: unknown } | undefined;
  return typeof carried?.stepsCompleted === 'number' ? carried.stepsCompleted : 0;
}

/** Resolves on Ctrl-C or SIGTERM until released. */
function untilInterrupted(): { stopped: Promise<void>; release(): void } {
  let stop: () => void = () => undefined;
  const stopped = new Promise<void>((done) => {
    stop = done;
  });
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  return {
    stopped,
    release() {
      process.removeListener('SIGINT', stop);
      process.removeListener('SIGTERM', stop);
    },
  };
}

interface ListFlags {
  limit?: string;
  tenant?: string;
  temporalAddress?: string;
  json?: boolean;
}

export interface OperatorCommandOptions {
  /** Where progress bars go (default stderr; drawn only on a terminal). */
  progressStream?: ProgressStream;
}

/** `train start`, `train list` (under `train`) and `sessions`. */
export function registerOperatorCommands(
  program: Command,
  train: Command,
  options: OperatorCommandOptions = {},
): void {
  train
    .command('start')
    .description(
      'start a training run (the same input as the Temporal UI form; flags on top); --wait follows it until it has trained',
    )
    .addOption(new Option('--run <id>', 'run id (OPENCLAW_RUN_ID; default "default")'))
    .addOption(new Option('--method <method>', 'rl | opd | combine (OPENCLAW_METHOD; default combine)'))
    .addOption(new Option('--batch-size <n>', 'samples per epoch (OPENCLAW_BATCH_SIZE; default 16)'))
    .addOption(new Option('--input <json|file>', 'the start input as JSON or a JSON file'))
    .addOption(
      new Option(
        '--wait [steps]',
        'then wait until the run has trained this many more steps, the served policy version up as many (default 1)',
      ),
    )
    .addOption(new Option('--timeout <seconds>', 'with --wait: give up after this long (default: no limit)'))
    .addOption(temporalAddressOption())
    .option('--json', 'print JSON')
    .option('--no-progress', 'no progress bar on stderr (drawn only on a terminal, never with --json)')
    .action(async (flags: TrainStartFlags & TrainWaitFlags & { temporalAddress?: string }) => {
      const config = configFromFlags({ temporalAddress: flags.temporalAddress });
      const input = await trainingInputFromFlags(config, flags);
      const wait = waitFromFlags(flags);
      const { client, close } = await connectClient(config);
      // Ctrl-C while waiting stops the wait (the run goes on) and still closes the connection.
      const interrupt = wait.steps === undefined ? null : untilInterrupted();
      try {
        const result = await startTrainingRun(client, config.temporal.taskQueue, input);
        if (!flags.json)
          console.log(
            result.started
              ? `started ${result.workflowId} (${input.method}, batch ${input.settings.batchSize}) on task queue ${config.temporal.taskQueue}`
              : `${result.workflowId} is already running (its input is unchanged; use the reconfigure update)`,
          );
        if (wait.steps === undefined) {
          if (flags.json) console.log(JSON.stringify({ ...result, input }, null, 2));
          return;
        }
        const stream = options.progressStream ?? process.stderr;
        const status = await followTrainingRun(client, input.runId, {
          steps: wait.steps,
          batchSize: input.settings.batchSize,
          // A run started now has done nothing yet; one already going counts from its first answer.
          ...(result.started && { fromSteps: carriedSteps(input) }),
          ...(wait.timeoutMs !== undefined && { timeoutMs: wait.timeoutMs }),
          progress: { stream, enabled: drawsProgress(flags, stream) },
          ...(interrupt && { stop: interrupt.stopped }),
        });
        console.log(
          flags.json ? JSON.stringify({ ...result, input, status }, null, 2) : formatTrainingStatus(status),
        );
      } finally {
        interrupt?.release();
        await close();
      }
    });

  const listCommand = <Row>(
    parent: Command,
    name: string,
    description: string,
    list: (client: Client, limit: number, flags: ListFlags) => Promise<Row[]>,
    format: (rows: Row[]) => string,
    options: Option[] = [],
  ) => {
    const command = parent
      .command(name)
      .description(description)
      .addOption(new Option('--limit <n>', 'at most this many (default 50)'));
    for (const option of options) command.addOption(option);
    return command
      .addOption(temporalAddressOption())
      .option('--json', 'print JSON')
      .action(async (flags: ListFlags) => {
        const config = configFromFlags({ temporalAddress: flags.temporalAddress });
        const { client, close } = await connectClient(config);
        try {
          const rows = await list(client, limitOf(flags.limit), flags);
          console.log(flags.json ? JSON.stringify(rows, null, 2) : format(rows));
        } finally {
          await close();
        }
      });
  };

  listCommand(
    train,
    'list',
    'list training runs, newest first, with the state of the running ones',
    listTrainingRuns,
    formatTrainingRuns,
  );
  listCommand(
    program,
    'sessions',
    'list chat sessions, newest first, with their tenant: turns seen, scored and waiting for their next state',
    (client, limit, flags) => listSessions(client, limit, flags.tenant),
    formatSessions,
    [new Option('--tenant <name>', "only this tenant's sessions")],
  );

  train
    .command('rollback')
    .description('serve an earlier version (served or held) again as a new version, and train on from it')
    .requiredOption('--to <vN>', 'the version to serve again, e.g. v3')
    .addOption(new Option('--run <id>', 'run id (OPENCLAW_RUN_ID; default "default")'))
    .addOption(new Option('--tenant <name>', "the run of this tenant's adapter (`<run>~<tenant>`)"))
    .addOption(temporalAddressOption())
    .action(async (flags: { to: string; run?: string; tenant?: string; temporalAddress?: string }) => {
      const to = rollbackTarget(flags.to);
      const config = configFromFlags({ runId: flags.run, temporalAddress: flags.temporalAddress });
      const runId = flags.tenant ? adapterRunId(config.runId, flags.tenant) : config.runId;
      const { client, close } = await connectClient(config);
      try {
        const handle = client.workflow.getHandle(trainingWorkflowId(runId));
        const { policyVersion } = await handle.query(trainingStatusQuery);
        // One id per (target, newest version): a retried request is the same update, answered once.
        const entry = await handle.executeUpdate(rollbackUpdate, {
          args: [{ to }],
          updateId: `rollback-to-v${to}-after-v${policyVersion}`,
        });
        console.log(
          `v${entry.version} serves v${to}'s weights (${entry.checkpoint}); training continues from it`,
        );
      } finally {
        await close();
      }
    });

  train
    .command('lineage')
    .description("list a run's published versions (the newest 100): the samples that made each, by tenant")
    .addOption(new Option('--run <id>', 'run id (OPENCLAW_RUN_ID; default "default")'))
    .addOption(new Option('--tenant <name>', "the run of this tenant's adapter (`<run>~<tenant>`)"))
    .addOption(temporalAddressOption())
    .option('--json', 'print JSON')
    .action(async (flags: { run?: string; tenant?: string; temporalAddress?: string; json?: boolean }) => {
      const config = configFromFlags({ runId: flags.run, temporalAddress: flags.temporalAddress });
      const runId = flags.tenant ? adapterRunId(config.runId, flags.tenant) : config.runId;
      const { client, close } = await connectClient(config);
      try {
        const entries = await client.workflow.getHandle(trainingWorkflowId(runId)).query(lineageQuery);
        console.log(flags.json ? JSON.stringify(entries, null, 2) : formatLineage(entries));
      } finally {
        await close();
      }
    });
}

// `openclaw-rl worker env`: the env host's settings from its flags (each with its environment variable); the
// host itself starts in workers/env-worker.ts. Without a sandbox provider the host serves container-free kinds.
import { hostname } from 'node:os';
import { type Command, Option } from 'commander';
import { ENV_TASK_QUEUE } from '../temporal/task-queues.js';
import { type EnvHostSettings, runEnvHost, type SandboxProviderFactory } from '../workers/env-worker.js';
import { configFromFlags } from './cli-config.js';
import { integer, metricsPortOption, temporalAddressOption, untilStopped } from './options.js';
import { refusedInlineSecretOption, secretFileOption, secretFromFlags } from './secret-flags.js';

export interface EnvWorkerFlags {
  hostId?: string;
  temporalAddress?: string;
  dataDir?: string;
  envQueue?: string;
  judgeUrl?: string;
  judgeModel?: string;
  /** Refused, as `policyApiKey`: keys come from the `…File` flags or the variables (cli/secret-flags.ts). */
  judgeApiKey?: string;
  judgeApiKeyFile?: string;
  policyApiKey?: string;
  policyApiKeyFile?: string;
  maxActivities?: string;
  reapIntervalMs?: string;
  warmPool?: string;
  envOptions?: string;
  metricsPort?: string;
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

/** The host's settings: each flag, else its environment variable, else the default. */
export function envHostSettingsFromFlags(
  flags: EnvWorkerFlags,
  env: NodeJS.ProcessEnv = process.env,
): EnvHostSettings {
  const reapIntervalMs = integer('--reap-interval-ms', flags.reapIntervalMs ?? env.OPENCLAW_REAP_INTERVAL_MS);
  if (reapIntervalMs !== undefined && reapIntervalMs < 0)
    throw new Error(`--reap-interval-ms must be 0 (off) or more, got ${reapIntervalMs}`);
  const judgeUrl = flags.judgeUrl ?? env.OPENCLAW_JUDGE_URL;
  // OPENCLAW_JUDGE_API_KEY reaches the step judge through the configuration (workers/env-worker.ts).
  const judgeApiKey = secretFromFlags('judge-api-key', 'OPENCLAW_JUDGE_API_KEY', {
    inline: flags.judgeApiKey,
    file: flags.judgeApiKeyFile,
  });
  const policyApiKey =
    secretFromFlags('policy-api-key', 'OPENCLAW_POLICY_API_KEY', {
      inline: flags.policyApiKey,
      file: flags.policyApiKeyFile,
    }) ?? env.OPENCLAW_POLICY_API_KEY;
  return {
    hostId: flags.hostId ?? env.OPENCLAW_ENV_HOST_ID ?? hostname().replace(/[^A-Za-z0-9._-]/g, '-'),
    sharedTaskQueue: flags.envQueue ?? ENV_TASK_QUEUE,
    ...(flags.warmPool && { warmPool: flags.warmPool }),
    envOptions: parseEnvOptions(flags.envOptions ?? env.OPENCLAW_ENV_OPTIONS),
    ...(judgeUrl && { judgeUrl }),
    ...(flags.judgeModel !== undefined && { judgeModel: flags.judgeModel }),
    ...(judgeApiKey !== undefined && { judgeApiKey }),
    ...(policyApiKey !== undefined && { policyApiKey }),
    maxActivities: integer('--max-activities', flags.maxActivities) ?? 200,
    ...(reapIntervalMs !== undefined && { reapIntervalMs }),
  };
}

/** Runs an env host until Ctrl-C. */
export async function runEnvWorker(
  flags: EnvWorkerFlags,
  sandboxProvider?: SandboxProviderFactory,
): Promise<void> {
  const config = configFromFlags({
    temporalAddress: flags.temporalAddress,
    dataDir: flags.dataDir,
    metricsPort: flags.metricsPort,
  });
  const settings = envHostSettingsFromFlags(flags);
  await runEnvHost(config, settings, { ...(sandboxProvider && { sandboxProvider }), untilStopped });
}

export function registerEnvWorkerCommand(program: Command, sandboxProvider?: SandboxProviderFactory): void {
  const worker =
    program.commands.find((c) => c.name() === 'worker') ??
    program.command('worker').description('run a worker');
  worker
    .command('env')
    .description('run an env host: acquires sandboxes on the shared env queue, runs rollout steps on its own')
    .addOption(new Option('--host-id <id>', 'stable host id (OPENCLAW_ENV_HOST_ID; default the host name)'))
    .addOption(temporalAddressOption())
    .addOption(
      new Option('--data-dir <dir>', 'sample store under <dir>/store (OPENCLAW_DATA_DIR; default data)'),
    )
    .addOption(new Option('--env-queue <queue>', 'shared env queue (default env)'))
    .addOption(new Option('--judge-url <url>', 'OpenAI-compatible judge for step votes (OPENCLAW_JUDGE_URL)'))
    .addOption(new Option('--judge-model <name>', 'judge model name'))
    .addOption(refusedInlineSecretOption('judge-api-key'))
    .addOption(secretFileOption('judge-api-key', 'OPENCLAW_JUDGE_API_KEY', 'judge bearer key'))
    .addOption(refusedInlineSecretOption('policy-api-key'))
    .addOption(
      secretFileOption('policy-api-key', 'OPENCLAW_POLICY_API_KEY', 'bearer key for a gateway policy'),
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
    .addOption(metricsPortOption('9466'))
    // `worker` (the control worker's command) has flags of the same names, and commander gives a flag to the
    // parent when both have it: read the parent's too, this command's own winning.
    .action((_flags: EnvWorkerFlags, command: Command) =>
      runEnvWorker(command.optsWithGlobals<EnvWorkerFlags>(), sandboxProvider),
    );
}

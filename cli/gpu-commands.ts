// `openclaw-rl worker gpu`: a GPU host. Starts the policy engine container (SGLang by default) on this
// host's Docker engine, keeps it up (restarting it when it crashes) until Ctrl-C, then removes it; and
// serves `engineStatus`/`restartEngine` on the queue `gpu-<hostId>` unless --no-temporal.
import { hostname } from 'node:os';
import { resolve } from 'node:path';
import { type Command, Option } from 'commander';
import { type EngineLogger, EngineSupervisor } from '../activities/engine-container.js';
import type { EngineContainerSettingsInput } from '../activities/engine-container-settings.js';
import { engineToken } from '../security/engine-token.js';
import { connectWorker } from '../temporal/connection.js';
import { createGpuWorker } from '../workers/gpu-worker.js';
import { startWorkerTelemetry } from '../workers/worker-telemetry.js';
import { configFromFlags } from './cli-config.js';
import { integer, metricsPortOption, temporalAddressOption, untilStopped } from './options.js';

export interface GpuWorkerFlags {
  hostId?: string;
  temporalAddress?: string;
  temporal?: boolean;
  engineKind?: string;
  image?: string;
  modelPath?: string;
  checkpointDir?: string;
  tp?: string;
  gpus?: string;
  enginePort?: string;
  bind?: string;
  containerName?: string;
  engineArgs?: string;
  engineVolumes?: string;
  healthTimeoutS?: string;
  metricsPort?: string;
}

/** An integer flag or environment variable; an empty environment variable counts as not set. */
function setInteger(flag: string, value: string | undefined): number | undefined {
  return integer(flag, value === '' ? undefined : value);
}

/** The engine settings from the flags, each falling back to its environment variable (validated later). */
export function engineSettingsFromFlags(
  flags: GpuWorkerFlags,
  env: NodeJS.ProcessEnv = process.env,
): EngineContainerSettingsInput {
  const modelPath = flags.modelPath ?? env.OPENCLAW_MODEL_PATH;
  if (!modelPath)
    throw new Error('--model-path (OPENCLAW_MODEL_PATH) is required: the model folder on this host');
  const checkpointDir = flags.checkpointDir ?? env.OPENCLAW_CHECKPOINT_DIR;
  const gpus = flags.gpus ?? env.OPENCLAW_ENGINE_GPUS;
  const extra = flags.engineArgs ?? env.OPENCLAW_ENGINE_ARGS;
  const volumes = flags.engineVolumes ?? env.OPENCLAW_ENGINE_VOLUMES;
  const healthTimeoutS = integer(
    '--health-timeout-s',
    flags.healthTimeoutS ?? env.OPENCLAW_ENGINE_HEALTH_TIMEOUT_S,
  );
  const settings: Record<string, unknown> = {
    kind: flags.engineKind ?? env.OPENCLAW_ENGINE_KIND ?? 'sglang',
    modelPath: resolve(modelPath),
    ...(checkpointDir && { checkpointDir: resolve(checkpointDir) }),
    ...((flags.image ?? env.OPENCLAW_ENGINE_IMAGE) && { image: flags.image ?? env.OPENCLAW_ENGINE_IMAGE }),
    ...((flags.containerName ?? env.OPENCLAW_ENGINE_CONTAINER) && {
      name: flags.containerName ?? env.OPENCLAW_ENGINE_CONTAINER,
    }),
    ...((flags.bind ?? env.OPENCLAW_ENGINE_BIND) && { bindAddress: flags.bind ?? env.OPENCLAW_ENGINE_BIND }),
    ...(gpus && { gpus: gpus === 'all' ? 'all' : setInteger('--gpus', gpus) }),
    ...(extra && { extraArgs: extra.split(/\s+/).filter(Boolean) }),
    ...(volumes && { volumes: volumes.split(',').filter(Boolean) }),
    ...(healthTimeoutS !== undefined && { healthTimeoutMs: healthTimeoutS * 1000 }),
  };
  const tp = setInteger('--tp', flags.tp ?? env.OPENCLAW_ENGINE_TP);
  if (tp !== undefined) settings.tensorParallel = tp;
  const port = setInteger('--engine-port', flags.enginePort ?? env.OPENCLAW_ENGINE_PORT);
  if (port !== undefined) settings.hostPort = port;
  return settings as EngineContainerSettingsInput;
}

/** Engine output and supervisor events on stderr, one line each. */
function consoleLogger(): EngineLogger {
  const line = (level: string, message: string, meta?: Record<string, unknown>) => {
    const { engine, ...rest } = meta ?? {};
    const tail = Object.keys(rest).length > 0 ? ` ${JSON.stringify(rest)}` : '';
    process.stderr.write(`${engine ? `[${engine}]` : `[gpu ${level}]`} ${message}${tail}\n`);
  };
  return {
    info: (message, meta) => line('info', message, meta),
    warn: (message, meta) => line('warn', message, meta),
    error: (message, meta) => line('error', message, meta),
  };
}

export async function runGpuWorker(flags: GpuWorkerFlags): Promise<void> {
  const hostId = flags.hostId ?? process.env.OPENCLAW_GPU_HOST_ID ?? hostname();
  const config = configFromFlags({ temporalAddress: flags.temporalAddress, metricsPort: flags.metricsPort });
  const token = engineToken(config);
  const supervisor = new EngineSupervisor({
    settings: { ...engineSettingsFromFlags(flags), ...(token && { token }) },
    hostId,
    logger: consoleLogger(),
  });
  // The engine container counts while it is up, starting or restarting.
  const telemetry = await startWorkerTelemetry(config, 'gpu', {
    runningContainers: () => (supervisor.status().state === 'stopped' ? 0 : 1),
  });
  const connection = flags.temporal === false ? undefined : await connectWorker(config);
  const gpu = await createGpuWorker({
    supervisor,
    hostId,
    connection,
    namespace: config.temporal.namespace,
    workerOptions: telemetry.workerOptions,
  });
  if (connection)
    telemetry.watchTaskQueues(connection.workflowService, config.temporal.namespace, [gpu.taskQueue]);
  const status = supervisor.status();
  console.log(
    `gpu host ${hostId}: ${status.kind} engine ${status.image} as ${status.name} on ${status.url}` +
      (connection ? `, queue ${gpu.taskQueue} at ${config.temporal.address}` : ''),
  );
  const running = gpu.run();
  const outcome = await Promise.race([
    untilStopped().then(() => 'stopped' as const),
    running.then(() => 'ended' as const),
  ]).catch((error: unknown) => error as Error);
  console.log('stopping the engine');
  await gpu.shutdown();
  await connection?.close();
  await telemetry.close();
  if (outcome instanceof Error) throw outcome;
}

export function registerGpuCommands(program: Command): void {
  const worker =
    program.commands.find((c) => c.name() === 'worker') ??
    program.command('worker').description('run a worker');
  worker
    .command('gpu')
    .description(
      'run a GPU host: keeps a policy engine container (SGLang) up and serves the gpu-<host-id> queue',
    )
    .addOption(new Option('--host-id <id>', 'stable host id (OPENCLAW_GPU_HOST_ID; default the host name)'))
    .addOption(temporalAddressOption())
    .option('--no-temporal', 'only supervise the engine: no Temporal queue')
    .addOption(metricsPortOption('9467'))
    .addOption(
      new Option('--engine-kind <kind>', 'sglang | vllm | reference (OPENCLAW_ENGINE_KIND; default sglang)'),
    )
    .addOption(
      new Option(
        '--image <image>',
        'engine image (OPENCLAW_ENGINE_IMAGE; default lmsysorg/sglang:latest or openclaw/engine:dev)',
      ),
    )
    .addOption(
      new Option('--model-path <dir>', 'model folder on this host, mounted read-only (OPENCLAW_MODEL_PATH)'),
    )
    .addOption(
      new Option(
        '--checkpoint-dir <dir>',
        'published checkpoints, mounted read-only at the same path (OPENCLAW_CHECKPOINT_DIR)',
      ),
    )
    .addOption(new Option('--tp <n>', 'tensor-parallel size (OPENCLAW_ENGINE_TP; default 1)'))
    .addOption(
      new Option(
        '--gpus <all|n>',
        'GPUs given to the container, 0 for none (OPENCLAW_ENGINE_GPUS; default all)',
      ),
    )
    .addOption(
      new Option('--engine-port <port>', 'host port of the engine (OPENCLAW_ENGINE_PORT; default 30000)'),
    )
    .addOption(
      new Option(
        '--bind <address>',
        'address the port is published on (OPENCLAW_ENGINE_BIND; default 127.0.0.1)',
      ),
    )
    .addOption(
      new Option(
        '--container-name <name>',
        'engine container name (OPENCLAW_ENGINE_CONTAINER; default openclaw-policy-engine)',
      ),
    )
    .addOption(
      new Option('--engine-args <args>', 'extra server arguments, space-separated (OPENCLAW_ENGINE_ARGS)'),
    )
    .addOption(
      new Option(
        '--engine-volumes <binds>',
        'more mounts, comma-separated Docker binds, e.g. openclaw_data:/data:ro (OPENCLAW_ENGINE_VOLUMES)',
      ),
    )
    .addOption(
      new Option(
        '--health-timeout-s <s>',
        'how long a start may take (OPENCLAW_ENGINE_HEALTH_TIMEOUT_S; default 900)',
      ),
    )
    // `worker` has --temporal-address too, and commander gives it to the parent: read both.
    .action((_flags: GpuWorkerFlags, command: Command) =>
      runGpuWorker(command.optsWithGlobals<GpuWorkerFlags>()),
    );
}

// What a GPU host's policy engine container is made of, and the command line it runs. SGLang is launched
// with its own server command, vLLM with its OpenAI server (the project's arguments, engines/
// vllm-server-args.ts), the reference engine (SGLang's HTTP contract on CPU) with `openclaw_engine serve`,
// chosen by `kind`. Pure: validated with zod here, turned into a container by engine-container.ts.
import { z } from 'zod';
import { ENGINE_KINDS } from '../core/engine-kinds.js';
import { describeZodError } from '../core/training-settings.js';
import { sglangKeyedCommand } from '../engines/sglang-keyed-launch.js';
import {
  VLLM_SERVER_ENV,
  VLLM_SERVER_MODULE,
  vllmApiKeyEnv,
  vllmServerArgs,
} from '../engines/vllm-server-args.js';
import { isLoopbackHost } from '../security/loopback-host.js';

/** Where the model folder appears inside the container (mounted read-only). */
export const ENGINE_MODEL_MOUNT = '/models/policy';

export const engineKindSchema = z.enum(ENGINE_KINDS);
export type EngineKind = z.infer<typeof engineKindSchema>;

export const engineContainerSettingsSchema = z.object({
  kind: engineKindSchema.default('sglang'),
  image: z.string().min(1).optional(),
  /** Container name; one engine per name on this Docker host. */
  name: z
    .string()
    .regex(/^[a-zA-Z0-9][a-zA-Z0-9_.-]*$/, 'letters, digits, "_", "." or "-"')
    .default('openclaw-policy-engine'),
  /** Host folder of the Hugging Face model, mounted read-only at /models/policy. */
  modelPath: z.string().min(1),
  /**
   * Host folder of published checkpoints, mounted read-only at the same path, so the path publishWeights
   * sends to /update_weights_from_disk names the same folder inside the engine.
   */
  checkpointDir: z.string().min(1).optional(),
  /** More mounts, as Docker bind strings (`host-path-or-volume:container-path[:ro]`). */
  volumes: z.array(z.string().regex(/^[^:]+:\/[^:]*(:(ro|rw))?$/, 'source:/path[:ro|rw]')).default([]),
  tensorParallel: z.number().int().min(1).default(1),
  /** GPUs requested from the NVIDIA runtime: a count, or "all"; 0 asks for none (CPU engines). */
  gpus: z.union([z.number().int().min(0), z.literal('all')]).default('all'),
  /** Specific GPU ids (e.g. ["0","1"]); overrides `gpus` when given. */
  gpuDeviceIds: z.array(z.string().min(1)).optional(),
  hostPort: z.number().int().min(1).max(65535).default(30000),
  /** Address the host port is published on. */
  bindAddress: z.string().min(1).default('127.0.0.1'),
  /**
   * The engine token (engine.token), always in the container's environment: the reference engine asks it of
   * every route but /health, SGLang gets it as its API key (every route but /health*, /ready*, /metrics*) through
   * engines/sglang-keyed-launch.ts, vLLM as VLLM_API_KEY (its /v1 routes only).
   * Without one the engine runs open, which is allowed only while the port is published on loopback.
   */
  token: z.string().min(1).optional(),
  /** Port the server listens on inside the container. */
  containerPort: z.number().int().min(1).max(65535).default(30000),
  /** Appended to the server's command line as given. */
  extraArgs: z.array(z.string()).default([]),
  env: z.record(z.string(), z.string()).default({}),
  /** /dev/shm size; SGLang's NCCL and its tokenizer processes need far more than Docker's 64 MiB. */
  shmSizeBytes: z.number().int().min(0).optional(),
  /** How long a start may take to answer /health (big models load for minutes). */
  healthTimeoutMs: z
    .number()
    .int()
    .min(1)
    .default(15 * 60_000),
  /**
   * While healthy, /health is asked every `livenessIntervalMs`; after `livenessFailures` failures in a row the
   * engine counts as crashed (a hung process does not exit) and is restarted. 0 turns the check off.
   */
  livenessIntervalMs: z.number().int().min(0).default(30_000),
  livenessFailures: z.number().int().min(1).default(4),
  /** How long one health request may take. */
  healthRequestTimeoutMs: z.number().int().min(1).default(10_000),
  /** First wait before restarting a crashed engine; doubles per crash in a row, up to `restartMaxDelayMs`. */
  restartDelayMs: z.number().int().min(0).default(2_000),
  restartMaxDelayMs: z.number().int().min(0).default(120_000),
});
/** Every engine listens on 0.0.0.0 inside its container: the host's published address decides. */
function checkEngineAccess(settings: z.output<typeof engineContainerSettingsSchema>, ctx: z.RefinementCtx) {
  if (!settings.token && !isLoopbackHost(settings.bindAddress))
    ctx.addIssue({
      code: 'custom',
      path: ['token'],
      message: `publishing the ${settings.kind} engine on ${settings.bindAddress} needs a token (engine.token or OPENCLAW_ENGINE_TOKEN)`,
    });
}

const checkedEngineContainerSettingsSchema = engineContainerSettingsSchema.superRefine(checkEngineAccess);

export type EngineContainerSettingsInput = z.input<typeof engineContainerSettingsSchema>;
export type EngineContainerSettings = z.output<typeof engineContainerSettingsSchema>;

export const DEFAULT_ENGINE_IMAGES: Record<EngineKind, string> = {
  sglang: 'lmsysorg/sglang:latest',
  vllm: 'openclaw/vllm:dev',
  reference: 'openclaw/engine:dev',
};

/**
 * SGLang's output parsers for Qwen3-style models. Besides what the client sees, they matter for exact
 * capture: SGLang sends a streamed step's log-probs on a chunk of their own only when a parser is active
 * (serving_chat.py `_generate_stream_content`), so without one the end-of-turn token's log-prob is lost.
 */
export const SGLANG_PARSER_ARGS = ['--tool-call-parser', 'qwen25', '--reasoning-parser', 'qwen3'] as const;

export function parseEngineContainerSettings(input: unknown): EngineContainerSettings {
  const checked = checkedEngineContainerSettingsSchema.safeParse(input);
  if (!checked.success) throw new Error(`invalid engine settings: ${describeZodError(checked.error)}`);
  return checked.data;
}

export function engineImage(settings: EngineContainerSettings): string {
  return settings.image ?? DEFAULT_ENGINE_IMAGES[settings.kind];
}

/** The server's command line inside the container. */
export function engineCommand(settings: EngineContainerSettings): string[] {
  const port = String(settings.containerPort);
  if (settings.kind === 'reference') {
    return [
      'python',
      '-m',
      'openclaw_engine',
      'serve',
      '--model',
      ENGINE_MODEL_MOUNT,
      '--host',
      '0.0.0.0',
      '--port',
      port,
      ...settings.extraArgs,
    ];
  }
  if (settings.kind === 'vllm') {
    return [
      'python3',
      '-m',
      VLLM_SERVER_MODULE,
      ...vllmServerArgs({
        model: ENGINE_MODEL_MOUNT,
        servedModelName: 'default',
        host: '0.0.0.0',
        port: settings.containerPort,
        device: settings.gpus === 0 && !settings.gpuDeviceIds?.length ? 'cpu' : 'cuda',
        tensorParallel: settings.tensorParallel,
        extraArgs: settings.extraArgs,
      }),
    ];
  }
  // The key travels in the container's environment, never its command line (engines/sglang-keyed-launch.ts).
  return sglangKeyedCommand([
    '--model-path',
    ENGINE_MODEL_MOUNT,
    '--tp',
    String(settings.tensorParallel),
    '--host',
    '0.0.0.0',
    '--port',
    port,
    '--enable-metrics',
    ...SGLANG_PARSER_ARGS,
    ...settings.extraArgs,
  ]);
}

/** The NVIDIA device request of the container, or none when it asks for no GPU. */
export function gpuDeviceRequests(
  settings: EngineContainerSettings,
): { Driver: string; Count?: number; DeviceIDs?: string[]; Capabilities: string[][] }[] {
  if (settings.gpuDeviceIds && settings.gpuDeviceIds.length > 0)
    return [{ Driver: 'nvidia', DeviceIDs: settings.gpuDeviceIds, Capabilities: [['gpu']] }];
  if (settings.gpus === 0) return [];
  // The Engine API spells "all GPUs" as Count -1.
  return [{ Driver: 'nvidia', Count: settings.gpus === 'all' ? -1 : settings.gpus, Capabilities: [['gpu']] }];
}

/**
 * The reference engine's token and path roots (engine/openclaw_engine/access.py): the token when there is one,
 * else an explicit open listener (the settings allow that only on a loopback host address); published
 * checkpoints are mounted at their host path, which is the root publishing may name.
 */
function referenceEngineAccessEnv(settings: EngineContainerSettings): Record<string, string> {
  return {
    ...(settings.token ? { OPENCLAW_ENGINE_TOKEN: settings.token } : { OPENCLAW_ENGINE_ALLOW_NO_TOKEN: '1' }),
    ...(settings.checkpointDir && { OPENCLAW_ENGINE_CHECKPOINT_ROOTS: settings.checkpointDir }),
  };
}

/** The Engine API's create body for the engine container (labels say who made it). */
export function engineContainerSpec(settings: EngineContainerSettings, hostId: string) {
  const port = `${settings.containerPort}/tcp`;
  const binds = [`${settings.modelPath}:${ENGINE_MODEL_MOUNT}:ro`];
  if (settings.checkpointDir) binds.push(`${settings.checkpointDir}:${settings.checkpointDir}:ro`);
  binds.push(...settings.volumes);
  const shm = settings.shmSizeBytes ?? (settings.kind === 'sglang' ? 16 * 1024 ** 3 : undefined);
  return {
    name: settings.name,
    Image: engineImage(settings),
    Cmd: engineCommand(settings),
    Env: Object.entries({
      ...(settings.kind === 'vllm' && { ...VLLM_SERVER_ENV, ...vllmApiKeyEnv(settings.token) }),
      ...(settings.kind === 'sglang' && settings.token && { OPENCLAW_ENGINE_TOKEN: settings.token }),
      ...(settings.kind === 'reference' && referenceEngineAccessEnv(settings)),
      ...settings.env,
    }).map(([key, value]) => `${key}=${value}`),
    Labels: {
      'openclaw.role': 'policy-engine',
      'openclaw.gpu-host': hostId,
      'openclaw.engine-kind': settings.kind,
    },
    ExposedPorts: { [port]: {} },
    HostConfig: {
      Binds: binds,
      PortBindings: { [port]: [{ HostIp: settings.bindAddress, HostPort: String(settings.hostPort) }] },
      DeviceRequests: gpuDeviceRequests(settings),
      ...(shm !== undefined && { ShmSize: shm }),
      // The supervisor restarts it (counted, with backoff): Docker's own policy would hide the crashes.
      RestartPolicy: { Name: 'no' },
    },
  };
}

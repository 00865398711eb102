// The Track 1 configuration: one zod schema with the defaults, one table saying which environment variable
// sets each option (and what it means, for docs/configuration.md), and `loadConfig`, which layers
// defaults < environment < overrides. Nothing here reads `process.env`: callers pass the environment in.

import { z } from 'zod';
import { ENGINE_KINDS, type EngineKind } from './engine-kinds.js';
import { lossSettingsSchema, optimizerSettingsSchema } from './loss-settings.js';
import { CONTROL_TASK_QUEUE } from './task-queue-names.js';
import type { SupersededPolicy } from './types.js';

export const METHODS = ['rl', 'opd', 'combine'] as const;
export const STALENESS_POLICIES = ['drop', 'rollout-logprobs'] as const;
export const TRAINER_BACKENDS = ['reference', 'slime', 'tinker'] as const;
export const EPOCH_COMMANDS = ['slime', 'reference'] as const;
export const PAYLOAD_ENCRYPTION_MODES = ['auto', 'required', 'off'] as const;
export const SUPERSEDED_POLICIES = ['exclude', 'negative'] as const satisfies readonly SupersededPolicy[];
export { ENGINE_KINDS, type EngineKind };
export const STORE_BACKENDS = ['file', 'postgres'] as const;

/** Judge defaults that follow the method, as the original launch scripts set them (PRM_M, PRM_MAX_NEW_TOKENS). */
export const JUDGE_DEFAULTS_BY_METHOD = {
  rl: { votes: 3, maxTokens: 4096 },
  opd: { votes: 1, maxTokens: 8192 },
  combine: { votes: 1, maxTokens: 8192 },
} as const;

const httpUrl = z.url({ protocol: /^https?$/, error: 'expected an http(s) URL' });
const port = z.number().int().min(0).max(65535); // 0: any free port

const configObject = z.strictObject({
  runId: z
    .string()
    .regex(/^[A-Za-z0-9._-]{1,64}$/, 'use 1-64 letters, digits, ".", "_" or "-"')
    .default('default'),
  method: z.enum(METHODS).default('combine'),
  dataDir: z.string().min(1).default('data'),
  gateway: z
    .strictObject({
      host: z.string().min(1).default('127.0.0.1'),
      port: port.default(8000),
      apiKeys: z.array(z.string().min(1)).default([]),
      // Empty: `<dataDir>/keys/api-keys`, read when it exists.
      apiKeysFile: z.string().default(''),
      allowNoKeys: z.boolean().default(false),
      rateLimitPerMinute: z.number().int().min(0).default(600),
      bodyLimitBytes: z
        .number()
        .int()
        .min(1024)
        .default(16 * 1024 * 1024),
      idempotencyTtlMs: z.number().int().min(1000).default(86_400_000),
    })
    .prefault({}),
  sampling: z
    .strictObject({
      temperature: z.number().min(0).max(2).optional(),
      topP: z.number().gt(0).max(1).optional(),
      topK: z.number().int().min(-1).optional(),
      minP: z.number().min(0).max(1).optional(),
    })
    .prefault({}),
  engine: z
    .strictObject({
      kind: z.enum(ENGINE_KINDS).default('reference'),
      url: httpUrl.default('http://127.0.0.1:30000'),
      // Empty: `openclaw-rl engine` and `dev` build and serve a tiny random model in `<dataDir>/tiny-model`.
      model: z.string().default(''),
      device: z.enum(['cpu', 'cuda']).default('cpu'),
      loraRank: z.number().int().min(0).default(0),
      args: z.string().default(''),
      // Sent as a bearer token to every engine and trainer; security/engine-token.ts reads the file.
      token: z.string().default(''),
      tokenFile: z.string().default(''),
      allowNoToken: z.boolean().default(false),
    })
    .prefault({}),
  temporal: z
    .strictObject({
      address: z.string().min(1).default('127.0.0.1:7233'),
      namespace: z.string().min(1).default('default'),
      taskQueue: z.string().min(1).default(CONTROL_TASK_QUEUE),
      heartbeatTimeoutMs: z.number().int().min(500).default(30_000),
    })
    .prefault({}),
  judgeEngine: z
    .strictObject({
      // Empty: the engine URL with the next port (http://127.0.0.1:30001 beside the default engine).
      url: z.union([z.literal(''), httpUrl]).default(''),
      // Empty: the policy's base checkpoint (`engine.model`, or the tiny model).
      model: z.string().default(''),
      // What serves there: the reference engine `dev` starts, or SGLang (compose's gpu-judge profile).
      kind: z.enum(ENGINE_KINDS).default('reference'),
    })
    .prefault({}),
  judge: z
    .strictObject({
      // Empty: the frozen judge engine's OpenAI endpoint.
      baseUrl: z.union([z.literal(''), httpUrl]).default(''),
      model: z.string().min(1).default('default'),
      apiKey: z.string().default(''),
      votes: z.number().int().min(1).max(32).optional(),
      temperature: z.number().min(0).max(2).default(0.6),
      maxTokens: z.number().int().min(1).optional(),
    })
    .prefault({}),
  teacher: z
    .strictObject({
      // Empty: the frozen judge engine.
      url: z.union([z.literal(''), httpUrl]).default(''),
      // Empty: the frozen judge engine's kind when `url` is empty, else the policy engine's.
      kind: z.union([z.literal(''), z.enum(ENGINE_KINDS)]).default(''),
      topK: z.number().int().min(0).max(1024).default(0),
    })
    .prefault({}),
  training: z
    .strictObject({
      batchSize: z.number().int().min(1).default(16),
      // The optimizer's settings sit flat in `training` (OPENCLAW_LEARNING_RATE...); the run's input nests them.
      ...optimizerSettingsSchema.shape,
      maxPolicyLag: z.number().int().min(0).default(2),
      stalenessPolicy: z.enum(STALENESS_POLICIES).default('rollout-logprobs'),
      continueAsNewAfterSteps: z.number().int().min(1).default(50),
      continueAsNewAfterEvents: z.number().int().min(200).max(40_000).default(10_000),
      keepCheckpoints: z.number().int().min(0).default(3),
    })
    .prefault({}),
  loss: lossSettingsSchema.prefault({}),
  trainer: z
    .strictObject({
      backend: z.enum(TRAINER_BACKENDS).default('reference'),
      // Empty: the control worker runs training steps itself; set: `openclaw-rl worker trainer` runs them.
      taskQueue: z.string().default(''),
      image: z.string().default(''),
      epochCommand: z.enum(EPOCH_COMMANDS).default('slime'),
      sharedDir: z.string().default(''),
      baseModel: z.string().default(''),
      gpus: z.number().int().min(0).default(1),
      gpuIds: z.array(z.string().min(1)).default([]),
      shmBytes: z
        .number()
        .int()
        .min(0)
        .default(16 * 2 ** 30),
      extraArgs: z.string().default(''),
      tinkerUrl: z.union([z.literal(''), httpUrl]).default(''),
      url: z.union([z.literal(''), httpUrl]).default(''),
    })
    .prefault({}),
  store: z
    .strictObject({
      backend: z.enum(STORE_BACKENDS).default('file'),
      url: z
        .union([
          z.literal(''),
          z.string().regex(/^postgres(ql)?:\/\/\S+$/, 'expected a postgres:// or postgresql:// URL'),
        ])
        .default(''),
      outboxLeaseMs: z.number().int().min(1000).default(10_000),
      outboxYieldMs: z.number().int().min(0).default(2_000),
      journal: z.boolean().default(true),
      poolSize: z.number().int().min(1).max(1000).default(20),
    })
    .prefault({}),
  payloads: z
    .strictObject({
      encryption: z.enum(PAYLOAD_ENCRYPTION_MODES).default('auto'),
      // `<id>:<base64 of 32 bytes>` each; parsed and checked by temporal/payload-keys.ts.
      keys: z.array(z.string().min(1)).default([]),
      keyId: z.string().default(''),
      // Empty: `<dataDir>/keys/payload-keys.json`.
      keysFile: z.string().default(''),
    })
    .prefault({}),
  codecServer: z
    .strictObject({
      host: z.string().min(1).default('127.0.0.1'),
      port: port.default(8234),
      // Empty: the Temporal UI origins this project runs (the dev server's and compose's).
      corsOrigins: z.array(z.string().min(1)).default([]),
    })
    .prefault({}),
  session: z
    .strictObject({
      idleTimeoutMs: z.number().int().min(1000).default(1_800_000),
      reopenHorizonMs: z.number().int().min(0).default(86_400_000),
      superseded: z.enum(SUPERSEDED_POLICIES).default('exclude'),
      continueAsNewAfterTurns: z.number().int().min(1).default(200),
    })
    .prefault({}),
});

/** Top-K distillation is a loss of opd runs (spec 6.6): computing the arrays for another method is a mistake. */
function checkTopK(config: z.output<typeof configObject>, ctx: z.RefinementCtx): void {
  if (config.teacher.topK > 0 && config.method !== 'opd')
    ctx.addIssue({
      code: 'custom',
      path: ['teacher', 'topK'],
      message: `top-K distillation trains opd runs only; set method opd, or teacher.topK 0 for ${config.method}`,
    });
}

/**
 * The frozen judge engine's URL: as configured, else the policy engine's URL with the next port (the one after
 * next when the policy is not the reference engine, whose reference trainer then takes the next port).
 */
export function judgeEngineUrl(config: {
  engine: { url: string; kind: EngineKind };
  judgeEngine: { url: string };
}): string {
  if (config.judgeEngine.url) return config.judgeEngine.url.replace(/\/+$/, '');
  const url = new URL(config.engine.url);
  const port = Number(url.port || (url.protocol === 'https:' ? 443 : 80));
  url.port = String(port + (config.engine.kind === 'reference' ? 1 : 2));
  return url.toString().replace(/\/+$/, '');
}

/** A PostgreSQL store needs its server's URL. */
function checkStore(config: z.output<typeof configObject>, ctx: z.RefinementCtx): void {
  if (config.store.backend === 'postgres' && !config.store.url)
    ctx.addIssue({
      code: 'custom',
      path: ['store', 'url'],
      message: 'the postgres store needs a URL, e.g. postgres://openclaw@db-host:5432/openclaw',
    });
}

/** What a slime trainer cannot start without, checked with the config rather than at the first step. */
function checkTrainer(config: z.output<typeof configObject>, ctx: z.RefinementCtx): void {
  if (config.trainer.backend !== 'slime') return;
  if (!config.trainer.image)
    ctx.addIssue({
      code: 'custom',
      path: ['trainer', 'image'],
      message: 'the slime trainer needs an image (a slime image with the engine package installed)',
    });
  if (!config.trainer.baseModel && !config.engine.model)
    ctx.addIssue({
      code: 'custom',
      path: ['trainer', 'baseModel'],
      message: 'the slime trainer needs the base model folder on the Docker host',
    });
}

/**
 * The schema: validates, fills defaults, then fills the defaults that depend on other options: the judge's
 * by method, and the frozen judge engine (judge and teacher point at it unless set).
 */
export const configSchema = configObject
  .superRefine(checkTrainer)
  .superRefine(checkTopK)
  .superRefine(checkStore)
  .transform((config) => {
    const frozen = judgeEngineUrl(config);
    return {
      ...config,
      judgeEngine: {
        ...config.judgeEngine,
        url: frozen,
        model: config.judgeEngine.model || config.engine.model,
      },
      judge: {
        ...config.judge,
        baseUrl: config.judge.baseUrl || `${frozen}/v1`,
        votes: config.judge.votes ?? JUDGE_DEFAULTS_BY_METHOD[config.method].votes,
        maxTokens: config.judge.maxTokens ?? JUDGE_DEFAULTS_BY_METHOD[config.method].maxTokens,
      },
      teacher: {
        ...config.teacher,
        url: config.teacher.url || frozen,
        kind: config.teacher.kind || (config.teacher.url ? ('' as const) : config.judgeEngine.kind),
      },
    };
  });

export type OpenClawConfig = z.output<typeof configSchema>;
/** What overrides (a workflow start input, a test) may contain: every field optional. */
export type OpenClawConfigInput = z.input<typeof configSchema>;

/** How an environment variable's text becomes the option's value. */
export type ConfigValueKind =
  | 'string'
  | 'integer'
  | 'number'
  | 'boolean'
  | 'enum'
  | 'string-list'
  | 'number-pair';

export interface ConfigOption {
  /** Dotted path into the config object. */
  key: string;
  env: string;
  kind: ConfigValueKind;
  description: string;
  /** Shown instead of the schema default when the default depends on something else. */
  defaultNote?: string;
}

export const CONFIG_OPTIONS = [
  {
    key: 'runId',
    env: 'OPENCLAW_RUN_ID',
    kind: 'string',
    description: 'Training run name; the training workflow id is `training-<runId>`.',
  },
  {
    key: 'method',
    env: 'OPENCLAW_METHOD',
    kind: 'enum',
    description:
      'Learning method: `rl` (binary judge reward), `opd` (hindsight-hint distillation) or `combine` (both, one sample per turn).',
  },
  {
    key: 'dataDir',
    env: 'OPENCLAW_DATA_DIR',
    kind: 'string',
    description: 'Directory of the filesystem sample store, checkpoints and exported weights.',
  },
  {
    key: 'gateway.host',
    env: 'OPENCLAW_GATEWAY_HOST',
    kind: 'string',
    description: 'Address the gateway listens on; `0.0.0.0` to accept other machines.',
  },
  {
    key: 'gateway.port',
    env: 'OPENCLAW_GATEWAY_PORT',
    kind: 'integer',
    description: 'Port of the OpenAI-compatible gateway.',
  },
  {
    key: 'gateway.apiKeys',
    env: 'OPENCLAW_API_KEYS',
    kind: 'string-list',
    description:
      'Comma-separated bearer keys clients must send (original: `SGLANG_API_KEY`); each is a tenant of its own (`key-<digest>`; name tenants in the keys file). With none here and no keys file, the gateway is open (one tenant, `local`), which it only allows on a loopback address (docs/security.md).',
  },
  {
    key: 'gateway.apiKeysFile',
    env: 'OPENCLAW_API_KEYS_FILE',
    kind: 'string',
    defaultNote: '`<dataDir>/keys/api-keys`, when it exists',
    description:
      'File of more bearer keys, one per line: `<key> [<tenant>]` (a key without a tenant is a tenant of its own; several keys may share one; `#` starts a comment). Session ids are scoped by the tenant. `openclaw-rl keys init` creates it with a new key, and compose does on first start; `keys add --tenant NAME` adds one (docs/security.md#tenants).',
  },
  {
    key: 'gateway.allowNoKeys',
    env: 'OPENCLAW_GATEWAY_ALLOW_NO_KEYS',
    kind: 'boolean',
    description:
      'Let the gateway listen on a non-loopback address without any key (`--allow-no-keys`); otherwise it refuses to start.',
  },
  {
    key: 'gateway.rateLimitPerMinute',
    env: 'OPENCLAW_GATEWAY_RATE_LIMIT',
    kind: 'integer',
    description:
      'Requests per minute each API key (each client address on an open gateway) may make; more get 429 with `retry-after`. 0 turns the limit off.',
  },
  {
    key: 'gateway.bodyLimitBytes',
    env: 'OPENCLAW_GATEWAY_BODY_LIMIT_BYTES',
    kind: 'integer',
    description: 'Largest request body the gateway reads; larger ones get 413.',
  },
  {
    key: 'gateway.idempotencyTtlMs',
    env: 'OPENCLAW_IDEMPOTENCY_TTL_MS',
    kind: 'integer',
    description:
      'How long a response sent under an `Idempotency-Key` is kept for replay (per API key); after it the key may be reused.',
  },
  {
    key: 'sampling.temperature',
    env: 'OPENCLAW_SAMPLING_TEMPERATURE',
    kind: 'number',
    defaultNote: "the model's `generation_config.json`, else `1`",
    description:
      'Temperature the gateway sends when a client leaves it out (it always sends one, so every turn records the temperature the engine used).',
  },
  {
    key: 'sampling.topP',
    env: 'OPENCLAW_SAMPLING_TOP_P',
    kind: 'number',
    defaultNote: "the model's `generation_config.json`, else `1`",
    description: '`top_p` the gateway sends when a client leaves it out.',
  },
  {
    key: 'sampling.topK',
    env: 'OPENCLAW_SAMPLING_TOP_K',
    kind: 'integer',
    defaultNote: "the model's `generation_config.json`, else `-1` (off)",
    description: '`top_k` the gateway sends when a client leaves it out.',
  },
  {
    key: 'sampling.minP',
    env: 'OPENCLAW_SAMPLING_MIN_P',
    kind: 'number',
    defaultNote: "the model's `generation_config.json`, else `0`",
    description: '`min_p` the gateway sends when a client leaves it out.',
  },
  {
    key: 'engine.kind',
    env: 'OPENCLAW_ENGINE_KIND',
    kind: 'enum',
    description:
      "Which engine serves the policy at `engine.url`: `reference` (the project's engine), `sglang` or `vllm` (docs/engines.md). `dev` and `engine` start a vLLM themselves for `vllm`.",
  },
  {
    key: 'engine.url',
    env: 'OPENCLAW_ENGINE_URL',
    kind: 'string',
    description: 'Base URL of the policy engine (without `/v1`).',
  },
  {
    key: 'engine.model',
    env: 'OPENCLAW_MODEL',
    kind: 'string',
    defaultNote: 'a tiny random model built in `<dataDir>/tiny-model`',
    description:
      'Hugging Face model folder the reference engine serves and trains (`openclaw-rl engine`, `dev`).',
  },
  {
    key: 'engine.device',
    env: 'OPENCLAW_DEVICE',
    kind: 'enum',
    description: 'Device of the reference engine: `cpu` or `cuda`.',
  },
  {
    key: 'engine.loraRank',
    env: 'OPENCLAW_LORA_RANK',
    kind: 'integer',
    description:
      'LoRA rank of the trainer (reference, slime on its FSDP backend with alpha 2×rank, Tinker); 0 trains all weights (Tinker: its default rank).',
  },
  {
    key: 'engine.args',
    env: 'OPENCLAW_ENGINE_ARGS',
    kind: 'string',
    description:
      'Extra arguments, separated by spaces, for the engine server the project starts (`dev`, `engine`, `worker gpu`), e.g. `--max-model-len 8192`.',
  },
  {
    key: 'engine.token',
    env: 'OPENCLAW_ENGINE_TOKEN',
    kind: 'string',
    description:
      'Bearer token of the engines and trainers: the reference engine, its trainer and the Tinker sidecar require it on every route but `/health` when set, and refuse to listen beyond loopback without one; the vLLM and SGLang servers the project starts get it as their API key (vLLM guards only its `/v1` routes, docs/security.md); every project process sends it to the engines it calls.',
  },
  {
    key: 'engine.tokenFile',
    env: 'OPENCLAW_ENGINE_TOKEN_FILE',
    kind: 'string',
    description:
      'File holding `engine.token` (first line; `openclaw-rl keys init` and compose make `<keys>/engine-token`); used when `engine.token` is empty.',
  },
  {
    key: 'engine.allowNoToken',
    env: 'OPENCLAW_ENGINE_ALLOW_NO_TOKEN',
    kind: 'boolean',
    description:
      'Let the reference engine, the Tinker sidecar and a vLLM that `dev`/`engine` start listen beyond loopback without a token (`--allow-no-token`); otherwise they refuse to start.',
  },
  {
    key: 'temporal.address',
    env: 'TEMPORAL_ADDRESS',
    kind: 'string',
    defaultNote: "the Temporal profile's address, else `127.0.0.1:7233`",
    description:
      'Temporal frontend `host:port`. TLS, mTLS and API keys come from the standard `TEMPORAL_*` variables and `temporal.toml` profiles (docs/security.md); `dev` starts a dev server here when none answers.',
  },
  {
    key: 'temporal.namespace',
    env: 'TEMPORAL_NAMESPACE',
    kind: 'string',
    defaultNote: "the Temporal profile's namespace, else `default`",
    description: 'Temporal namespace of every workflow.',
  },
  {
    key: 'temporal.taskQueue',
    env: 'OPENCLAW_CONTROL_TASK_QUEUE',
    kind: 'string',
    description: 'Task queue of the control worker (sessions, scoring, training loop).',
  },
  {
    key: 'temporal.heartbeatTimeoutMs',
    env: 'OPENCLAW_HEARTBEAT_TIMEOUT_MS',
    kind: 'integer',
    description:
      'Long activities (judge calls, training steps, publishing) heartbeat; a worker silent this long is presumed dead and its activity retried.',
  },
  {
    key: 'judgeEngine.url',
    env: 'OPENCLAW_JUDGE_ENGINE_URL',
    kind: 'string',
    defaultNote: '`engine.url` with the next port (`http://127.0.0.1:30001`; with vLLM the one after next)',
    description:
      "The frozen judge engine: serves the base checkpoint for judge calls and teacher log-probs and is never updated (the original's PRM engine), so the policy never judges or teaches itself. `dev` starts a reference engine there unless one answers.",
  },
  {
    key: 'judgeEngine.model',
    env: 'OPENCLAW_JUDGE_ENGINE_MODEL',
    kind: 'string',
    defaultNote: '`engine.model` (the base checkpoint)',
    description:
      'Hugging Face model folder the frozen judge engine serves (original: `PRM_MODEL_PATH`, the base checkpoint by default).',
  },
  {
    key: 'judgeEngine.kind',
    env: 'OPENCLAW_JUDGE_ENGINE_KIND',
    kind: 'enum',
    description:
      "Engine kind of the frozen judge engine: `reference` (what `dev` and compose start) or `sglang` (compose's gpu-judge profile); the teacher is of this kind unless `teacher.url` is set.",
  },
  {
    key: 'judge.baseUrl',
    env: 'OPENCLAW_JUDGE_URL',
    kind: 'string',
    defaultNote: '`judgeEngine.url` + `/v1`',
    description:
      'OpenAI-compatible base URL of the judge model (ends in `/v1`); an external API works. Pointing it at the policy engine makes the live policy judge itself (a self-reward loop).',
  },
  {
    key: 'judge.model',
    env: 'OPENCLAW_JUDGE_MODEL',
    kind: 'string',
    description:
      'Model name sent to the judge endpoint (`default` is what SGLang accepts for its one model).',
  },
  {
    key: 'judge.apiKey',
    env: 'OPENCLAW_JUDGE_API_KEY',
    kind: 'string',
    description: 'Bearer key for the judge endpoint; empty sends none.',
  },
  {
    key: 'judge.votes',
    env: 'OPENCLAW_JUDGE_VOTES',
    kind: 'integer',
    defaultNote: '3 for `rl`, 1 for `opd` and `combine`',
    description:
      'Judge calls per turn, run in parallel: binary votes are majority-voted, hint votes pick the longest hint (original: `PRM_M`).',
  },
  {
    key: 'judge.temperature',
    env: 'OPENCLAW_JUDGE_TEMPERATURE',
    kind: 'number',
    description: 'Sampling temperature of judge calls (original: `PRM_TEMPERATURE`).',
  },
  {
    key: 'judge.maxTokens',
    env: 'OPENCLAW_JUDGE_MAX_TOKENS',
    kind: 'integer',
    defaultNote: '4096 for `rl`, 8192 for `opd` and `combine`',
    description: 'Longest judge reply, in tokens (original: `PRM_MAX_NEW_TOKENS`).',
  },
  {
    key: 'teacher.url',
    env: 'OPENCLAW_TEACHER_URL',
    kind: 'string',
    defaultNote: '`judgeEngine.url`',
    description:
      'SGLang-compatible engine that computes teacher log-probs (`/generate` prefill). The default, the frozen judge engine, is the base model, as in the original; the policy engine here would make the current policy its own teacher.',
  },
  {
    key: 'teacher.kind',
    env: 'OPENCLAW_TEACHER_KIND',
    kind: 'enum',
    defaultNote: '`judgeEngine.kind` (`engine.kind` when `teacher.url` is set)',
    description: 'Engine kind of the teacher at `teacher.url`: `reference`, `sglang` or `vllm`.',
  },
  {
    key: 'teacher.topK',
    env: 'OPENCLAW_TEACHER_TOP_K',
    kind: 'integer',
    description:
      'opd only: top-K distillation (spec 6.6). The teacher prefill stores its K best log-probs per response token and the run trains the top-K reverse KL instead of the OPD advantage; 0 turns it off (original: `--distill-topk`, 50 in its top-K script).',
  },
  {
    key: 'training.batchSize',
    env: 'OPENCLAW_BATCH_SIZE',
    kind: 'integer',
    description: 'Samples per training step (original: `--rollout-batch-size`).',
  },
  {
    key: 'training.learningRate',
    env: 'OPENCLAW_LEARNING_RATE',
    kind: 'number',
    description: 'Adam learning rate, constant.',
  },
  {
    key: 'training.weightDecay',
    env: 'OPENCLAW_WEIGHT_DECAY',
    kind: 'number',
    description: 'Adam weight decay.',
  },
  {
    key: 'training.betas',
    env: 'OPENCLAW_ADAM_BETAS',
    kind: 'number-pair',
    description: 'Adam betas, two comma-separated numbers.',
  },
  {
    key: 'training.maxPolicyLag',
    env: 'OPENCLAW_MAX_POLICY_LAG',
    kind: 'integer',
    description:
      'Largest gap between the policy version that produced a sample and the version it trains on before `stalenessPolicy` applies.',
  },
  {
    key: 'training.stalenessPolicy',
    env: 'OPENCLAW_STALENESS_POLICY',
    kind: 'enum',
    description:
      'For samples staler than `maxPolicyLag`: `drop` excludes them; `rollout-logprobs` trains them with the serving log-probs as the PPO reference.',
  },
  {
    key: 'training.continueAsNewAfterSteps',
    env: 'OPENCLAW_TRAINING_CONTINUE_AS_NEW_STEPS',
    kind: 'integer',
    description:
      'Training steps after which the training workflow continues as new, keeping its history short.',
  },
  {
    key: 'training.continueAsNewAfterEvents',
    env: 'OPENCLAW_TRAINING_CONTINUE_AS_NEW_EVENTS',
    kind: 'integer',
    description:
      'History events after which the training workflow continues as new, also while it waits (a run receiving only exclusions, or a paused one); at most 40000 (Temporal refuses a history past 51200).',
  },
  {
    key: 'training.keepCheckpoints',
    env: 'OPENCLAW_KEEP_CHECKPOINTS',
    kind: 'integer',
    description:
      'Published versions whose checkpoint folders are kept, the newest (the run resumes from the last); older folders are deleted after each publish. 0 keeps all. Lineage records are always kept.',
  },
  {
    key: 'loss.epsClip',
    env: 'OPENCLAW_EPS_CLIP',
    kind: 'number',
    description: 'PPO clip range below 1 (ratio clipped at 1 - epsClip).',
  },
  {
    key: 'loss.epsClipHigh',
    env: 'OPENCLAW_EPS_CLIP_HIGH',
    kind: 'number',
    description: 'PPO clip range above 1 (ratio clipped at 1 + epsClipHigh).',
  },
  {
    key: 'loss.klCoef',
    env: 'OPENCLAW_KL_COEF',
    kind: 'number',
    description: 'Weight of the KL penalty to the reference model (0 in every original Track 1 script).',
  },
  {
    key: 'loss.klType',
    env: 'OPENCLAW_KL_TYPE',
    kind: 'enum',
    description: 'KL estimator: `low_var_kl` (k3, clamped), `k1`, `k2` or `k3`.',
  },
  {
    key: 'loss.entropyCoef',
    env: 'OPENCLAW_ENTROPY_COEF',
    kind: 'number',
    description: 'Weight of the entropy bonus.',
  },
  {
    key: 'loss.wRl',
    env: 'OPENCLAW_COMBINE_W_RL',
    kind: 'number',
    description: 'Combine: weight of the judge reward in the advantage.',
  },
  {
    key: 'loss.wOpd',
    env: 'OPENCLAW_COMBINE_W_OPD',
    kind: 'number',
    description: 'Combine: weight of the teacher term (teacher minus old log-prob) in the advantage.',
  },
  {
    key: 'trainer.backend',
    env: 'OPENCLAW_TRAINER',
    kind: 'enum',
    description:
      "Who trains: `reference` (the reference engine at `engine.url`), `slime` (one container per step on a GPU host, docs/slime.md) or `tinker` (Tinker's cloud through the Tinker sidecar, docs/tinker.md).",
  },
  {
    key: 'trainer.taskQueue',
    env: 'OPENCLAW_TRAINER_TASK_QUEUE',
    kind: 'string',
    defaultNote: 'empty: the control worker trains',
    description:
      'Task queue of training steps and weight publishing, served by `openclaw-rl worker trainer` (e.g. `trainer`, on the GPU host). Set it where training runs start (control worker, `train start`).',
  },
  {
    key: 'trainer.image',
    env: 'OPENCLAW_TRAINER_IMAGE',
    kind: 'string',
    description:
      'slime: the image each epoch container runs (a slime image with the engine package installed; `openclaw/engine:dev` with `epochCommand=reference`).',
  },
  {
    key: 'trainer.epochCommand',
    env: 'OPENCLAW_TRAINER_EPOCH_COMMAND',
    kind: 'enum',
    description:
      "slime: what the epoch container runs: `slime` (`train_async.py` through the project's plugin) or `reference` (the reference engine's `train-epoch`, CPU, same contract).",
  },
  {
    key: 'trainer.sharedDir',
    env: 'OPENCLAW_TRAINER_SHARED_DIR',
    kind: 'string',
    defaultNote: '`<dataDir>/trainer`',
    description:
      'slime: folder of batches and checkpoints shared with the epoch containers, mounted at the same path, so it must be a path on the Docker host.',
  },
  {
    key: 'trainer.baseModel',
    env: 'OPENCLAW_TRAINER_BASE_MODEL',
    kind: 'string',
    defaultNote: '`engine.model`',
    description: 'slime: base Hugging Face model folder on the Docker host (mounted read-only).',
  },
  {
    key: 'trainer.gpus',
    env: 'OPENCLAW_TRAINER_GPUS',
    kind: 'integer',
    description: 'slime: GPUs given to each epoch container (0 runs on CPU).',
  },
  {
    key: 'trainer.gpuIds',
    env: 'OPENCLAW_TRAINER_GPU_IDS',
    kind: 'string-list',
    defaultNote: 'any `gpus` of them',
    description:
      'slime: comma-separated GPU ids (or UUIDs) for the epoch containers, to keep them off the GPUs SGLang serves on; overrides `gpus`.',
  },
  {
    key: 'trainer.shmBytes',
    env: 'OPENCLAW_TRAINER_SHM_BYTES',
    kind: 'integer',
    description: 'slime: shared memory of each epoch container, in bytes (NCCL needs more than 64 MiB).',
  },
  {
    key: 'trainer.extraArgs',
    env: 'OPENCLAW_TRAINER_EXTRA_ARGS',
    kind: 'string',
    description:
      'slime: arguments appended to the epoch command, separated by spaces (e.g. `--tensor-model-parallel-size 2`).',
  },
  {
    key: 'trainer.tinkerUrl',
    env: 'OPENCLAW_TINKER_URL',
    kind: 'string',
    defaultNote: '`engine.url`',
    description:
      'tinker: base URL of the Tinker sidecar (`python -m openclaw_engine.tinker_sidecar`); by default the engine URL, since the sidecar also serves.',
  },
  {
    key: 'trainer.url',
    env: 'OPENCLAW_TRAINER_URL',
    kind: 'string',
    defaultNote: '`engine.url` (with `engine.kind` vllm, `dev` starts it on the next port)',
    description:
      'reference: base URL of the reference engine that trains (`openclaw-rl engine --trainer-only`); by default the policy engine itself, which is the reference engine unless `engine.kind` says otherwise.',
  },
  {
    key: 'store.backend',
    env: 'OPENCLAW_STORE',
    kind: 'enum',
    description:
      "Where turns, samples, exclusions, lineage and the outbox live: `file` (a folder under `dataDir`, fsync'd; one machine) or `postgres` (several gateways and workers on several machines share it).",
  },
  {
    key: 'store.url',
    env: 'OPENCLAW_STORE_URL',
    kind: 'string',
    defaultNote: 'empty (needed for `postgres`)',
    description: "The PostgreSQL store's server, `postgres://user:password@host:port/database`.",
  },
  {
    key: 'store.outboxLeaseMs',
    env: 'OPENCLAW_OUTBOX_LEASE_MS',
    kind: 'integer',
    description:
      "How long a relay keeps the outbox entries it claimed without renewing: a dead gateway's undelivered turns are delivered by another gateway or the control worker after this long.",
  },
  {
    key: 'store.outboxYieldMs',
    env: 'OPENCLAW_OUTBOX_YIELD_MS',
    kind: 'integer',
    description:
      "How long a gateway's relay may hold a recorded turn's delivery while the gateway is answering requests (until it has been idle 50 ms), so deliveries and the workflow work they start do not take CPU from generation and from the durable writes; the turn is already durable, only its delivery lag grows. 0 delivers at once.",
  },
  {
    key: 'store.journal',
    env: 'OPENCLAW_STORE_JOURNAL',
    kind: 'boolean',
    description:
      'file store: a main turn is made durable by one append (and one fdatasync shared by the turns arriving together) to a journal under the store, and its files are written right after the answer; a gateway that dies in between has its journal replayed by the next relay that claims. `false` writes the files before answering.',
  },
  {
    key: 'store.poolSize',
    env: 'OPENCLAW_STORE_POOL_SIZE',
    kind: 'integer',
    description:
      "postgres store: connections per process (each gateway, worker and relay). More lets more concurrent turns commit at once; PostgreSQL's `max_connections` (100 by default) bounds the sum over all processes.",
  },
  {
    key: 'payloads.encryption',
    env: 'OPENCLAW_PAYLOAD_ENCRYPTION',
    kind: 'enum',
    description:
      'Encryption of Temporal payloads (AES-256-GCM codec): `auto` encrypts when a key is configured or the keys file exists (`dev` creates it), `required` refuses to start without a key, `off` sends plaintext.',
  },
  {
    key: 'payloads.keys',
    env: 'OPENCLAW_PAYLOAD_KEYS',
    kind: 'string-list',
    description:
      'Payload keys as `<id>:<base64 of 32 bytes>`, comma-separated; when set, the keys file is not read. Any listed key decrypts; `keyId` encrypts.',
  },
  {
    key: 'payloads.keyId',
    env: 'OPENCLAW_PAYLOAD_KEY_ID',
    kind: 'string',
    defaultNote: 'the only key, when one is listed',
    description:
      'Id of the key in `payloads.keys` that encrypts new payloads (the newest one, when rotating).',
  },
  {
    key: 'payloads.keysFile',
    env: 'OPENCLAW_PAYLOAD_KEYS_FILE',
    kind: 'string',
    defaultNote: '`<dataDir>/keys/payload-keys.json`',
    description:
      'JSON key ring `{"current": id, "keys": {id: base64}}`; `openclaw-rl keys init` creates it, `openclaw-rl keys rotate` adds a key and makes it current.',
  },
  {
    key: 'codecServer.host',
    env: 'OPENCLAW_CODEC_HOST',
    kind: 'string',
    description:
      'Address of the codec server (`openclaw-rl codec-server`, `dev`) that decrypts payloads for the Temporal UI; whoever reaches it can decrypt.',
  },
  {
    key: 'codecServer.port',
    env: 'OPENCLAW_CODEC_PORT',
    kind: 'integer',
    description: "Port of the codec server: the UI's codec endpoint is `http://<host>:<port>`.",
  },
  {
    key: 'codecServer.corsOrigins',
    env: 'OPENCLAW_CODEC_CORS_ORIGINS',
    kind: 'string-list',
    defaultNote:
      'the UI of `dev` and of compose: `http://localhost:8233`, `http://localhost:8080` (and on 127.0.0.1)',
    description: 'Comma-separated origins of the Temporal UI pages allowed to call the codec server.',
  },
  {
    key: 'session.idleTimeoutMs',
    env: 'OPENCLAW_SESSION_IDLE_TIMEOUT_MS',
    kind: 'integer',
    description:
      'A session with no new turn for this long closes; its open turns wait for `session.reopenHorizonMs` before they are settled.',
  },
  {
    key: 'session.reopenHorizonMs',
    env: 'OPENCLAW_SESSION_REOPEN_HORIZON_MS',
    kind: 'integer',
    description:
      "How long after a turn a reply still pairs with it, reopening a closed session; then the session's open turns settle as `no-next-state`. At most `idleTimeoutMs`: settle at the idle close.",
  },
  {
    key: 'session.superseded',
    env: 'OPENCLAW_SESSION_SUPERSEDED',
    kind: 'enum',
    description:
      'A response the conversation did not continue while another response to the same request was: `exclude` (settled as `superseded`) or `negative` (trained with reward -1: the user asked for another answer; rl and combine).',
  },
  {
    key: 'session.continueAsNewAfterTurns',
    env: 'OPENCLAW_SESSION_CONTINUE_AS_NEW_TURNS',
    kind: 'integer',
    description: 'Turns after which a session workflow continues as new, keeping its history short.',
  },
] as const satisfies readonly ConfigOption[];

export type ConfigKey = (typeof CONFIG_OPTIONS)[number]['key'];

/** The environment variable of every option, by dotted key. */
export const ENV_VARS = Object.fromEntries(CONFIG_OPTIONS.map((o) => [o.key, o.env])) as Record<
  ConfigKey,
  string
>;

export type ConfigResult = { ok: true; config: OpenClawConfig } | { ok: false; error: string };

/**
 * The validated configuration from environment variables and overrides (overrides win). Empty variables
 * count as unset. On failure, `error` names each bad field with its variable, e.g.
 * `judge.votes (OPENCLAW_JUDGE_VOTES): Too small: expected number to be >=1`.
 */
export function loadConfig(
  env: Readonly<Record<string, string | undefined>>,
  overrides: OpenClawConfigInput = {},
): ConfigResult {
  const merged = mergeDeep(configFromEnv(env), overrides);
  return parseConfig(merged);
}

/** Validates a whole input object (e.g. JSON from the Temporal UI) against the schema. */
export function parseConfig(input: unknown): ConfigResult {
  const result = configSchema.safeParse(input);
  if (result.success) return { ok: true, config: result.data };
  const problems = result.error.issues.map((issue) => {
    const key = issue.path.map(String).join('.');
    const env = (ENV_VARS as Record<string, string | undefined>)[key];
    return `${key === '' ? '(config)' : key}${env ? ` (${env})` : ''}: ${issue.message}`;
  });
  return { ok: false, error: `Invalid configuration: ${problems.join('; ')}` };
}

/** The options set in the environment, as a nested partial config (still unvalidated). */
export function configFromEnv(env: Readonly<Record<string, string | undefined>>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const option of CONFIG_OPTIONS) {
    const raw = env[option.env]?.trim();
    if (raw === undefined || raw === '') continue;
    setPath(out, option.key.split('.'), parseEnvValue(option.kind, raw));
  }
  return out;
}

/** Numbers that do not parse stay text, so the schema reports them against the right field. */
function parseEnvValue(kind: ConfigValueKind, raw: string): unknown {
  switch (kind) {
    case 'string':
    case 'enum':
      return raw;
    case 'integer':
    case 'number':
      return toNumber(raw) ?? raw;
    case 'boolean':
      return BOOLEAN_TEXT[raw.toLowerCase()] ?? raw;
    case 'string-list':
      return raw
        .split(',')
        .map((item) => item.trim())
        .filter((item) => item !== '');
    case 'number-pair': {
      const numbers = raw.split(',').map((item) => toNumber(item.trim()));
      return numbers.every((n) => n !== null) ? numbers : raw;
    }
  }
}

const BOOLEAN_TEXT: Record<string, boolean | undefined> = { true: true, '1': true, false: false, '0': false };

function toNumber(text: string): number | null {
  if (text === '') return null;
  const value = Number(text);
  return Number.isFinite(value) ? value : null;
}

function setPath(target: Record<string, unknown>, path: readonly string[], value: unknown): void {
  const [head, ...rest] = path;
  if (head === undefined) return;
  if (rest.length === 0) {
    target[head] = value;
    return;
  }
  const child = isPlainObject(target[head]) ? (target[head] as Record<string, unknown>) : {};
  target[head] = child;
  setPath(child, rest, value);
}

/** `base` with `override` laid over it: objects merge key by key, anything else (arrays too) replaces. */
function mergeDeep(base: unknown, override: unknown): unknown {
  if (override === undefined) return base;
  if (!isPlainObject(base) || !isPlainObject(override)) return override;
  const out: Record<string, unknown> = { ...base };
  for (const [key, value] of Object.entries(override)) out[key] = mergeDeep(out[key], value);
  return out;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

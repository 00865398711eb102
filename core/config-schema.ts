// The Track 1 configuration's zod schema: every option with its default and limits, the checks across options,
// and the defaults that follow from other options. core/config-options.ts says which environment variable sets
// each option; core/config.ts loads and validates a configuration against this schema.

import { z } from 'zod';
import { ENGINE_KINDS, type EngineKind } from './engine-kinds.js';
import { FEEDBACK_CORRECTION_MODES, FEEDBACK_RATING_MODES } from './feedback.js';
import { lossSettingsSchema, type OptimizerSettings, optimizerSettingsSchema } from './loss-settings.js';
import { REPLY_SCORERS, replyScorer } from './reply-scorers.js';
import { CONTROL_TASK_QUEUE } from './task-queue-names.js';
import { teacherTemperatureRefusal } from './teacher-temperature.js';
import { TENANT_NAME_RULE } from './tenant.js';
import { ADAPTER_BASE_CHANGE_POLICIES, ADAPTER_TENANT_PATTERN } from './tenant-adapters.js';
import type { GateSettings } from './training-settings.js';
import type { SupersededPolicy } from './types.js';

export const METHODS = ['rl', 'opd', 'combine'] as const;
export const STALENESS_POLICIES = ['drop', 'rollout-logprobs'] as const;
export const TRAINER_BACKENDS = ['reference', 'slime', 'tinker', 'fireworks'] as const;
export const EPOCH_COMMANDS = ['slime', 'reference'] as const;
export const PAYLOAD_ENCRYPTION_MODES = ['auto', 'required', 'off'] as const;
export const SUPERSEDED_POLICIES = ['exclude', 'negative'] as const satisfies readonly SupersededPolicy[];
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
      // As long as OpenAI keeps a stored response; 0: for ever.
      responsesRetentionDays: z.number().min(0).default(30),
      images: z
        .strictObject({
          maxBytes: z
            .number()
            .int()
            .min(1)
            .default(10 * 1024 * 1024),
          maxPerRequest: z.number().int().min(0).default(16),
          // Hosts whose http(s) image URLs the gateway fetches; none: only data URLs are accepted.
          allowedHosts: z.array(z.string().min(1)).default([]),
          fetchTimeoutMs: z.number().int().min(100).default(10_000),
        })
        .prefault({}),
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
      // The judge model reads images: it is sent a turn's images, not a note in their place.
      vision: z.boolean().default(false),
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
      // Group training (docs/operations.md#group-training): a cap per tenant per batch (0: none), loss weights.
      maxSamplesPerTenant: z.number().int().min(0).default(0),
      tenantWeights: z.record(z.string().min(1), z.number().min(0)).default({}),
      // The publish gate (docs/evaluation.md#publish-gate); an empty evalSet: no gate.
      gate: z
        .strictObject({
          evalSet: z.string().default(''),
          scorer: z
            .string()
            .refine((name) => name === 'judge' || replyScorer(name) !== null, {
              message: `use judge or one of ${Object.keys(REPLY_SCORERS).join(', ')}`,
            })
            .default('judge'),
          threshold: z.number().default(0),
          samples: z.number().int().min(1).max(64).default(4),
          maxTokens: z.number().int().min(1).max(4096).default(64),
        })
        .prefault({}),
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
      // fireworks: the sidecar's URL, and what it trains on (passed to the sidecar, docs/fireworks.md).
      fireworksUrl: z.union([z.literal(''), httpUrl]).default(''),
      fireworksBaseModel: z.string().default(''),
      fireworksTrainingShape: z.string().default(''),
      fireworksDeployment: z.string().default(''),
      fireworksTrainerJob: z.string().default(''),
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
      outboxYieldMs: z.number().int().min(0).default(10_000),
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
      // Host names (no port) a request's Host header may name; loopback names are always allowed.
      hosts: z.array(z.string().min(1)).default([]),
      // The bearer token callers must send; empty: the first line of tokenFile.
      token: z.string().default(''),
      // Empty: `<dataDir>/keys/codec-token`.
      tokenFile: z.string().default(''),
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
  feedback: z
    .strictObject({
      rating: z.enum(FEEDBACK_RATING_MODES).default('override'),
      correction: z.enum(FEEDBACK_CORRECTION_MODES).default('as-given'),
    })
    .prefault({}),
  metrics: z
    .strictObject({
      // Unset: the process's own default (workers/worker-metrics.ts); 0 turns the endpoint off.
      port: port.optional(),
      // This machine only, like the gateway's default; compose listens on every address (docker-compose.yml).
      host: z.string().min(1).default('127.0.0.1'),
    })
    .prefault({}),
  tracing: z
    .strictObject({
      // Empty: tracing is off unless OTEL_EXPORTER_OTLP_ENDPOINT (or its traces variant) is set.
      otlpEndpoint: z.union([z.literal(''), httpUrl]).default(''),
    })
    .prefault({}),
  adapters: z
    .strictObject({
      // Tenant names, or `*` for every tenant: each gets a LoRA adapter of its own (core/tenant-adapters.ts).
      tenants: z.array(z.string().regex(ADAPTER_TENANT_PATTERN, TENANT_NAME_RULE)).default([]),
      rank: z.number().int().min(1).max(256).default(8),
      maxLoaded: z.number().int().min(1).max(1024).default(16),
      onBaseChange: z.enum(ADAPTER_BASE_CHANGE_POLICIES).default('keep'),
    })
    .prefault({}),
});

/** Tinker's losses have no KL term: a KL coefficient would be ignored, so it is refused instead. */
export const TINKER_NO_KL =
  'the Tinker trainer trains no KL term: set loss.klCoef 0, or use the reference or slime trainer';

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
 * An opd or combine run whose configured sampling temperature its teacher cannot score at (core/teacher-
 * temperature.ts). A temperature left unset is the served model's default, checked when the gateway starts.
 */
function checkTeacherTemperature(config: z.output<typeof configObject>, ctx: z.RefinementCtx): void {
  const temperature = config.sampling.temperature;
  if (temperature === undefined) return;
  const refusal = teacherTemperatureRefusal({
    kind: teacherKindOf(config),
    method: config.method,
    temperature,
  });
  if (refusal !== null) ctx.addIssue({ code: 'custom', path: ['sampling', 'temperature'], message: refusal });
}

/** The teacher's engine kind: `teacher.kind`, else the frozen judge engine's, or the policy's beside `teacher.url`. */
export function teacherKindOf(config: {
  engine: { kind: EngineKind };
  judgeEngine: { kind: EngineKind };
  teacher: { url: string; kind: EngineKind | '' };
}): EngineKind {
  if (config.teacher.kind) return config.teacher.kind;
  return config.teacher.url ? config.engine.kind : config.judgeEngine.kind;
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

/** Fireworks' custom losses see target-token log-probs only: no KL, entropy or top-K term (docs/fireworks.md). */
export const FIREWORKS_NO_KL =
  'the Fireworks trainer trains no KL term: set loss.klCoef 0, or use the reference or slime trainer';
export const FIREWORKS_NO_ENTROPY =
  'the Fireworks trainer has no entropy term (its forward returns target log-probs only): set loss.entropyCoef 0, or use the reference or slime trainer';
export const FIREWORKS_NO_TOPK =
  "Fireworks' forward returns the log-probs of the target tokens only, not of the teacher's top-K tokens: set teacher.topK 0 (training.distillTopK 0), or use the reference or slime trainer";

/** What Fireworks cannot train, and what its sidecar cannot start without. */
function checkFireworks(config: z.output<typeof configObject>, ctx: z.RefinementCtx): void {
  if (config.trainer.backend !== 'fireworks') return;
  const refuse = (path: string[], message: string) => ctx.addIssue({ code: 'custom', path, message });
  if (config.loss.klCoef > 0) refuse(['loss', 'klCoef'], FIREWORKS_NO_KL);
  if (config.loss.entropyCoef !== 0) refuse(['loss', 'entropyCoef'], FIREWORKS_NO_ENTROPY);
  if (config.teacher.topK > 0) refuse(['teacher', 'topK'], FIREWORKS_NO_TOPK);
}

/** What a slime trainer cannot start without, checked with the config rather than at the first step. */
function checkTrainer(config: z.output<typeof configObject>, ctx: z.RefinementCtx): void {
  checkFireworks(config, ctx);
  if (config.trainer.backend === 'tinker' && config.loss.klCoef > 0)
    ctx.addIssue({
      code: 'custom',
      path: ['loss', 'klCoef'],
      message: TINKER_NO_KL,
    });
  const weighted = Object.values(config.training.tenantWeights).some((weight) => weight !== 1);
  if (weighted && (config.trainer.backend === 'tinker' || config.trainer.backend === 'slime'))
    ctx.addIssue({
      code: 'custom',
      path: ['training', 'tenantWeights'],
      message: `the ${config.trainer.backend} trainer cannot weigh samples: set every weight to 1, or use the reference trainer`,
    });
  if (config.training.gate.evalSet && config.trainer.backend !== 'reference')
    ctx.addIssue({
      code: 'custom',
      path: ['training', 'gate', 'evalSet'],
      message: `the publish gate samples replies from the trainer's weights, which only the reference trainer can (trainer.backend is ${config.trainer.backend}): remove training.gate.evalSet or use the reference trainer`,
    });
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

/** Tenants' adapters train on the reference trainer's adapter routes and load into an engine that takes them. */
function checkAdapters(config: z.output<typeof configObject>, ctx: z.RefinementCtx): void {
  if (config.adapters.tenants.length === 0) return;
  if (config.trainer.backend !== 'reference')
    ctx.addIssue({
      code: 'custom',
      path: ['adapters', 'tenants'],
      message: `tenants' adapters train on the reference trainer only (trainer.backend is ${config.trainer.backend})`,
    });
  if (config.engine.kind === 'sglang')
    ctx.addIssue({
      code: 'custom',
      path: ['adapters', 'tenants'],
      message:
        "tenants' adapters are served by the reference engine or vLLM; SGLang's adapter routes are not checked against a running SGLang here",
    });
}

/**
 * The schema: validates, fills defaults, then fills the defaults that depend on other options: the judge's
 * by method, and the frozen judge engine (judge and teacher point at it unless set).
 */
export const configSchema = configObject
  .superRefine(checkTrainer)
  .superRefine(checkTopK)
  .superRefine(checkTeacherTemperature)
  .superRefine(checkStore)
  .superRefine(checkAdapters)
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

/**
 * The run's optimizer settings from the configuration's `training` options, where they sit flat beside the
 * batch size (one variable each); the run's settings nest them under `optimizer` (core/training-settings.ts).
 */
export function optimizerSettingsOf(training: OptimizerSettings): OptimizerSettings {
  return { learningRate: training.learningRate, weightDecay: training.weightDecay, betas: training.betas };
}

/** The run's publish gate from the configuration's `training.gate`; undefined (no gate) without an evalSet. */
export function gateSettingsOf(
  gate: z.output<typeof configObject>['training']['gate'],
): GateSettings | undefined {
  if (!gate.evalSet) return undefined;
  return { ...gate };
}

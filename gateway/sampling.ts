// The sampling parameters of every request, made explicit. SGLang 0.5.23 (`--sampling-defaults model`, its
// default) and vLLM 0.32 (`--generation-config auto`, its default) fill a field the client left out from the
// model's generation_config.json (temperature, top_p, top_k, min_p), and only then from the neutral 1 / 1 /
// off / 0. A turn whose record said "no temperature" would then be trained at the wrong one. So the gateway
// resolves each field itself (the client's value, else the configured default, else the model's
// generation_config.json when the gateway can read the model folder, else neutral), sends all four, and records
// exactly what it sent. The penalties, which the same engines also take from generation_config.json, are sent at
// the client's values or else neutral; a non-neutral one is named in the record's constraints
// (sampling-constraints.ts).

import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import type { OpenClawConfig } from '../core/config.js';
import { teacherKindOf } from '../core/config-schema.js';
import { teacherTemperatureRefusal } from '../core/teacher-temperature.js';
import type { SamplingRecord } from '../core/turn-record.js';
import type { ChatRequest } from './chat-request-schema.js';
import { samplingConstraints } from './sampling-constraints.js';

export interface SamplingDefaults {
  temperature: number;
  topP: number;
  /** -1: no top-k restriction (what SGLang, vLLM and the reference engine all accept). */
  topK: number;
  minP: number;
}

/** What the engines use when neither the request nor the model says anything. */
export const NEUTRAL_SAMPLING: SamplingDefaults = { temperature: 1, topP: 1, topK: -1, minP: 0 };

/** The fields of a Hugging Face generation_config.json that the engines read as sampling defaults. */
const generationConfigSchema = z.looseObject({
  temperature: z.number().min(0).nullable().optional(),
  top_p: z.number().gt(0).max(1).nullable().optional(),
  top_k: z.number().int().nullable().optional(),
  min_p: z.number().min(0).max(1).nullable().optional(),
});

export interface LoadedSamplingDefaults {
  defaults: SamplingDefaults;
  /** Where the values came from, for the startup log. */
  source: string;
}

/**
 * The defaults the gateway sends: `sampling.*` from the configuration, over the served model's
 * generation_config.json (read from `engine.model` when that is a folder on this machine), over neutral.
 */
export async function loadSamplingDefaults(config: OpenClawConfig): Promise<LoadedSamplingDefaults> {
  const fromModel = config.engine.model ? await readGenerationConfig(config.engine.model) : null;
  const model = fromModel ?? {};
  const configured = config.sampling;
  const defaults: SamplingDefaults = {
    temperature: configured.temperature ?? model.temperature ?? NEUTRAL_SAMPLING.temperature,
    topP: configured.topP ?? model.topP ?? NEUTRAL_SAMPLING.topP,
    topK: configured.topK ?? model.topK ?? NEUTRAL_SAMPLING.topK,
    minP: configured.minP ?? model.minP ?? NEUTRAL_SAMPLING.minP,
  };
  const source = fromModel
    ? `${join(config.engine.model, 'generation_config.json')} under the sampling.* settings`
    : 'the sampling.* settings over the neutral defaults (no generation_config.json readable)';
  return { defaults, source };
}

/**
 * Refuses to serve an opd or combine run whose default temperature (the configured one, else the served
 * model's generation_config.json) its teacher cannot score at: every turn sent without a temperature would
 * reach scoring at it. The configuration check sees only `sampling.temperature`; this one sees the model's.
 */
export function checkTeacherTemperature(config: OpenClawConfig, loaded: LoadedSamplingDefaults): void {
  const temperature = loaded.defaults.temperature;
  const refusal = teacherTemperatureRefusal({
    kind: teacherKindOf(config),
    method: config.method,
    temperature,
  });
  if (refusal !== null)
    throw new Error(
      `the default sampling temperature is ${temperature} (from ${loaded.source}), and ${refusal}`,
    );
}

/** The sampling fields a model folder's generation_config.json sets; null when there is none to read. */
export async function readGenerationConfig(modelDir: string): Promise<Partial<SamplingDefaults> | null> {
  let text: string;
  try {
    text = await readFile(join(modelDir, 'generation_config.json'), 'utf8');
  } catch {
    return null; // a model id the engine resolves itself, or a folder on another machine
  }
  const parsed = generationConfigSchema.safeParse(JSON.parse(text));
  if (!parsed.success)
    throw new Error(
      `${join(modelDir, 'generation_config.json')}: ${parsed.error.issues[0]?.path.join('.')}: ${parsed.error.issues[0]?.message}`,
    );
  const g = parsed.data;
  const topK = g.top_k === null || g.top_k === undefined ? undefined : Math.max(g.top_k, 0) || -1;
  return {
    ...(typeof g.temperature === 'number' && { temperature: g.temperature }),
    ...(typeof g.top_p === 'number' && { topP: g.top_p }),
    ...(topK !== undefined && { topK }),
    ...(typeof g.min_p === 'number' && { minP: g.min_p }),
  };
}

/** The penalties' neutral values, sent when a client leaves a penalty out (see `explicitSampling`). */
export const NEUTRAL_PENALTIES = {
  presence_penalty: 0,
  frequency_penalty: 0,
  repetition_penalty: 1,
} as const;

export interface EngineSamplingFields {
  temperature: number;
  top_p: number;
  top_k: number;
  min_p: number;
  presence_penalty: number;
  frequency_penalty: number;
  repetition_penalty: number;
}

export interface ExplicitSampling {
  /** Merged into the body sent to the engine. */
  engineFields: EngineSamplingFields;
  /** What the turn record keeps. */
  record: SamplingRecord;
}

export function explicitSampling(request: ChatRequest, defaults: SamplingDefaults): ExplicitSampling {
  const temperature = request.temperature ?? defaults.temperature;
  const topP = request.top_p ?? defaults.topP;
  // 0 and -1 both mean "off" to vLLM; SGLang accepts only -1 for that.
  const topK = Math.max(request.top_k ?? defaults.topK, 0) || -1;
  const minP = request.min_p ?? defaults.minP;
  return {
    engineFields: {
      temperature,
      top_p: topP,
      top_k: topK,
      min_p: minP,
      // Neutral unless the client set one (then the turn is marked): a penalty the model's generation_config.json
      // sets would otherwise be applied by SGLang and vLLM behind the record's back.
      presence_penalty: request.presence_penalty ?? NEUTRAL_PENALTIES.presence_penalty,
      frequency_penalty: request.frequency_penalty ?? NEUTRAL_PENALTIES.frequency_penalty,
      repetition_penalty: request.repetition_penalty ?? NEUTRAL_PENALTIES.repetition_penalty,
    },
    record: {
      temperature,
      topP,
      topK: topK > 0 ? topK : null,
      minP: minP > 0 ? minP : null,
      maxTokens: request.max_completion_tokens ?? request.max_tokens ?? null,
      seed: request.seed ?? null,
      constraints: samplingConstraints(request),
    },
  };
}

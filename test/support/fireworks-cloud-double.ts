// The Fireworks sidecar as tests start it: the real sidecar process, with Fireworks' cloud replaced by the
// DOUBLE in test/support/python/fireworks_cloud_double.py (the real SDK's types and WeightSyncer, a local
// tiny model where the network was). Its state lives under `<store>`, as the cloud's outlives a sidecar.

import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { delimiter, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  type FireworksSidecarProcess,
  startFireworksSidecar,
} from '../../activities/trainer-backends/fireworks-sidecar-process.js';

const engineDir = fileURLToPath(new URL('../../engine', import.meta.url));
const doubleDir = fileURLToPath(new URL('./python', import.meta.url));
// The SDK pins pydantic below 2.13: where the shared .venv cannot take it, .venv-fireworks holds it.
const fireworksVenv = fileURLToPath(new URL('../../.venv-fireworks/bin/python', import.meta.url));

export const FIREWORKS_DOUBLE_BASE_MODEL = 'accounts/fireworks/models/qwen3-8b';
export const FIREWORKS_DOUBLE_DEPLOYMENT = 'openclaw-policy';

/** With `serving`, the sidecar also serves chat through the double's deployment, which listens on
 * `inferencePort` (loopback) and samples from what it last hot-loaded. */
export function startFireworksSidecarWithDouble(
  store: string,
  checkpointRoots: string[],
  serving?: { tokenizer: string; inferencePort: number; servedModelName?: string },
): Promise<FireworksSidecarProcess> {
  return startFireworksSidecar({
    ...(serving && {
      tokenizer: serving.tokenizer,
      inferenceUrl: `http://127.0.0.1:${serving.inferencePort}`,
      servedModelName: serving.servedModelName,
    }),
    baseModel: FIREWORKS_DOUBLE_BASE_MODEL,
    trainingShape: 'ts-qwen3-8b-policy',
    deployment: FIREWORKS_DOUBLE_DEPLOYMENT,
    loraRank: 8,
    sdkModule: 'fireworks_cloud_double',
    checkpointRoots,
    ...(existsSync(fireworksVenv) && { python: fireworksVenv }),
    env: {
      PYTHONPATH: [engineDir, doubleDir].join(delimiter),
      FIREWORKS_API_KEY: 'fw-double-key',
      FIREWORKS_DOUBLE_STORE: store,
    },
  });
}

export interface DoubleCall {
  cls: string;
  method: string;
  args: unknown[];
  kwargs: Record<string, unknown>;
}

/** The calls the sidecar made on the double's cloud, in order. */
export async function fireworksDoubleCalls(store: string, method?: string): Promise<DoubleCall[]> {
  const text = await readFile(join(store, 'calls.jsonl'), 'utf8');
  const calls = text
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as DoubleCall);
  return method === undefined ? calls : calls.filter((call) => call.method === method);
}

/** The snapshot the double's deployment has hot-loaded, if any. */
export async function fireworksDoubleServedSnapshot(store: string): Promise<string | undefined> {
  const file = join(store, `deployment-${FIREWORKS_DOUBLE_DEPLOYMENT}.json`);
  if (!existsSync(file)) return undefined;
  return (JSON.parse(await readFile(file, 'utf8')) as { identity: string }).identity;
}

/** The completions the double's deployment sampled, in order (`completion_token_ids` as it sent them). */
export async function fireworksDoubleCompletions(
  store: string,
): Promise<{ model: string; prompt: number[]; completion_token_ids: number[] }[]> {
  const file = join(store, 'completions.jsonl');
  if (!existsSync(file)) return [];
  return (await readFile(file, 'utf8'))
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as { model: string; prompt: number[]; completion_token_ids: number[] });
}

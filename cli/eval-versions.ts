// `openclaw-rl eval --checkpoints A,B,...`: the same evaluation set scored on several versions, each served by a
// reference engine of its own, several seeded replies per item, so the versions differ only in their weights.
import OpenAI from 'openai';
import { z } from 'zod';
import type { EvalSetItem } from '../core/eval-set.js';
import { startReferenceEngine } from '../engines/reference-engine-process.js';

/** How one reply is scored: a number in [−1, 1] or [0, 1] by the scorer's own scale, null when it gives none. */
export type ReplyScoring = (reply: string, item: EvalSetItem) => Promise<number | null>;

export interface VersionToEvaluate {
  /** What the report calls it: `v3`, or the checkpoint folder. */
  label: string;
  model: string;
}

export interface ItemScores {
  id: string;
  /** One per seed; null where the scorer gave none. */
  scores: (number | null)[];
  mean: number | null;
}

export interface VersionScores {
  label: string;
  model: string;
  mean: number | null;
  items: ItemScores[];
}

export interface VersionsReport {
  scorer: string;
  samples: number;
  maxTokens: number;
  temperature: number;
  versions: VersionScores[];
  at: string;
}

export const compareOptionsSchema = z.strictObject({
  samples: z.number().int().min(1).max(100),
  maxTokens: z.number().int().min(1).max(32_768),
  temperature: z.number().min(0).max(2),
  device: z.enum(['cpu', 'cuda']).optional(),
});
export type CompareOptions = z.output<typeof compareOptionsSchema>;

function mean(values: readonly (number | null)[]): number | null {
  const scored = values.filter((v): v is number => v !== null);
  return scored.length === 0 ? null : scored.reduce((a, b) => a + b, 0) / scored.length;
}

/** Scores the items on one served model: `samples` replies each, seeds 0..samples−1. */
export async function scoreServedModel(
  engineUrl: string,
  items: readonly EvalSetItem[],
  scoring: ReplyScoring,
  options: CompareOptions,
): Promise<ItemScores[]> {
  const policy = new OpenAI({
    baseURL: `${engineUrl.replace(/\/+$/, '')}/v1`,
    apiKey: 'none',
    maxRetries: 1,
  });
  const out: ItemScores[] = [];
  for (const item of items) {
    const scores: (number | null)[] = [];
    for (let seed = 0; seed < options.samples; seed++) {
      const completion = await policy.chat.completions.create({
        model: 'default',
        messages: item.messages as OpenAI.Chat.ChatCompletionMessageParam[],
        max_tokens: options.maxTokens,
        temperature: options.temperature,
        seed,
      });
      scores.push(await scoring(completion.choices[0]?.message.content ?? '', item));
    }
    out.push({ id: item.id ?? '', scores, mean: mean(scores) });
  }
  return out;
}

/** Each version in turn: a reference engine on its checkpoint, the items scored, the engine stopped. */
export async function compareVersions(
  versions: readonly VersionToEvaluate[],
  items: readonly EvalSetItem[],
  scorer: string,
  scoring: ReplyScoring,
  options: CompareOptions,
  say: (line: string) => void = () => {},
): Promise<VersionsReport> {
  const results: VersionScores[] = [];
  for (const version of versions) {
    const engine = await startReferenceEngine({
      model: version.model,
      ...(options.device !== undefined && { device: options.device }),
    });
    try {
      const scored = await scoreServedModel(engine.url, items, scoring, options);
      const versionMean = mean(scored.map((i) => i.mean));
      results.push({ label: version.label, model: version.model, mean: versionMean, items: scored });
      say(
        `${version.label}  mean ${versionMean === null ? '-' : versionMean.toFixed(3)}  (${version.model})`,
      );
    } finally {
      await engine.stop();
    }
  }
  return {
    scorer,
    samples: options.samples,
    maxTokens: options.maxTokens,
    temperature: options.temperature,
    versions: results,
    at: new Date().toISOString(),
  };
}

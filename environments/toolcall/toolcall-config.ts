// The toolcall environment's settings with the original's defaults (spec 10.4, TOOL_CONFIGS): 16 model turns,
// 16 tool calls, 120 s per code run, tool output cut to 1024 characters, ±1 outcome reward with the tool-use
// shaping of wrong answers. Validated with zod at the edge; everything else takes the parsed object.

import { z } from 'zod';
import { sandboxLimitsSchema } from '../sandbox-limits-schema.js';

const rewardShaping = z.strictObject({
  /** A wrong answer's reward never rises above this. */
  cap: z.number().default(-0.6),
  /** Tool calls that neither raise nor lower a wrong answer's reward. */
  baselineToolCalls: z.number().int().min(0).default(2),
  /** Reward added per two tool calls above the baseline (subtracted below it). */
  coefficient: z.number().default(0.1),
});

export const toolcallConfigSchema = z.strictObject({
  /** Image with python3, numpy, sympy and the user `agent` (docker/images/sandbox-python). */
  image: z.string().min(1).default('openclaw/sandbox-python'),
  limits: sandboxLimitsSchema({
    memoryBytes: 4 * 1024 ** 3,
    cpus: 1,
    pids: 128,
    minMemoryBytes: 32 * 1024 ** 2,
    minPids: 8,
  }),
  /** Model turns per episode: enforced by the rollout loop, which reads it from here. */
  maxTurns: z.number().int().min(1).default(16),
  /** Code runs per episode; the call that reaches it ends the episode. */
  maxToolCalls: z.number().int().min(1).default(16),
  pythonTimeoutMs: z.number().int().min(100).default(120_000),
  /** Characters of a run's output the policy sees. */
  maxOutputChars: z.number().int().min(16).default(1024),
  reward: z
    .strictObject({
      correct: z.number().default(1),
      wrong: z.number().default(-1),
      /** Applied to wrong answers (reward < 0): min(cap, reward + (toolCalls − baseline) / 2 · coefficient); null turns it off. */
      toolUseShaping: rewardShaping.nullable().prefault({}),
    })
    .prefault({}),
});

export type ToolcallConfig = z.infer<typeof toolcallConfigSchema>;
export type ToolcallConfigInput = z.input<typeof toolcallConfigSchema>;
export type ToolcallRewardConfig = ToolcallConfig['reward'];

export function parseToolcallConfig(input: ToolcallConfigInput = {}): ToolcallConfig {
  return toolcallConfigSchema.parse(input);
}

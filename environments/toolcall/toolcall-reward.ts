// The toolcall outcome reward (spec 10.4, the original's `reward_func`): +1 for a correct final answer, −1 for
// a wrong or missing one, and a wrong answer's reward shaped by how much the policy used the tool:
// min(cap, r + (toolCalls − baseline) / 2 · coefficient), i.e. −1.1 with no call, −1 with two, −0.6 at most.

import type { ToolcallRewardConfig } from './toolcall-config.js';

export function toolcallReward(correct: boolean, toolCalls: number, config: ToolcallRewardConfig): number {
  const score = correct ? config.correct : config.wrong;
  const shaping = config.toolUseShaping;
  if (score >= 0 || shaping === null) return score;
  const shaped = score + ((toolCalls - shaping.baselineToolCalls) / 2) * shaping.coefficient;
  // Rounded so −1 + 0.1·k prints as the number a person expects (no 0.30000000000000004 artefacts).
  return Math.round(Math.min(shaping.cap, shaped) * 1e9) / 1e9;
}

// Which teachers can score a response at the temperature it was drawn at. OPD and combine compare the teacher's
// log-probs with π_old, which every trainer computes at the sample's temperature T (core/logprob-temperature.ts),
// so a teacher scored at another temperature biases every advantage. SGLang 0.5.23 and vLLM 0.32 score prompt
// (prefill) tokens untempered whatever the request asks, and neither returns the whole vocabulary that an exact
// rescaling on this side would need, so a run whose samples are drawn at T ≠ 1 is refused with them as teacher
// (docs/scoring.md): at configuration, at gateway start, and per turn when one reaches scoring anyway.

import type { EngineKind } from './engine-kinds.js';
import { logprobTemperature } from './logprob-temperature.js';
import type { Method } from './types.js';

/** The failure type of a teacher asked to score a response at a temperature it cannot score at. */
export const TEACHER_TEMPERATURE_REFUSED = 'TeacherTemperatureRefused';

/** The engine kinds whose teacher prefill scores at the temperature asked for (log_softmax(logits / T)). */
export const PREFILL_AT_TEMPERATURE_KINDS: readonly EngineKind[] = ['reference'];

const ENGINE_NAMES: Record<EngineKind, string> = {
  reference: 'the reference engine',
  sglang: 'SGLang',
  vllm: 'vLLM',
};

/** Whether a teacher of this kind scores a prefill at `temperature` (any kind scores at 1). */
export function teacherScoresAt(kind: EngineKind, temperature: number): boolean {
  return logprobTemperature(temperature) === 1 || PREFILL_AT_TEMPERATURE_KINDS.includes(kind);
}

/**
 * Why a run of `method` cannot compare a teacher of `kind` with samples drawn at `temperature`; null when it
 * can (rl uses no teacher; every teacher scores at 1; greedy decoding reports T = 1). `method` null: a turn
 * already being scored, which only opd and combine do.
 */
export function teacherTemperatureRefusal(input: {
  kind: EngineKind;
  method: Method | null;
  temperature: number;
}): string | null {
  if (input.method === 'rl' || teacherScoresAt(input.kind, input.temperature)) return null;
  const method = input.method === null ? 'opd and combine need' : `${input.method} needs`;
  return (
    `${method} the teacher's log-probs at the sample's temperature ${input.temperature} (π_old is ` +
    `computed at it), and ${ENGINE_NAMES[input.kind]} as teacher (teacher.kind ${input.kind}) scores them at ` +
    'temperature 1 only: sample at temperature 1 (sampling.temperature 1), or score with a reference-engine ' +
    'teacher (teacher.kind reference)'
  );
}

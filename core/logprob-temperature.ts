// The temperature a response's log-probs are computed at. Engines report log_softmax(logits / T) for the
// tokens they sample at temperature T (SGLang's default, the reference engine), but greedy decoding (T = 0)
// reports the untempered distribution, T = 1 (SGLang's cut-off: below 1e-6 is greedy). Every trainer computes
// a sample's log-probs at this temperature, and the teacher prefill is asked for it too (docs/scoring.md).

/** Below this a sampling temperature is greedy decoding (SGLang and the reference engine use the same). */
export const GREEDY_TEMPERATURE = 1e-6;

/** The temperature of the reported log-probs for a response sampled at `temperature` (absent: 1). */
export function logprobTemperature(temperature: number | null | undefined): number {
  if (temperature === null || temperature === undefined || !Number.isFinite(temperature)) return 1;
  return temperature < GREEDY_TEMPERATURE ? 1 : temperature;
}

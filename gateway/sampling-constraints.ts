// The request fields that shape the distribution a reply is drawn from in a way training does not replay.
// Training recomputes π_old as log_softmax(logits / T) (docs/scoring.md, "Temperature"); a penalty, a bias, a
// grammar or a forced tool call draws (or feeds) tokens from something else, and the engines report log-probs
// after those changes (SGLang, vLLM's processed_logprobs) or before them (vLLM's raw_logprobs): neither is the
// distribution the trainer computes. Such a turn is recorded with the fields named, and scoring excludes it as
// `constrained-sampling` (docs/scoring.md, "Sampling constraints"). Neutral values constrain nothing.

import type { ChatRequest } from './chat-request-schema.js';

/**
 * Grammar-constrained decoding the engines accept outside the OpenAI fields (SGLang: `regex`, `json_schema`,
 * `ebnf`, `structural_tag`; vLLM: `structured_outputs` and the older `guided_*`; vLLM's token filters).
 * Present at all (not null), they constrain.
 */
const GRAMMAR_FIELDS = [
  'regex',
  'json_schema',
  'ebnf',
  'structural_tag',
  'structured_outputs',
  'guided_json',
  'guided_regex',
  'guided_choice',
  'guided_grammar',
  'bad_words',
  'allowed_token_ids',
] as const;

/** The constraining fields of `request`, in request spelling (`presence_penalty`, `tool_choice`, …); [] when none. */
export function samplingConstraints(request: ChatRequest): string[] {
  const found: string[] = [];
  const penalty = (field: string, value: number | null | undefined, neutral: number) => {
    if (typeof value === 'number' && value !== neutral) found.push(field);
  };
  penalty('presence_penalty', request.presence_penalty, 0);
  penalty('frequency_penalty', request.frequency_penalty, 0);
  penalty('repetition_penalty', request.repetition_penalty, 1);
  // min_tokens masks the end tokens until that many were drawn.
  penalty('min_tokens', request.min_tokens, 0);
  if (Object.values(request.logit_bias ?? {}).some((bias) => bias !== 0)) found.push('logit_bias');
  if (request.response_format && request.response_format.type !== 'text') found.push('response_format');
  // "required" and a named function are a grammar in SGLang and vLLM, and a fed (not sampled) call in the
  // reference engine (engine/openclaw_engine/forced_tool_call.py); "auto" and "none" draw freely.
  const toolChoice = request.tool_choice;
  if (toolChoice === 'required' || (typeof toolChoice === 'object' && toolChoice !== null))
    found.push('tool_choice');
  for (const field of GRAMMAR_FIELDS) {
    const value = (request as Record<string, unknown>)[field];
    if (value !== undefined && value !== null) found.push(field);
  }
  return found;
}

// The canonical chat completion every adapter translates its engine's answer into (the reference engine's
// own spelling): prompt ids and sampled ids on the choice (`prompt_token_ids`, `token_ids`), per-token
// `logprobs.content`, `reasoning_content`, and `metadata.weight_version`. Parsed loosely at this boundary, so
// unknown fields pass through to the client untouched while a field the capture depends on that has the
// wrong type is caught here rather than stored in a turn.

import { z } from 'zod';

/**
 * Token ids, checked in one loop and kept as they came: a schema per element took 3.5 ms per response, and
 * copied the array, for the real agent's 53k-token prompt (0.1 ms this way).
 */
const tokenIds = z.custom<number[]>(isTokenIds, 'expected an array of token ids (integers, 0 or more)');

function isTokenIds(value: unknown): value is number[] {
  if (!Array.isArray(value)) return false;
  for (const id of value) if (!Number.isInteger(id) || id < 0) return false;
  return true;
}
const logprobs = z
  .looseObject({
    content: z
      .array(z.looseObject({ logprob: z.number().nullable() }))
      .nullable()
      .optional(),
  })
  .nullable()
  .optional();
const metaInfo = z.looseObject({ weight_version: z.unknown().optional() }).nullable().optional();
const metadata = z.looseObject({ weight_version: z.unknown().optional() }).nullable().optional();

export const toolCallDeltaSchema = z.looseObject({
  index: z.number().int().min(0).optional(),
  id: z.string().nullable().optional(),
  type: z.string().nullable().optional(),
  function: z
    .looseObject({ name: z.string().nullable().optional(), arguments: z.unknown().optional() })
    .nullable()
    .optional(),
});
export type ToolCallDelta = z.output<typeof toolCallDeltaSchema>;

const messageFields = {
  role: z.string().nullable().optional(),
  content: z.string().nullable().optional(),
  reasoning_content: z.string().nullable().optional(),
  tool_calls: z.array(toolCallDeltaSchema).nullable().optional(),
};

const choiceFields = {
  index: z.number().int().optional(),
  logprobs,
  finish_reason: z.string().nullable().optional(),
  prompt_token_ids: tokenIds.nullable().optional(),
  token_ids: tokenIds.nullable().optional(),
  meta_info: metaInfo,
};

export const engineChatResponseSchema = z.looseObject({
  model: z.string().optional(),
  choices: z.array(z.looseObject({ ...choiceFields, message: z.looseObject(messageFields) })).min(1),
  metadata,
});
export type EngineChatResponse = z.output<typeof engineChatResponseSchema>;

export const engineChatChunkSchema = z.looseObject({
  model: z.string().optional(),
  choices: z.array(z.looseObject({ ...choiceFields, delta: z.looseObject(messageFields).optional() })),
  metadata,
  usage: z.unknown().optional(),
  error: z.unknown().optional(),
});
export type EngineChatChunk = z.output<typeof engineChatChunkSchema>;

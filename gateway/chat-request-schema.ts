// The chat-completions request as the gateway accepts it. Checked here, at the edge, so a bad request gets a
// 400 naming its field before anything reaches the engine. Objects are loose: OpenAI clients send many
// optional fields, which the engine accepts or refuses itself (its 4xx is relayed).

import { z } from 'zod';
import { invalidRequest, type OpenAIError } from './openai-errors.js';

export const CHAT_ROLES = ['system', 'developer', 'user', 'assistant', 'tool'] as const;

const contentPart = z.looseObject({ type: z.string().min(1) });
const messageContent = z.union([z.string(), z.array(contentPart), z.null()], {
  error: 'expected a string, an array of content parts, or null',
});

const toolCall = z.looseObject({
  id: z.string().optional(),
  type: z.literal('function').optional(),
  function: z.looseObject({
    name: z.string().min(1),
    arguments: z.union([z.string(), z.record(z.string(), z.unknown())]).optional(),
  }),
});

const chatMessage = z.looseObject({
  role: z.enum(CHAT_ROLES),
  content: messageContent.optional(),
  name: z.string().optional(),
  tool_calls: z.array(toolCall).nullable().optional(),
  tool_call_id: z.string().optional(),
});

const tool = z.looseObject({
  type: z.literal('function'),
  function: z.looseObject({
    name: z.string().min(1),
    description: z.string().nullable().optional(),
    parameters: z.record(z.string(), z.unknown()).nullable().optional(),
  }),
});

const toolChoice = z.union([
  z.enum(['none', 'auto', 'required']),
  z.looseObject({ type: z.literal('function'), function: z.looseObject({ name: z.string().min(1) }) }),
]);

const penalty = z.number().min(-2).max(2).nullable().optional();
// A token id (as a JSON object key) → a bias OpenAI bounds to [-100, 100].
const logitBias = z.record(
  z.string().regex(/^\d+$/, 'logit_bias keys must be token ids'),
  z.number().min(-100).max(100),
);
const tokenLimit = z.number().int().min(1).nullable().optional();
const flag = z.boolean().nullable().optional();

export const chatRequestSchema = z
  .looseObject({
    messages: z
      .array(chatMessage, { error: 'messages must be a non-empty list' })
      .min(1, 'messages must be a non-empty list'),
    model: z.string().optional(),
    stream: flag,
    stream_options: z.looseObject({ include_usage: flag }).nullable().optional(),
    temperature: z.number().min(0).max(2).nullable().optional(),
    top_p: z.number().gt(0).max(1).nullable().optional(),
    // SGLang's and vLLM's extensions; -1 (or 0 for vLLM) turns top-k off.
    top_k: z.number().int().min(-1).nullable().optional(),
    min_p: z.number().min(0).max(1).nullable().optional(),
    max_tokens: tokenLimit,
    max_completion_tokens: tokenLimit,
    n: z.literal(1, 'n must be 1: the gateway serves one choice per request').nullable().optional(),
    presence_penalty: penalty,
    frequency_penalty: penalty,
    // SGLang's and vLLM's extensions: 1 is neutral; min_tokens keeps the end tokens from being drawn.
    repetition_penalty: z.number().gt(0).max(2).nullable().optional(),
    min_tokens: z.number().int().min(0).nullable().optional(),
    logit_bias: logitBias.nullable().optional(),
    response_format: z
      .looseObject({ type: z.string().min(1) })
      .nullable()
      .optional(),
    logprobs: flag,
    top_logprobs: z.number().int().min(0).max(20).nullable().optional(),
    seed: z.number().int().min(0).nullable().optional(),
    stop: z
      .union([z.string(), z.array(z.string()).max(32)])
      .nullable()
      .optional(),
    tools: z.array(tool).nullable().optional(),
    tool_choice: toolChoice.nullable().optional(),
    parallel_tool_calls: flag,
    user: z.string().optional(),
    // Rendered into the prompt by the engine's chat template (e.g. enable_thinking); recorded with the turn.
    chat_template_kwargs: z.record(z.string(), z.unknown()).nullable().optional(),
    // SGLang's exact-token extensions: a client may ask for them too.
    return_prompt_token_ids: flag,
    return_token_ids: flag,
    // Session metadata (not OpenAI fields; removed before forwarding).
    session_id: z.union([z.string(), z.number()]).optional(),
    session_done: z.union([z.boolean(), z.string(), z.number()]).optional(),
    turn_type: z.string().optional(),
  })
  .superRefine((body, ctx) => {
    if (body.top_logprobs && !body.logprobs)
      ctx.addIssue({
        code: 'custom',
        path: ['top_logprobs'],
        message: 'top_logprobs requires logprobs=true',
      });
    // A pre-tokenised prompt would make the recorded messages disagree with the tokens the engine saw.
    if (body.input_ids !== undefined)
      ctx.addIssue({
        code: 'custom',
        path: ['input_ids'],
        message: 'input_ids is not accepted by the gateway; send messages',
      });
  });

export type ChatRequest = z.output<typeof chatRequestSchema>;

export type ChatRequestResult = { ok: true; request: ChatRequest } | { ok: false; error: OpenAIError };

/** The request, or a 400 whose `param` names the first bad field (`messages[1].role`). */
export function parseChatRequest(body: unknown): ChatRequestResult {
  const result = chatRequestSchema.safeParse(body);
  if (result.success) return { ok: true, request: result.data };
  const issue = result.error.issues[0];
  const param = issue ? fieldPath(issue.path) : 'body';
  const message = issue?.message ?? 'invalid request';
  return { ok: false, error: invalidRequest(`${param}: ${message}`, param) };
}

/** `['messages', 0, 'role']` → `messages[0].role`; the empty path is the whole body. */
export function fieldPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const part of path) {
    if (typeof part === 'number') out += `[${part}]`;
    else out += (out ? '.' : '') + String(part);
  }
  return out || 'body';
}

// A policy behind a plain OpenAI-compatible endpoint (a hosted API, a vLLM without its token-id extensions):
// the messages go to `/v1/chat/completions` and the answer comes back as text and tool calls only. No token
// ids and no log-probs: an episode with such a policy can be run and scored, never trained.

import { z } from 'zod';
import type { ExactChatRequest, ExactCompletion } from './engine-adapter.js';
import { EngineHttp, EngineHttpError } from './engine-http.js';

/** The part of an OpenAI `ChatCompletion` (openai SDK `ChatCompletion`) a text-only step reads. */
const plainChatResponseSchema = z.looseObject({
  choices: z
    .array(
      z.looseObject({
        finish_reason: z.string().nullable().optional(),
        message: z.looseObject({
          content: z.string().nullable().optional(),
          reasoning_content: z.string().nullable().optional(),
          tool_calls: z.array(z.unknown()).nullable().optional(),
        }),
      }),
    )
    .min(1),
});

export interface PlainChatPolicy {
  url: string;
  timeoutMs: number;
  /** Bearer key of a hosted API; held by the worker, never in a workflow's input. */
  apiKey?: string;
}

/** One text-only completion: the ids and log-probs are empty, the version unknown. */
export async function plainChatCompletion(
  policy: PlainChatPolicy,
  request: ExactChatRequest,
  signal: AbortSignal,
): Promise<ExactCompletion> {
  const http = new EngineHttp(policy.url, { timeoutMs: policy.timeoutMs });
  const body = {
    ...(request.model !== undefined && { model: request.model }),
    messages: request.messages,
    ...(request.tools && { tools: request.tools }),
    max_tokens: request.maxTokens,
    temperature: request.temperature,
    ...(request.topP !== undefined && { top_p: request.topP }),
    ...(request.seed !== undefined && { seed: request.seed }),
  };
  const headers: Record<string, string> = policy.apiKey ? { authorization: `Bearer ${policy.apiKey}` } : {};
  const answer = plainChatResponseSchema.safeParse(
    await http.json('POST', '/v1/chat/completions', body, { signal, headers }),
  );
  if (!answer.success)
    throw new EngineHttpError(
      'bad_response',
      `the policy returned a malformed chat completion: ${answer.error.issues[0]?.message ?? ''}`,
    );
  const choice = answer.data.choices[0] as z.output<typeof plainChatResponseSchema>['choices'][number];
  const { message } = choice;
  return {
    promptIds: [],
    responseIds: [],
    logprobs: [],
    message: {
      content: message.content ?? '',
      ...(message.reasoning_content && { reasoning_content: message.reasoning_content }),
      ...(message.tool_calls && message.tool_calls.length > 0 && { tool_calls: message.tool_calls }),
    },
    finishReason: choice.finish_reason ?? 'stop',
    weightVersion: null,
  };
}

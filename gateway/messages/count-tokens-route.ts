// POST /v1/messages/count_tokens: how many input tokens a Messages request takes, counted by the engine that
// would serve it. The request is read and translated as /v1/messages reads it (messages-to-chat.ts) and rendered
// with the engine's own chat template (`renderPrompt`), so the count is the `usage.input_tokens` that a
// `messages.create` of the same conversation reports. Nothing is recorded and no session is touched. Images
// are refused (400): their token count depends on the vision processor, which only a generation runs.

import type { FastifyReply, FastifyRequest } from 'fastify';
import { clientSignalOf } from '../client-signal.js';
import type { EngineUpstream } from '../engine-upstream.js';
import { invalidRequest } from '../openai-errors.js';
import { type MessagesRequest, parseMessagesRequest } from './messages-request-schema.js';
import { messagesToChat } from './messages-to-chat.js';

export const COUNT_TOKENS_ROUTE = '/v1/messages/count_tokens';

/** Anthropic's answer: the prompt's token count. */
export interface CountTokensAnswer {
  input_tokens: number;
}

export function countTokensHandler(upstream: EngineUpstream) {
  return async (request: FastifyRequest, reply: FastifyReply): Promise<CountTokensAnswer> => {
    const body = request.body;
    // A count_tokens body has no max_tokens and never streams; otherwise it is a Messages request.
    const asMessages = isRecord(body) ? { ...body, max_tokens: 1, stream: false } : body;
    const parsed = parseMessagesRequest(asMessages);
    if (!parsed.ok) throw parsed.error;
    const imageAt = firstImage(parsed.request);
    if (imageAt !== null)
      throw invalidRequest(
        `${imageAt}: count_tokens does not count images (their tokens depend on the vision processor); ` +
          'count the request without them',
        imageAt,
      );
    const chat = messagesToChat(parsed.request);
    const signal = clientSignalOf(reply);
    try {
      const ids = await upstream.engine.renderPrompt(
        {
          messages: chat.messages,
          tools: chat.tools ?? null,
          chatTemplateKwargs: chat.chat_template_kwargs ?? null,
        },
        signal,
      );
      return { input_tokens: ids.length };
    } catch (error) {
      throw upstream.failure(error, signal);
    }
  };
}

/** The path of the first image block (in a message or in a tool result), Anthropic's spelling; or null. */
function firstImage(request: MessagesRequest): string | null {
  for (const [i, message] of request.messages.entries()) {
    if (typeof message.content === 'string') continue;
    for (const [j, block] of message.content.entries()) {
      if (block.type === 'image') return `messages.${i}.content.${j}`;
      if (block.type === 'tool_result' && Array.isArray(block.content)) {
        const k = block.content.findIndex((part) => part.type === 'image');
        if (k >= 0) return `messages.${i}.content.${j}.content.${k}`;
      }
    }
  }
  return null;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

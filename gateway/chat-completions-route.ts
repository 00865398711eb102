// POST /v1/chat/completions: the chat request as it is, answered as chat completions (protocol-route.ts).

import type { FastifyRequest } from 'fastify';
import { chatProtocol } from './chat-protocol.js';
import { parseChatRequest } from './chat-request-schema.js';
import type { ChatDeps } from './chat-turn.js';
import { type ProtocolRoute, protocolHandler, type RequestContext } from './protocol-route.js';

export type { RequestContext } from './protocol-route.js';

export const chatCompletionsRoute: ProtocolRoute = {
  protocol: chatProtocol,
  toChat: (body) => {
    const parsed = parseChatRequest(body);
    if (!parsed.ok) throw parsed.error;
    return { chat: parsed.request };
  },
};

export function chatCompletionsHandler(
  deps: ChatDeps,
  contextOf: (request: FastifyRequest) => RequestContext,
) {
  return protocolHandler(deps, contextOf, chatCompletionsRoute);
}

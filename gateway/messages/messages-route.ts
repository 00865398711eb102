// POST /v1/messages: an Anthropic Messages request served by the gateway's shared pipeline (protocol-route.ts)
// as the chat request it stands for (messages-to-chat.ts), answered in Anthropic's protocol. Session identity,
// exact capture, recording before the answer completes, Idempotency-Key replay and feedback's `turn_id` are
// the chat route's own.

import type { ProtocolRoute } from '../protocol-route.js';
import { messagesProtocol } from './messages-protocol.js';
import { parseMessagesRequest } from './messages-request-schema.js';
import { messagesToChat } from './messages-to-chat.js';

export const MESSAGES_ROUTE = '/v1/messages';

export const messagesRoute: ProtocolRoute = {
  protocol: messagesProtocol,
  toChat(body) {
    const parsed = parseMessagesRequest(body);
    if (!parsed.ok) throw parsed.error;
    return { chat: messagesToChat(parsed.request) };
  },
};

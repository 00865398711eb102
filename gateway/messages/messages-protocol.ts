// The Anthropic Messages protocol (client-protocol.ts): the engine's canonical chat answer as a Message, its
// stream as Anthropic's named events (messages-events.ts), and every error on the route in Anthropic's shape.
// The pipeline holds the stream's last event, `message_stop`, until the main turn is recorded and kept for
// replay, so an Anthropic client that saw it can count on its turn.

import type { ClientProtocol, ProtocolStream } from '../client-protocol.js';
import { anthropicErrorBody, anthropicErrorEvent } from './anthropic-errors.js';
import { MessagesEvents } from './messages-events.js';
import { messagesResponse } from './messages-response.js';

export const messagesProtocol: ClientProtocol = {
  name: 'messages',
  response: async (body, view) => messagesResponse(body, { sessionId: view.sessionId, turnId: view.turnId }),
  stream: (view): ProtocolStream => {
    const events = new MessagesEvents(view.sessionId);
    return {
      chunk: (chunk) => events.chunk(chunk),
      finish: async (_last, ids) => events.finish(ids),
      error: (body) => [anthropicErrorEvent(body)],
    };
  },
  error: (error) => ({ status: error.status, body: { ...anthropicErrorBody(error) } }),
};

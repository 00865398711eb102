// The chat-completions protocol: the engine's answer as OpenAI chat completions, with only the fields the
// client asked for, `session_id`, and a recorded main turn's `turn_id` (a chunk of its own before `[DONE]`).

import { type ClientProtocol, type ProtocolStream, sseEvent } from './client-protocol.js';
import { clientChunk, clientResponse, turnIdChunk } from './client-response.js';

export const DONE_EVENT = 'data: [DONE]\n\n';

export const chatProtocol: ClientProtocol = {
  name: 'chat',
  response: async (body, view) => clientResponse(body, view.wants, view.sessionId, view.turnId),
  stream: (view): ProtocolStream => ({
    chunk: (chunk) => {
      const out = clientChunk(chunk, view.wants, view.sessionId);
      return out === null ? [] : [sseEvent(out)];
    },
    finish: async (last, ids) =>
      ids.turnId === null
        ? [DONE_EVENT]
        : [sseEvent(turnIdChunk(last, ids.sessionId, ids.turnId)), DONE_EVENT],
    error: (body) => [sseEvent(body)],
  }),
  error: (error) => ({ status: error.status, body: error.toJSON() as unknown as Record<string, unknown> }),
};

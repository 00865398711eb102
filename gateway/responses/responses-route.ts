// POST /v1/responses (the OpenAI Responses API): the request, with the conversation `previous_response_id`
// names, becomes the chat request a chat-completions client would send for the same conversation, and is
// served by the same pipeline (protocol-route.ts); the answer is a `response` object or its events.

import { notFound, OpenAIError, serviceUnavailable } from '../openai-errors.js';
import type { ProtocolRoute } from '../protocol-route.js';
import type { ResponseStates } from './response-state.js';
import { newResponseId, responsesProtocol } from './responses-protocol.js';
import { parseResponsesRequest } from './responses-request-schema.js';
import { responsesToChat } from './responses-to-chat.js';

export const RESPONSES_ROUTE = '/v1/responses';

/** For errors before a request is understood: they are OpenAI's JSON errors, as on chat. */
const errorsOnly = responsesProtocol({
  request: { input: '' },
  id: '',
  createdAt: 0,
  keep: null,
});

export function responsesRoute(states: ResponseStates): ProtocolRoute {
  return {
    protocol: errorsOnly,
    async toChat(body, context) {
      const parsed = parseResponsesRequest(body);
      if (!parsed.ok) throw parsed.error;
      const request = parsed.request;
      const previousId = request.previous_response_id ?? null;
      const previous =
        previousId === null ? [] : await storeCall(() => states.conversation(context.tenant, previousId));
      if (previous === null)
        throw notFound(
          `previous_response_id: no stored response ${JSON.stringify(previousId)}`,
          'previous_response_id',
        );
      const { chat, conversation } = responsesToChat(request, previous);
      const id = newResponseId();
      return {
        chat,
        protocol: responsesProtocol({
          request,
          id,
          createdAt: Math.floor(Date.now() / 1000),
          keep:
            request.store === false
              ? null
              : (answer) => storeCall(() => states.keep(context.tenant, id, [...conversation, answer])),
        }),
      };
    },
  };
}

/** A store failure is the client's to retry: a 503, like a turn that could not be recorded. */
async function storeCall<T>(operation: () => Promise<T>): Promise<T> {
  try {
    return await operation();
  } catch (error) {
    if (error instanceof OpenAIError) throw error;
    throw serviceUnavailable(
      `the stored responses could not be reached: ${String(error)}`,
      'response_state_unavailable',
    );
  }
}

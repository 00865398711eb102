// TEST DOUBLE of a plain OpenAI-compatible server (a hosted API, a vLLM without token-id extensions): a real
// HTTP server that answers only `GET /v1/models` and `POST /v1/chat/completions`, in the shapes the `openai`
// SDK's types declare (`Model`, `ChatCompletion`: checked by the compiler below), with no token ids and no
// log-probs. Every other route (`/v1/tokenize`, `/tokenize`) is a 404 "not here", as such servers answer. The
// reply is chosen by the test from the conversation.

import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type OpenAI from 'openai';

export interface PlainReply {
  content?: string;
  /** Tool calls as the API returns them (arguments as a JSON string). */
  toolCalls?: { name: string; arguments: Record<string, unknown> }[];
}

export interface PlainOpenAIServerDouble {
  url: string;
  /** Every request's method and path, in order. */
  requests: { method: string; path: string; authorization: string | undefined }[];
  close(): Promise<void>;
}

export const PLAIN_MODEL_ID = 'hosted-model';

export async function startPlainOpenAIServerDouble(
  reply: (messages: OpenAI.Chat.ChatCompletionMessageParam[]) => PlainReply,
): Promise<PlainOpenAIServerDouble> {
  const requests: PlainOpenAIServerDouble['requests'] = [];
  const server: Server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const path = (request.url ?? '').split('?')[0] ?? '';
      requests.push({ method: request.method ?? '', path, authorization: request.headers.authorization });
      const send = (status: number, body: unknown) => {
        response.writeHead(status, { 'content-type': 'application/json' });
        response.end(JSON.stringify(body));
      };
      if (request.method === 'GET' && path === '/v1/models') {
        const model: OpenAI.Models.Model = {
          id: PLAIN_MODEL_ID,
          object: 'model',
          created: 0,
          owned_by: 'double',
        };
        return send(200, { object: 'list', data: [model] });
      }
      if (request.method === 'POST' && path === '/v1/chat/completions') {
        const body = JSON.parse(
          Buffer.concat(chunks).toString('utf8'),
        ) as OpenAI.Chat.ChatCompletionCreateParams;
        const chosen = reply(body.messages);
        const toolCalls: OpenAI.Chat.ChatCompletionMessageToolCall[] = (chosen.toolCalls ?? []).map(
          (call, i) => ({
            id: `call_${i}`,
            type: 'function',
            function: { name: call.name, arguments: JSON.stringify(call.arguments) },
          }),
        );
        const completion: OpenAI.Chat.ChatCompletion = {
          id: `chatcmpl-${requests.length}`,
          object: 'chat.completion',
          created: Math.floor(Date.now() / 1000),
          model: body.model || PLAIN_MODEL_ID,
          choices: [
            {
              index: 0,
              finish_reason: toolCalls.length > 0 ? 'tool_calls' : 'stop',
              logprobs: null,
              message: {
                role: 'assistant',
                content: chosen.content ?? null,
                refusal: null,
                ...(toolCalls.length > 0 && { tool_calls: toolCalls }),
              },
            },
          ],
          usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 },
        };
        return send(200, completion);
      }
      response.writeHead(404, { 'content-type': 'text/plain' });
      response.end('not here');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { flattenContent } from '../../core/chat-messages.js';

/**
 * TEST DOUBLE of the policy engine: a deterministic OpenAI-compatible server that plays scripted turns
 * (tool calls, then a final answer; or malformed tool calls) chosen by the task in the conversation and
 * the step (the number of assistant messages so far). It answers in the reference engine's format —
 * `/tokenize` (messages + tools → ids), `/v1/chat/completions` with `prompt_token_ids`, `token_ids` and
 * per-token `logprobs`, `metadata.weight_version` — so rollouts store real-looking samples and rewards
 * can be checked exactly. Its "tokenizer" is bytes: a token id is one UTF-8 byte.
 */

export interface ScriptedToolCall {
  name: string;
  /** An object is sent as its JSON; a string is sent as it is (to script bad JSON). */
  arguments: Record<string, unknown> | string;
}

export interface ScriptedTurn {
  /** Text of the reply; with tool calls, the text before them. */
  content?: string;
  toolCalls?: ScriptedToolCall[];
  /** Text with broken tool-call markup: the engine returns it as content with no `tool_calls`. */
  malformed?: string;
  finishReason?: 'stop' | 'length';
}

export interface ScriptContext {
  /** The first user message (the task). */
  task: string;
  step: number;
  /** `<rolloutId>:<step>` when the caller sent a request id (engine mode). */
  rid: string | null;
  messages: { role: string; content?: unknown }[];
}

/** Chooses the turn to play; undefined falls back to a plain final answer "I do not know." */
export type Script = (context: ScriptContext) => ScriptedTurn | undefined;

export interface ScriptedRequest {
  path: string;
  rid: string | null;
  step: number;
  task: string;
  inputIds: number[] | null;
  headers: Record<string, string | string[] | undefined>;
}

export interface Hold {
  /** Resolves when a matching request arrived (and is being held). */
  reached: Promise<void>;
  release(): void;
}

export interface ScriptedPolicyServer {
  url: string;
  requests: ScriptedRequest[];
  weightVersion: number;
  /** Holds the answer to the first chat request that matches until `release()`. */
  hold(match: (context: ScriptContext) => boolean): Hold;
  close(): Promise<void>;
}

export function bytesOf(text: string): number[] {
  return [...Buffer.from(text, 'utf8')];
}

/** The double's chat template: the messages and tools as JSON, one byte per token. */
export function renderPrompt(messages: unknown, tools: unknown): number[] {
  return bytesOf(JSON.stringify({ messages, tools: tools ?? null }));
}

/** Plays `turns[step]` of the first script whose key appears in the task text. */
export function scriptsByTask(scripts: Record<string, ScriptedTurn[]>): Script {
  return ({ task, step }) => {
    for (const [key, turns] of Object.entries(scripts)) if (task.includes(key)) return turns[step];
    return undefined;
  };
}

/** The log-prob the double reports for the i-th token of a reply. */
export function scriptedLogprob(i: number): number {
  return -0.05 * (1 + (i % 7));
}

export async function startScriptedPolicy(script: Script, options: { weightVersion?: number } = {}) {
  const holds: { match: (c: ScriptContext) => boolean; reached: () => void; released: Promise<void> }[] = [];
  const state = { weightVersion: options.weightVersion ?? 0 };
  const requests: ScriptedRequest[] = [];

  const answer = async (path: string, body: Record<string, unknown>, headers: ScriptedRequest['headers']) => {
    if (path === '/tokenize' || path === '/v1/tokenize') {
      const tokens =
        body.messages !== undefined
          ? renderPrompt(body.messages, body.tools)
          : bytesOf(String(body.prompt ?? body.text ?? ''));
      return { tokens, count: tokens.length, max_model_len: 1_000_000 };
    }
    // `/model_info` is SGLang 0.5.23's name, which the reference engine serves too; `/get_model_info` its old alias.
    if (path === '/model_info' || path === '/get_model_info')
      return { weight_version: String(state.weightVersion), model_path: 'scripted' };
    if (path === '/health' || path === '/abort_request') return {};
    if (path !== '/v1/chat/completions') return null;

    const messages = (body.messages ?? []) as ScriptContext['messages'];
    // Text parts only: a user message may carry images as content parts (the gui kind's screenshots).
    const task = flattenContent(messages.find((m) => m.role === 'user')?.content ?? '');
    const step = messages.filter((m) => m.role === 'assistant').length;
    const rid = typeof body.rid === 'string' ? body.rid : null;
    const context: ScriptContext = { task, step, rid, messages };
    const inputIds = Array.isArray(body.input_ids) ? (body.input_ids as number[]) : null;
    requests.push({ path, rid, step, task, inputIds, headers });
    const hold = holds.find((h) => h.match(context));
    if (hold) {
      holds.splice(holds.indexOf(hold), 1);
      hold.reached();
      await hold.released;
    }

    const turn = script(context) ?? { content: 'I do not know.' };
    const calls = (turn.toolCalls ?? []).map((call, i) => ({
      id: `call_${step}_${i}`,
      type: 'function',
      function: {
        name: call.name,
        arguments: typeof call.arguments === 'string' ? call.arguments : JSON.stringify(call.arguments),
      },
    }));
    const markup = calls
      .map(
        (c) => `<tool_call>{"name": "${c.function.name}", "arguments": ${c.function.arguments}}</tool_call>`,
      )
      .join('\n');
    const text = turn.malformed ?? [turn.content ?? '', markup].filter(Boolean).join('\n');
    const tokenIds = bytesOf(text || ' ');
    const message: Record<string, unknown> = {
      role: 'assistant',
      content: turn.malformed ?? turn.content ?? (calls.length > 0 ? '' : text),
    };
    if (calls.length > 0) message.tool_calls = calls;
    return {
      id: `scripted-${requests.length}`,
      object: 'chat.completion',
      created: 0,
      model: 'scripted',
      choices: [
        {
          index: 0,
          message,
          logprobs: {
            content: tokenIds.map((id, i) => ({ token: String(id), logprob: scriptedLogprob(i) })),
          },
          finish_reason: turn.finishReason ?? (calls.length > 0 ? 'tool_calls' : 'stop'),
          prompt_token_ids: inputIds ?? renderPrompt(messages, body.tools),
          token_ids: tokenIds,
        },
      ],
      usage: { prompt_tokens: 0, completion_tokens: tokenIds.length, total_tokens: tokenIds.length },
      metadata: { weight_version: String(state.weightVersion) },
    };
  };

  const server: Server = createServer((req, res) => {
    let raw = '';
    req.on('data', (chunk) => {
      raw += chunk;
    });
    req.on('end', async () => {
      const path = (req.url ?? '/').split('?')[0] ?? '/';
      const body = raw ? (JSON.parse(raw) as Record<string, unknown>) : {};
      const result = await answer(path, body, req.headers);
      res.writeHead(result === null ? 404 : 200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(result ?? { error: { message: `no route ${path}` } }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const api: ScriptedPolicyServer = {
    url: `http://127.0.0.1:${port}`,
    requests,
    get weightVersion() {
      return state.weightVersion;
    },
    set weightVersion(value: number) {
      state.weightVersion = value;
    },
    hold(match) {
      let reached!: () => void;
      let release!: () => void;
      const reachedPromise = new Promise<void>((r) => {
        reached = r;
      });
      const released = new Promise<void>((r) => {
        release = r;
      });
      holds.push({ match, reached, released });
      return { reached: reachedPromise, release };
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
  return api;
}

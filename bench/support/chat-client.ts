// A minimal chat-completions client on Node's built-in fetch that times a request: the whole response, and
// for streams the first generated text (time to first token) and the final `[DONE]`.

import { now } from './stats.js';

export interface ChatTiming {
  /** Request sent to complete response (the JSON body, or `[DONE]` when streaming), ms. */
  totalMs: number;
  /** Streaming only: request sent to the first chunk carrying generated text, ms (NaN otherwise). */
  ttftMs: number;
  /** Generated text, for checking that two paths produced the same output. */
  content: string;
  /** The reply's `content` alone, as a client would send it back in its next request. */
  reply: string;
  /** Wall-clock time (Date.now()) the response completed. */
  completedAt: number;
}

interface ChunkShape {
  choices?: {
    delta?: { content?: string | null; reasoning_content?: string | null; reasoning?: string | null };
  }[];
  error?: unknown;
}

interface BodyShape {
  choices?: {
    message?: { content?: string | null; reasoning_content?: string | null; reasoning?: string | null };
  }[];
}

export async function timedChat(
  url: string,
  body: Record<string, unknown>,
  headers: Record<string, string> = {},
): Promise<ChatTiming> {
  const started = now();
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
  if (!response.ok) throw new Error(`${url}: HTTP ${response.status}: ${await response.text()}`);
  if (!body.stream) {
    const parsed = (await response.json()) as BodyShape;
    const message = parsed.choices?.[0]?.message;
    const totalMs = now() - started;
    return {
      totalMs,
      ttftMs: Number.NaN,
      // vLLM spells the reasoning field `reasoning`; the gateway, like SGLang, `reasoning_content`.
      content: `${message?.reasoning_content ?? message?.reasoning ?? ''}${message?.content ?? ''}`,
      reply: message?.content ?? '',
      completedAt: Date.now(),
    };
  }
  if (!response.body) throw new Error(`${url}: empty stream`);
  const decoder = new TextDecoder();
  let buffer = '';
  let content = '';
  let reply = '';
  let ttftMs = Number.NaN;
  let done = false;
  for await (const bytes of response.body) {
    buffer += decoder.decode(bytes as Uint8Array, { stream: true });
    let cut = buffer.indexOf('\n\n');
    while (cut >= 0) {
      const event = buffer.slice(0, cut);
      buffer = buffer.slice(cut + 2);
      cut = buffer.indexOf('\n\n');
      for (const line of event.split('\n')) {
        if (!line.startsWith('data:')) continue;
        const data = line.slice(5).trim();
        if (data === '[DONE]') {
          done = true;
          continue;
        }
        const chunk = JSON.parse(data) as ChunkShape;
        if (chunk.error) throw new Error(`${url}: stream error ${JSON.stringify(chunk.error)}`);
        const delta = chunk.choices?.[0]?.delta;
        const text = `${delta?.reasoning_content ?? delta?.reasoning ?? ''}${delta?.content ?? ''}`;
        if (text && Number.isNaN(ttftMs)) ttftMs = now() - started;
        content += text;
        reply += delta?.content ?? '';
      }
    }
  }
  if (!done) throw new Error(`${url}: stream ended without [DONE]`);
  return { totalMs: now() - started, ttftMs, content, reply, completedAt: Date.now() };
}

/** One request of a lane: where, with what body and headers. */
export interface PlannedChat {
  url: string;
  body: Record<string, unknown>;
  headers: Record<string, string>;
  /**
   * Names the conversation the request belongs to in its lane: its assistant messages are replaced, in order,
   * by the replies the lane received for that conversation's earlier requests, as a real client sends them
   * back (absent: the body goes as planned).
   */
  conversation?: string;
}

/** Runs the lanes concurrently, each lane's requests one after another; each lane's timings in its order. */
export function runChatLanes(lanes: readonly PlannedChat[][]): Promise<ChatTiming[][]> {
  return Promise.all(
    lanes.map(async (lane) => {
      const timings: ChatTiming[] = [];
      const replies = new Map<string, string[]>();
      for (const chat of lane) {
        if (chat.conversation === undefined) {
          timings.push(await timedChat(chat.url, chat.body, chat.headers));
          continue;
        }
        const received = replies.get(chat.conversation) ?? [];
        replies.set(chat.conversation, received);
        const timing = await timedChat(chat.url, withReplies(chat.body, received), chat.headers);
        received.push(timing.reply);
        timings.push(timing);
      }
      return timings;
    }),
  );
}

/** The body with its assistant messages' contents replaced, in order, by `replies` (those beyond kept). */
function withReplies(body: Record<string, unknown>, replies: readonly string[]): Record<string, unknown> {
  let next = 0;
  const messages = (body.messages as Record<string, unknown>[]).map((message) =>
    message.role === 'assistant' && next < replies.length
      ? { ...message, content: replies[next++] }
      : message,
  );
  return { ...body, messages };
}

/** A conversation of `turn` user messages (the assistant answered all but the last), as a client resends it. */
export function packingConversation(turn: number): Record<string, string>[] {
  const messages: Record<string, string>[] = [{ role: 'system', content: 'You are a concise assistant.' }];
  for (let i = 1; i <= turn; i++) {
    messages.push({ role: 'user', content: `Question ${i}: what should I pack for a day trip?` });
    if (i < turn) messages.push({ role: 'assistant', content: 'A water bottle and a map.' });
  }
  return messages;
}

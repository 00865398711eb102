import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A FAKE judge: an OpenAI-compatible chat endpoint that votes by a fixed rule, standing in for a judge LLM
 * that cannot run on a test machine. It reads the next state out of the prompt the project sends:
 * - a next state containing "thanks" → \boxed{1} (and a hint for the hint judge);
 * - containing "wrong" → \boxed{-1};
 * - anything else → \boxed{0} (neutral; the hint judge says -1).
 * `failFirst` makes its first N calls answer 500, to exercise retries. `delayMs` holds every answer that
 * long, so a test can catch scoring in flight (`pending` counts calls received and not yet answered).
 */
export interface FakeJudge {
  url: string;
  calls: number;
  /** Calls received whose answer is still held back by `delayMs`. */
  pending: number;
  close(): Promise<void>;
}

export interface FakeJudgeOptions {
  failFirst?: number;
  failAll?: boolean;
  /** Milliseconds each answer waits before it is sent (default 0). */
  delayMs?: number;
  /** Address to listen on (default 127.0.0.1; 0.0.0.0 lets containers reach it). */
  host?: string;
  /**
   * Answers a call in place of the rule (for a misbehaving judge): `content` is sent as the reply's text,
   * `raw` as the whole HTTP body (status 200). Undefined: the rule answers.
   */
  answer?: (call: {
    system: string;
    user: string;
    /** The URLs of the user message's `image_url` parts (a judge that reads images is sent them). */
    images: string[];
  }) => { content: string | null } | { raw: string } | undefined;
}

export async function startFakeJudge(options: FakeJudgeOptions = {}): Promise<FakeJudge> {
  const state = { calls: 0, pending: 0 };
  const server: Server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk) => {
      body += chunk;
    });
    req.on('end', async () => {
      if (options.delayMs) {
        state.pending++;
        await new Promise((resolve) => setTimeout(resolve, options.delayMs));
        state.pending--;
      }
      state.calls++;
      if (options.failAll || state.calls <= (options.failFirst ?? 0)) {
        res.writeHead(500, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { message: 'fake judge failure', type: 'server_error' } }));
        return;
      }
      type Part = { type: string; text?: string; image_url?: { url: string } };
      const request = JSON.parse(body) as { messages: { role: string; content: string | Part[] }[] };
      const textOf = (content: string | Part[] | undefined) =>
        typeof content === 'string' ? content : (content ?? []).map((part) => part.text ?? '').join('');
      const system = textOf(request.messages[0]?.content);
      const last = request.messages.at(-1)?.content;
      const user = textOf(last);
      const images = Array.isArray(last)
        ? last.flatMap((part) => (part.image_url ? [part.image_url.url] : []))
        : [];
      const nextState = user.split(/\n## [^\n]*\[role: [a-z]+\]\n/)[1] ?? user;
      const isHintJudge = system.includes('HINT_START');
      const answered = options.answer?.({ system, user, images });
      if (answered !== undefined && 'raw' in answered) {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(answered.raw);
        return;
      }
      let content: string | null;
      if (answered !== undefined) content = answered.content;
      else if (/thanks/i.test(nextState)) {
        content = isHintJudge
          ? 'Useful. \\boxed{1} [HINT_START]Answer warmly and mention the weather explicitly.[HINT_END]'
          : 'The user is satisfied. \\boxed{1}';
      } else if (/wrong/i.test(nextState)) {
        content = isHintJudge ? 'Nothing to learn. \\boxed{-1}' : 'The user corrects it. \\boxed{-1}';
      } else {
        content = isHintJudge ? 'No hint. \\boxed{-1}' : 'Unclear. \\boxed{0}';
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          id: `fake-${state.calls}`,
          object: 'chat.completion',
          created: 0,
          model: 'fake-judge',
          choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: 'stop' }],
          usage: { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 },
        }),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, options.host ?? '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    get calls() {
      return state.calls;
    },
    get pending() {
      return state.pending;
    },
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        // Held answers to callers that died keep sockets open; close() must not wait for them.
        if (options.delayMs) server.closeAllConnections();
      }),
  };
}

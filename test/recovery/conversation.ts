// A client conversation driven through the gateway with the `openai` package, the way an agent talks to it:
// the whole history every turn, an explicit X-Session-Id, streaming or not. It keeps the one fact the crash
// tests count on: which turns were ACKNOWLEDGED (a non-streaming 200 with a body, or a stream that ended
// with `data: [DONE]`), and what each acknowledged turn should become under the rule the fake judge votes by.

import OpenAI from 'openai';
import type { ChatCompletion, ChatCompletionMessageParam } from 'openai/resources/chat/completions';
import { LOCAL_TENANT, scopedSessionId } from '../../core/tenant.js';
import type { SampleExclusionReason } from '../../core/types.js';
import type { SampleStore } from '../../store/sample-store.js';
import { latestTurnAt, recordedTurns } from '../support/turn-lookup.js';

/** What one acknowledged turn must end up as in the sample store (method `rl`, fake judge). */
export type ExpectedOutcome = { sample: 1 | -1 } | { exclusion: SampleExclusionReason };

export interface SendOptions {
  stream: boolean;
  /** Sends `X-Session-Done: true`: the turn is the session's last. */
  done?: boolean;
  maxTokens?: number;
  /** Engine extension passed through by the gateway: generate `maxTokens` tokens, however the model likes. */
  ignoreEos?: boolean;
  /** Streaming only: called after each content chunk with the number received so far. */
  onChunk?: (chunks: number) => Promise<void> | void;
}

export type Attempt =
  /** `at`: when it was acknowledged (epoch ms); `ms`: how long the request took. */
  | { acknowledged: true; content: string; at: number; ms: number }
  | {
      acknowledged: false;
      error: string;
      chunks: number;
      sawDone: boolean;
      /** The gateway's HTTP status when it refused the request outright (502, 503, ...). */
      status?: number;
    };

/** A user message's effect on the turn before it, by the fake judge's rule (test/support/fake-judge-server.ts). */
function outcomeOfNextState(text: string): ExpectedOutcome {
  if (/thanks/i.test(text)) return { sample: 1 };
  if (/wrong/i.test(text)) return { sample: -1 };
  return { exclusion: 'neutral-score' };
}

export class Conversation {
  private readonly history: ChatCompletionMessageParam[] = [];
  /** Acknowledged turns in order: position, the reply received, and the user text that opened the turn. */
  private readonly turns: { position: number; content: string; userText: string; done: boolean }[] = [];
  private seed = 0;

  constructor(
    readonly sessionId: string,
    private openai: OpenAI,
    /** Where the gateway records turns: acknowledged turns' ids are looked up there (see `sampleIds`). */
    private readonly store: SampleStore,
    /** The tenant of the key the client sends (an open gateway's is `local`): the store scopes the id by it. */
    private readonly tenant = LOCAL_TENANT,
  ) {}

  /** Talks through another gateway from now on (the same session: the store is shared). */
  use(openai: OpenAI): void {
    this.openai = openai;
  }

  /** How many turns were acknowledged. */
  get acknowledgedCount(): number {
    return this.turns.length;
  }

  /**
   * Sample ids of the acknowledged turns, in order. A turn's id is a digest of what was said, which a client
   * does not see, so it is looked up in the store: call this while the store is up (the tests that take it
   * down look up after it is back; an acknowledged turn is in it either way).
   */
  async sampleIds(): Promise<string[]> {
    const records = await recordedTurns(this.store, scopedSessionId(this.tenant, this.sessionId));
    return this.turns.map(({ position, content }) => {
      const recorded = latestTurnAt(records, position, content);
      if (!recorded) throw new Error(`${this.sessionId}: acknowledged turn ${position} is not in the store`);
      return recorded.sampleId;
    });
  }

  /**
   * What each acknowledged turn should become: the next user message decides (thanks → +1, wrong → -1,
   * anything else → excluded as neutral); the last turn of an ended session has no next state.
   */
  async expectations(): Promise<Map<string, ExpectedOutcome>> {
    const ids = await this.sampleIds();
    const expected = new Map<string, ExpectedOutcome>();
    this.turns.forEach((turn, index) => {
      const id = ids[index] as string;
      const next = this.turns[index + 1];
      if (next) expected.set(id, outcomeOfNextState(next.userText));
      else if (turn.done) expected.set(id, { exclusion: 'no-next-state' });
    });
    return expected;
  }

  /** Acknowledged turns whose outcome is not decided yet (the session's latest turn, still open). */
  async open(): Promise<string[]> {
    const last = this.turns.at(-1);
    return last && !last.done ? [(await this.sampleIds()).at(-1) as string] : [];
  }

  /** Sends `text` (retrying the very same request) until the turn is acknowledged or `timeoutMs` passes. */
  async send(text: string, options: SendOptions, timeoutMs = 90_000): Promise<{ attempts: Attempt[] }> {
    const attempts: Attempt[] = [];
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const attempt = await this.attempt(text, options);
      attempts.push(attempt);
      if (attempt.acknowledged) return { attempts };
      if (Date.now() > deadline) {
        throw new Error(
          `${this.sessionId}: "${text}" not acknowledged after ${attempts.length} attempts: ${attempt.error}`,
        );
      }
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
  }

  /** One request: the history plus `text`. Only an acknowledged answer joins the history. */
  async attempt(text: string, options: SendOptions): Promise<Attempt> {
    const messages: ChatCompletionMessageParam[] = [...this.history, { role: 'user', content: text }];
    const turn = 1 + this.history.filter((m) => m.role === 'assistant').length;
    const headers: Record<string, string> = { 'X-Session-Id': this.sessionId };
    if (options.done) headers['X-Session-Done'] = 'true';
    // A fixed seed per turn: a retry asks for the same reply (it is the same turn to the gateway anyway).
    const body = {
      model: 'tiny',
      messages,
      max_tokens: options.maxTokens ?? 12,
      temperature: 1,
      seed: this.seed + turn,
      ...(options.ignoreEos && { ignore_eos: true }),
    };
    let result: { content: string } | { error: string; chunks: number; sawDone: boolean; status?: number };
    const started = Date.now();
    try {
      result = options.stream
        ? await this.streamed(body, headers, options.onChunk)
        : await this.plain(body, headers);
    } catch (error) {
      const status = error instanceof OpenAI.APIError ? error.status : undefined;
      result = { error: (error as Error).message, chunks: 0, sawDone: false, ...(status && { status }) };
    }
    if ('error' in result) return { acknowledged: false, ...result };
    this.history.push({ role: 'user', content: text }, { role: 'assistant', content: result.content });
    // Acknowledged means recorded; its id is looked up later, as the store may be down right now.
    this.turns.push({ position: turn, content: result.content, userText: text, done: options.done ?? false });
    const at = Date.now();
    return { acknowledged: true, content: result.content, at, ms: at - started };
  }

  private async plain(
    body: Record<string, unknown>,
    headers: Record<string, string>,
  ): Promise<{ content: string } | { error: string; chunks: number; sawDone: boolean }> {
    const completion = (await this.openai.chat.completions.create(
      body as unknown as OpenAI.Chat.ChatCompletionCreateParamsNonStreaming,
      { headers },
    )) as ChatCompletion;
    const content = completion.choices[0]?.message?.content;
    if (typeof content !== 'string') return { error: 'no message content', chunks: 0, sawDone: false };
    return { content };
  }

  /**
   * Streams through the SDK but reads the raw server-sent events, because the acknowledgement is the
   * `[DONE]` line itself: the SDK's iterator also ends quietly on a stream that just stops.
   */
  private async streamed(
    body: Record<string, unknown>,
    headers: Record<string, string>,
    onChunk?: (chunks: number) => Promise<void> | void,
  ): Promise<{ content: string } | { error: string; chunks: number; sawDone: boolean }> {
    const response = await this.openai.chat.completions
      .create({ ...body, stream: true } as unknown as OpenAI.Chat.ChatCompletionCreateParamsStreaming, {
        headers,
      })
      .asResponse();
    if (!response.body) return { error: 'no body', chunks: 0, sawDone: false };
    const decoder = new TextDecoder();
    let buffered = '';
    let content = '';
    let chunks = 0;
    let sawDone = false;
    try {
      for await (const bytes of response.body as unknown as AsyncIterable<Uint8Array>) {
        buffered += decoder.decode(bytes, { stream: true });
        let end = buffered.indexOf('\n\n');
        while (end >= 0) {
          const event = buffered.slice(0, end);
          buffered = buffered.slice(end + 2);
          end = buffered.indexOf('\n\n');
          const data = event
            .split('\n')
            .filter((line) => line.startsWith('data:'))
            .map((line) => line.slice(5).trim())
            .join('\n');
          if (data === '') continue;
          if (data === '[DONE]') {
            sawDone = true;
            continue;
          }
          const parsed = JSON.parse(data) as {
            error?: { message?: string };
            choices?: { delta?: { content?: string | null } }[];
          };
          if (parsed.error) return { error: `stream error: ${parsed.error.message}`, chunks, sawDone };
          const piece = parsed.choices?.[0]?.delta?.content;
          if (piece) {
            content += piece;
            chunks++;
            await onChunk?.(chunks);
          }
        }
      }
    } catch (error) {
      return { error: `stream broke: ${(error as Error).message}`, chunks, sawDone };
    }
    return sawDone ? { content } : { error: 'stream ended without [DONE]', chunks, sawDone };
  }
}

// Collects what a main turn records from the engine's own output: the prompt token ids, the sampled token
// ids and their log-probs (never re-tokenised), the text, reasoning and tool calls, the finish reason and
// the weight version. Fed either one full response or the stream's chunks in order, in the canonical shape
// (chat-schema.ts) the engine's adapter translated them into.

import { parsePolicyVersion } from '../core/policy-version.js';
import type { RecordedResponse } from '../core/turn-record.js';
import type { EngineChatChunk, EngineChatResponse, ToolCallDelta } from './chat-schema.js';

export interface CapturedTurn {
  model: string;
  response: RecordedResponse;
  promptIds: number[];
  responseIds: number[];
  responseLogProbs: number[];
  /** Null when the engine did not report a weight version; the caller asks the engine for it. */
  policyVersion: number | null;
  finishReason: string;
}

export type CaptureResult = { ok: true; turn: CapturedTurn } | { ok: false; problem: string };

interface ToolCallAccumulator {
  id: string | null;
  type: string;
  name: string;
  arguments: string;
}

export class TurnCapture {
  private model = '';
  private content = '';
  private reasoning: string | null = null;
  private readonly toolCalls = new Map<number, ToolCallAccumulator>();
  private completeToolCalls: unknown[] | null = null;
  private promptIds: number[] | null = null;
  private readonly responseIds: number[] = [];
  /** Whether the engine sent token ids at all (an engine without the extension sends none). */
  private sawTokenIds = false;
  private readonly logProbs: number[] = [];
  private missingLogProbs = false;
  private weightVersion: unknown;
  private finishReason: string | null = null;

  /** A capture of a whole (non-streaming) response. */
  static fromResponse(body: EngineChatResponse): TurnCapture {
    const capture = new TurnCapture();
    const choice = body.choices[0];
    capture.model = body.model ?? '';
    capture.weightVersion = body.metadata?.weight_version ?? choice?.meta_info?.weight_version;
    if (!choice) return capture;
    capture.content = choice.message.content ?? '';
    capture.reasoning = choice.message.reasoning_content ?? null;
    capture.completeToolCalls = choice.message.tool_calls?.length ? [...choice.message.tool_calls] : null;
    capture.promptIds = choice.prompt_token_ids ?? null;
    if (choice.token_ids) {
      capture.sawTokenIds = true;
      for (const id of choice.token_ids) capture.responseIds.push(id);
    }
    capture.addLogProbs(choice.logprobs?.content);
    capture.finishReason = choice.finish_reason ?? null;
    return capture;
  }

  /** Adds one streamed chunk (chunks must come in the order the engine sent them). */
  addChunk(chunk: EngineChatChunk): void {
    if (chunk.model) this.model = chunk.model;
    const version = chunk.metadata?.weight_version;
    if (version !== undefined && version !== null) this.weightVersion = version;
    for (const choice of chunk.choices) {
      if ((choice.index ?? 0) !== 0) continue;
      if (choice.prompt_token_ids) this.promptIds = [...choice.prompt_token_ids];
      if (choice.token_ids) {
        this.sawTokenIds = true;
        for (const id of choice.token_ids) this.responseIds.push(id);
      }
      this.addLogProbs(choice.logprobs?.content);
      const metaVersion = choice.meta_info?.weight_version;
      if (metaVersion !== undefined && metaVersion !== null) this.weightVersion ??= metaVersion;
      if (choice.finish_reason) this.finishReason = choice.finish_reason;
      const delta = choice.delta;
      if (!delta) continue;
      if (delta.content) this.content += delta.content;
      if (delta.reasoning_content) this.reasoning = (this.reasoning ?? '') + delta.reasoning_content;
      delta.tool_calls?.forEach((call, position) => {
        this.addToolCall(call, position);
      });
    }
  }

  /** The turn, or why it cannot be recorded exactly (an engine that does not return token ids). */
  finish(): CaptureResult {
    if (this.promptIds === null || this.promptIds.length === 0)
      return { ok: false, problem: 'the engine returned no prompt token ids (return_prompt_token_ids)' };
    if (!this.sawTokenIds)
      return { ok: false, problem: 'the engine returned no response token ids (return_token_ids)' };
    if (this.missingLogProbs || this.logProbs.length !== this.responseIds.length)
      return {
        ok: false,
        problem: `the engine returned ${this.logProbs.length} log-probs for ${this.responseIds.length} tokens`,
      };
    return {
      ok: true,
      turn: {
        model: this.model,
        response: { content: this.content, reasoningContent: this.reasoning, toolCalls: this.toolCallList() },
        promptIds: this.promptIds,
        responseIds: this.responseIds,
        responseLogProbs: this.logProbs,
        policyVersion: parsePolicyVersion(this.weightVersion),
        finishReason: this.finishReason ?? 'stop',
      },
    };
  }

  private addLogProbs(items: readonly { logprob: number | null }[] | null | undefined): void {
    for (const item of items ?? []) {
      if (item.logprob === null) this.missingLogProbs = true;
      else this.logProbs.push(item.logprob);
    }
  }

  /** SGLang streams a call as pieces sharing an `index`: name first, then arguments in fragments. */
  private addToolCall(call: ToolCallDelta, position: number): void {
    const index = call.index ?? position;
    const current = this.toolCalls.get(index) ?? { id: null, type: 'function', name: '', arguments: '' };
    if (call.id) current.id = call.id;
    if (call.type) current.type = call.type;
    if (call.function?.name) current.name = call.function.name;
    const args = call.function?.arguments;
    if (typeof args === 'string') current.arguments += args;
    else if (args !== undefined && args !== null) current.arguments += JSON.stringify(args);
    this.toolCalls.set(index, current);
  }

  private toolCallList(): unknown[] | null {
    if (this.completeToolCalls) return this.completeToolCalls;
    if (this.toolCalls.size === 0) return null;
    return [...this.toolCalls.entries()]
      .sort(([a], [b]) => a - b)
      .map(([, call]) => ({
        ...(call.id ? { id: call.id } : {}),
        type: call.type,
        function: { name: call.name, arguments: call.arguments },
      }));
  }
}

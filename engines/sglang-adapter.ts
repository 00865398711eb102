// SGLang's HTTP contract, as SGLang 0.5.23 spells it (sglang/srt/entrypoints/http_server.py, openai/
// protocol.py, serving_chat.py; docs/engines.md):
// - exact tokens through `return_input_ids_in_sglext` / `return_output_ids_in_sglext`: SGLang refuses
//   `return_prompt_token_ids` / `return_token_ids` / `return_meta_info` on streams (serving_chat.py
//   `_convert_to_internal_request`), while the sglext ids come in a last chunk (`choices: []`, `sglext:
//   {input_ids, output_ids}`) or on the response, and the log-probs per chunk. Its tool-call and reasoning
//   parsers run, so the client sees what SGLang's OpenAI route gives. SGLang flushes a step's log-probs on a
//   chunk of their own only when a tool-call or reasoning parser is active (serving_chat.py
//   `_generate_stream_content`), so `servingProblems` asks for one;
// - the weight version: on non-streaming responses (`metadata.weight_version`, with `weight_versions` spans
//   when an update landed mid-generation); streams carry none, so the caller reads `/model_info` around them;
// - render / tokenise with `/v1/tokenize`, teacher prefill with the native `/generate`, weights with
//   `/update_weights_from_disk` (requests in flight finish, new ones wait), LoRA with `/load_lora_adapter`.

import { z } from 'zod';
import {
  alignTeacherLogprobs,
  alignTeacherTopLogprobs,
  teacherLogprobStartLen,
} from '../core/teacher-context.js';
import { TurnCapture } from './chat-capture.js';
import { engineChatResponseSchema } from './chat-schema.js';
import type {
  ChatBodyOptions,
  EngineAdapter,
  EngineFeatures,
  EngineKind,
  EngineModelInfo,
  ExactChatRequest,
  ExactCompletion,
  LoraAdapterRequest,
  PrefillRequest,
  PrefillResult,
  PromptInput,
  PublishRequest,
} from './engine-adapter.js';
import { EngineFeatureError } from './engine-adapter.js';
import { EngineHttp, EngineHttpError, type EngineHttpOptions, isRecord } from './engine-http.js';

type Json = Record<string, unknown>;

const weightVersion = z.union([z.string(), z.number()]).transform(String);

const modelInfoSchema = z.looseObject({
  model_path: z.string().nullable().optional(),
  served_model_name: z.string().nullable().optional(),
  weight_version: weightVersion,
  max_context_length: z.number().int().nullable().optional(),
  tool_call_parser: z.string().nullable().optional(),
  reasoning_parser: z.string().nullable().optional(),
  // The reference engine's: "original" when it reports every log-prob at temperature 1.
  logprob_semantics: z.string().optional(),
});

const tokenizeSchema = z.looseObject({ tokens: z.array(z.number().int().min(0)) });

const logprobEntry = z
  .tuple([z.number().nullable(), z.number().int(), z.string().nullable().optional()])
  .rest(z.unknown())
  .nullable();
const generateSchema = z.looseObject({
  meta_info: z.looseObject({
    input_token_logprobs: z.array(logprobEntry).optional(),
    input_top_logprobs: z.array(z.array(logprobEntry).nullable()).optional(),
  }),
});

const updateSchema = z.looseObject({ success: z.boolean(), message: z.string().optional() });

/** The project's exact-token names a client may send; each engine spells them its own way. */
export const CLIENT_TOKEN_FLAGS = ['return_prompt_token_ids', 'return_token_ids'] as const;

/** Removes the client's exact-token flags; says whether it asked for any. */
export function takeClientTokenFlags(body: Json): boolean {
  let asked = false;
  for (const flag of CLIENT_TOKEN_FLAGS) {
    if (body[flag] === true) asked = true;
    delete body[flag];
  }
  return asked;
}

export class SglangAdapter implements EngineAdapter {
  readonly kind: EngineKind = 'sglang';
  readonly features: EngineFeatures = {
    weightVersionInResponse: { stream: false, nonStream: true },
    loraAdapters: true,
    // SGLang 0.5.23 scores prompt tokens untempered: layers/logprob_processor.py (InputLogprobProcessor) takes
    // log_softmax of the raw logits for input positions; neither the request's temperature nor
    // `temp_scaled_logprobs` nor SGLANG_RETURN_ORIGINAL_LOGPROB is read there (they touch sampled tokens only).
    prefillTemperature: false,
    // SGLang 0.5.23's Qwen-VL processor (multimodal/processors/qwen_vl.py) matches a run of already expanded
    // `<|image_pad|>` between vision_start and vision_end as one image, so ids from a captured turn and their
    // `image_data` make the same inputs again.
    prefillImages: true,
    chatFromTokenIds: true,
  };
  protected readonly http: EngineHttp;

  constructor(url: string, options: EngineHttpOptions = {}) {
    this.http = new EngineHttp(url, options);
  }

  get url(): string {
    return this.http.baseUrl;
  }

  health(timeoutMs = 2_000): Promise<boolean> {
    return this.http.answers('/health', timeoutMs);
  }

  async modelInfo(signal?: AbortSignal): Promise<EngineModelInfo> {
    const info = await this.rawModelInfo(signal);
    return {
      modelPath: info.model_path ?? null,
      servedModelName: info.served_model_name ?? null,
      weightVersion: info.weight_version,
      maxContextLength: info.max_context_length ?? null,
    };
  }

  async weightVersion(signal?: AbortSignal): Promise<string> {
    return (await this.rawModelInfo(signal)).weight_version;
  }

  listModels(signal?: AbortSignal): Promise<unknown> {
    return this.http.json('GET', '/v1/models', undefined, { signal });
  }

  async servingProblems(signal?: AbortSignal): Promise<string[]> {
    const info = await this.rawModelInfo(signal);
    if (info.tool_call_parser || info.reasoning_parser) return [];
    return [
      'SGLang runs without --tool-call-parser and --reasoning-parser: a streamed step whose text is empty ' +
        '(the end-of-turn token) then loses its log-prob, and streaming main turns cannot be recorded. Start ' +
        'it with e.g. --tool-call-parser qwen25 --reasoning-parser qwen3 (docs/engines.md).',
    ];
  }

  chatBody(body: Readonly<Json>, options: ChatBodyOptions): Json {
    const out: Json = { ...body };
    const asked = takeClientTokenFlags(out);
    if (options.capture || asked) {
      out.return_input_ids_in_sglext = true;
      out.return_output_ids_in_sglext = true;
    }
    if (options.capture) out.logprobs = true;
    return out;
  }

  chatCompletions(body: Json, signal?: AbortSignal) {
    return this.http.send('POST', '/v1/chat/completions', body, { signal });
  }

  canonicalResponse(body: Json): Json {
    const out: Json = { ...body };
    const ids = takeSglextIds(out);
    const choices = Array.isArray(out.choices) ? out.choices.map((c) => ({ ...(c as Json) })) : [];
    const first = choices[0];
    if (first) {
      // SGLang 0.5.23's name for the sampled ids when `return_token_ids` was asked for.
      if (Array.isArray(first.response_token_ids)) {
        first.token_ids = first.response_token_ids;
        delete first.response_token_ids;
      }
      if (ids.input) first.prompt_token_ids = ids.input;
      if (ids.output) first.token_ids = ids.output;
    }
    out.choices = choices;
    const metadata = isRecord(out.metadata) ? { ...out.metadata } : null;
    if (metadata) {
      const oldest = oldestSpanVersion(metadata.weight_versions);
      if (oldest !== null) metadata.weight_version = oldest;
      out.metadata = metadata;
    }
    return out;
  }

  canonicalChunk(chunk: Json): Json {
    const out: Json = { ...chunk };
    const ids = takeSglextIds(out);
    if (ids.input || ids.output) {
      const choices = Array.isArray(out.choices) ? [...out.choices] : [];
      choices.push({
        index: 0,
        delta: {},
        logprobs: null,
        finish_reason: null,
        ...(ids.input && { prompt_token_ids: ids.input }),
        ...(ids.output && { token_ids: ids.output }),
      });
      out.choices = choices;
    }
    return out;
  }

  async complete(request: ExactChatRequest, signal?: AbortSignal): Promise<ExactCompletion> {
    const body = this.chatBody(exactChatBody(request, true), { capture: true });
    const response = await this.http.send('POST', '/v1/chat/completions', body, {
      signal,
      ...(request.headers && { headers: request.headers }),
    });
    const raw = await this.http.readJson(response, 'POST /v1/chat/completions', signal);
    return exactCompletionOf(isRecord(raw) ? this.canonicalResponse(raw) : raw, null);
  }

  async renderPrompt(input: PromptInput, signal?: AbortSignal): Promise<number[]> {
    // Without add_generation_prompt SGLang renders the messages as for a chat completion (protocol.py
    // TokenizeRequest), which is what the prompt of a completion is.
    const body: Json = {
      ...(input.model !== undefined && { model: input.model }),
      messages: input.messages,
      ...(input.tools && input.tools.length > 0 && { tools: input.tools }),
      ...(input.chatTemplateKwargs && { chat_template_kwargs: input.chatTemplateKwargs }),
    };
    return tokenizeSchema.parse(await this.http.json('POST', '/v1/tokenize', body, { signal })).tokens;
  }

  async tokenize(text: string, signal?: AbortSignal): Promise<number[]> {
    const body = { prompt: text, add_special_tokens: false };
    return tokenizeSchema.parse(await this.http.json('POST', '/v1/tokenize', body, { signal })).tokens;
  }

  async prefillLogprobs(request: PrefillRequest, signal?: AbortSignal): Promise<PrefillResult> {
    const temperature = request.temperature ?? 1;
    if (temperature !== 1) await this.checkPrefillTemperature(temperature, signal);
    const total = request.inputIds.length;
    // One position early, so SGLang gives the first response token its log-prob (core/teacher-context.ts).
    const start = teacherLogprobStartLen(total, request.responseLength);
    const body = {
      input_ids: request.inputIds,
      sampling_params: { temperature, max_new_tokens: 0 },
      return_logprob: true,
      logprob_start_len: start,
      ...(request.topK > 0 && { top_logprobs_num: request.topK }),
      ...(request.images && request.images.length > 0 && { image_data: request.images }),
    };
    const { meta_info } = generateSchema.parse(await this.http.json('POST', '/generate', body, { signal }));
    const logprobs = alignTeacherLogprobs(
      meta_info.input_token_logprobs ?? [],
      request.responseLength,
      start,
      total,
    );
    const topK =
      request.topK > 0
        ? alignTeacherTopLogprobs(
            meta_info.input_top_logprobs ?? [],
            request.topK,
            request.responseLength,
            start,
            total,
          )
        : null;
    return { logprobs, topK };
  }

  async pause(signal?: AbortSignal): Promise<void> {
    // in_place: requests in flight stay where they are and go on after continue; none is aborted.
    await this.http.json('POST', '/pause_generation', { mode: 'in_place' }, { signal });
  }

  async resume(signal?: AbortSignal): Promise<void> {
    await this.http.json('POST', '/continue_generation', {}, { signal });
  }

  async publishWeights(request: PublishRequest, signal?: AbortSignal): Promise<void> {
    const body = { model_path: request.path, weight_version: request.version };
    // A failed load is a 400 {success: false, message} (a client_error: the same folder fails again).
    const answer = await this.http.json('POST', '/update_weights_from_disk', body, { signal });
    const result = updateSchema.parse(answer);
    if (!result.success)
      throw new EngineHttpError(
        'client_error',
        `update_weights_from_disk failed: ${result.message ?? 'no message'}`,
        200,
        JSON.stringify(answer).slice(0, 1000),
      );
  }

  async loadLoraAdapter(request: LoraAdapterRequest, signal?: AbortSignal): Promise<void> {
    await this.loadAdapter({ lora_name: request.name, lora_path: request.path }, signal);
  }

  protected async loadAdapter(body: Record<string, unknown>, signal?: AbortSignal): Promise<void> {
    const result = updateSchema.parse(await this.http.json('POST', '/load_lora_adapter', body, { signal }));
    if (!result.success)
      throw new EngineHttpError('client_error', `load_lora_adapter failed: ${result.message ?? ''}`, 200);
  }

  async abort(requestId: string, signal?: AbortSignal): Promise<void> {
    await this.http.json('POST', '/abort_request', { rid: requestId }, { signal });
  }

  /**
   * Throws unless the engine scores a prefill at `temperature`: SGLang would answer at temperature 1 whatever
   * the request says, so asking it for another is refused rather than answered wrong.
   */
  protected async checkPrefillTemperature(temperature: number, _signal?: AbortSignal): Promise<void> {
    throw new EngineFeatureError(
      `SGLang scores prompt tokens at temperature 1 only (asked for ${temperature}); use a reference-engine teacher`,
    );
  }

  protected async rawModelInfo(signal?: AbortSignal) {
    return modelInfoSchema.parse(await this.http.json('GET', '/model_info', undefined, { signal }));
  }
}

/** The OpenAI body of an exact chat request; `withTokenIds` keeps a pre-tokenised prompt and request id. */
export function exactChatBody(request: ExactChatRequest, withTokenIds: boolean): Json {
  return {
    ...(request.model !== undefined && { model: request.model }),
    messages: request.messages,
    ...(request.tools && request.tools.length > 0 && { tools: request.tools }),
    ...(request.chatTemplateKwargs && { chat_template_kwargs: request.chatTemplateKwargs }),
    max_tokens: request.maxTokens,
    temperature: request.temperature,
    ...(request.topP !== undefined && { top_p: request.topP }),
    ...(request.seed !== undefined && { seed: request.seed }),
    ...(withTokenIds && request.inputIds && { input_ids: request.inputIds }),
    ...(withTokenIds && request.requestId && { rid: request.requestId }),
  };
}

/** An exact completion from a canonical response; `weightVersion` when the caller read it itself. */
export function exactCompletionOf(canonical: unknown, weightVersion: string | null): ExactCompletion {
  const parsed = engineChatResponseSchema.safeParse(canonical);
  if (!parsed.success)
    throw new EngineHttpError(
      'bad_response',
      `the engine returned a malformed chat completion: ${parsed.error.issues[0]?.message ?? ''}`,
    );
  const captured = TurnCapture.fromResponse(parsed.data).finish();
  if (!captured.ok) throw new EngineHttpError('bad_response', captured.problem);
  const { turn } = captured;
  const version = parsed.data.metadata?.weight_version;
  return {
    promptIds: turn.promptIds,
    responseIds: turn.responseIds,
    logprobs: turn.responseLogProbs,
    message: {
      content: turn.response.content,
      ...(turn.response.reasoningContent !== null && { reasoning_content: turn.response.reasoningContent }),
      ...(turn.response.toolCalls !== null && { tool_calls: turn.response.toolCalls }),
    },
    finishReason: turn.finishReason,
    weightVersion: version !== undefined && version !== null ? String(version) : weightVersion,
  };
}

/** Takes the ids out of a response's `sglext` (dropping it when nothing else is left in it). */
function takeSglextIds(body: Json): { input: number[] | null; output: number[] | null } {
  const ext = body.sglext;
  if (!isRecord(ext)) return { input: null, output: null };
  const input = Array.isArray(ext.input_ids) ? (ext.input_ids as number[]) : null;
  const outputs = Array.isArray(ext.output_ids) ? ext.output_ids : null;
  const output = outputs && Array.isArray(outputs[0]) ? (outputs[0] as number[]) : null;
  const rest: Json = { ...ext };
  delete rest.input_ids;
  delete rest.output_ids;
  if (Object.keys(rest).length > 0) body.sglext = rest;
  else delete body.sglext;
  return { input, output };
}

/** SGLang's `weight_versions`: `[version, start, end]` spans in order; the first one is the oldest. */
function oldestSpanVersion(spans: unknown): string | null {
  if (!Array.isArray(spans) || spans.length === 0) return null;
  const first = spans[0];
  if (Array.isArray(first) && first[0] !== undefined) return String(first[0]);
  if (isRecord(first) && first.version !== undefined) return String(first.version);
  return null;
}

// vLLM's HTTP contract (vLLM 0.32, its OpenAI server; docs/engines.md):
// - exact tokens with `return_token_ids: true` (vLLM's spelling) streaming and not: `prompt_token_ids` at
//   the top of the response (or of the first chunk), `token_ids` on each choice (or chunk), log-probs per
//   token with `logprobs: true`. Its reasoning field is `reasoning`, which the canonical shape calls
//   `reasoning_content`. Log-probs are those the server was started to report: the project starts it with
//   `--logprobs-mode processed_logprobs` (after temperature and top-k/top-p, as sampled);
// - no weight version on any answer: it is read from `/weight_info` around a generation (the older wins);
// - the control routes exist with `VLLM_SERVER_DEV_MODE=1`: publishing a folder is `POST /pause?mode=wait`
//   (requests in flight finish, new ones wait), `/collective_rpc` `reload_weights` with the folder,
//   `/update_weight_version`, `/resume`; LoRA adapters load through `/v1/load_lora_adapter` when the server
//   runs with `--enable-lora` and `VLLM_ALLOW_RUNTIME_LORA_UPDATING=True`;
// - teacher prefill through `/v1/completions` with `prompt_logprobs`: vLLM scores prompt tokens at
//   temperature 1 only, in every `--logprobs-mode` (config/model.py: "for prompt_logprobs, processed_* and
//   raw_* yield identical results"; v1/worker gpu_model_runner.py `_get_prompt_logprobs_dict` takes
//   log_softmax of the raw logits), and the mode is the server's, not a request's; a chat completion cannot
//   start from token ids.

import { z } from 'zod';
import { olderWeightVersion } from '../core/policy-version.js';
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
import { exactChatBody, exactCompletionOf, takeClientTokenFlags } from './sglang-adapter.js';

type Json = Record<string, unknown>;

const weightInfoSchema = z.looseObject({
  weight_version: z.union([z.string(), z.number()]).transform(String),
});
const modelsSchema = z.looseObject({
  data: z
    .array(
      z.looseObject({
        id: z.string(),
        root: z.string().nullable().optional(),
        max_model_len: z.number().int().nullable().optional(),
      }),
    )
    .min(1),
});
const tokenizeSchema = z.looseObject({ tokens: z.array(z.number().int().min(0)) });
const promptLogprob = z.looseObject({ logprob: z.number(), rank: z.number().int().nullable().optional() });
const completionSchema = z.looseObject({
  choices: z
    .array(
      z.looseObject({ prompt_logprobs: z.array(z.record(z.string(), promptLogprob).nullable()).nullable() }),
    )
    .min(1),
});

export class VllmAdapter implements EngineAdapter {
  readonly kind: EngineKind = 'vllm';
  readonly features: EngineFeatures = {
    weightVersionInResponse: { stream: false, nonStream: false },
    loraAdapters: true,
    prefillTemperature: false,
    // Its prompt log-probs come from `/v1/completions`, whose prompt is token ids or text, never images.
    prefillImages: false,
    chatFromTokenIds: false,
  };
  private readonly http: EngineHttp;
  private servedModel: string | null = null;

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
    const [models, version] = await Promise.all([this.models(signal), this.weightVersion(signal)]);
    const card = models.data[0];
    return {
      modelPath: card?.root ?? null,
      servedModelName: card?.id ?? null,
      weightVersion: version,
      maxContextLength: card?.max_model_len ?? null,
    };
  }

  async weightVersion(signal?: AbortSignal): Promise<string> {
    return weightInfoSchema.parse(await this.http.json('GET', '/weight_info', undefined, { signal }))
      .weight_version;
  }

  listModels(signal?: AbortSignal): Promise<unknown> {
    return this.http.json('GET', '/v1/models', undefined, { signal });
  }

  async servingProblems(signal?: AbortSignal): Promise<string[]> {
    try {
      await this.weightVersion(signal);
      return [];
    } catch (error) {
      if (error instanceof EngineHttpError && error.status === 404)
        return [
          'vLLM runs without VLLM_SERVER_DEV_MODE=1: it has no /weight_info, /pause or /collective_rpc, so turns ' +
            'cannot name their weight version and new weights cannot be published (docs/engines.md).',
        ];
      throw error;
    }
  }

  chatBody(body: Readonly<Json>, options: ChatBodyOptions): Json {
    const out: Json = { ...body };
    const asked = takeClientTokenFlags(out);
    if (options.capture || asked) out.return_token_ids = true;
    if (options.capture) out.logprobs = true;
    return out;
  }

  chatCompletions(body: Json, signal?: AbortSignal) {
    return this.http.send('POST', '/v1/chat/completions', body, { signal });
  }

  canonicalResponse(body: Json): Json {
    return canonical(body, 'message');
  }

  canonicalChunk(chunk: Json): Json {
    return canonical(chunk, 'delta');
  }

  async complete(request: ExactChatRequest, signal?: AbortSignal): Promise<ExactCompletion> {
    if (request.inputIds)
      throw new EngineFeatureError('vLLM cannot start a chat completion from token ids; send messages');
    const body = this.chatBody(
      { ...exactChatBody(request, false), ...(request.requestId && { request_id: request.requestId }) },
      { capture: true },
    );
    const before = await this.weightVersion(signal);
    const response = await this.http.send('POST', '/v1/chat/completions', body, {
      signal,
      ...(request.headers && { headers: request.headers }),
    });
    const raw = await this.http.readJson(response, 'POST /v1/chat/completions', signal);
    const after = await this.weightVersion(signal);
    return exactCompletionOf(
      isRecord(raw) ? this.canonicalResponse(raw) : raw,
      olderWeightVersion(before, after),
    );
  }

  async renderPrompt(input: PromptInput, signal?: AbortSignal): Promise<number[]> {
    const body: Json = {
      ...(input.model !== undefined && { model: input.model }),
      messages: input.messages,
      ...(input.tools && input.tools.length > 0 && { tools: input.tools }),
      ...(input.chatTemplateKwargs && { chat_template_kwargs: input.chatTemplateKwargs }),
      add_generation_prompt: true,
    };
    return tokenizeSchema.parse(await this.http.json('POST', '/tokenize', body, { signal })).tokens;
  }

  async tokenize(text: string, signal?: AbortSignal): Promise<number[]> {
    const body = { prompt: text, add_special_tokens: false };
    return tokenizeSchema.parse(await this.http.json('POST', '/tokenize', body, { signal })).tokens;
  }

  async prefillLogprobs(request: PrefillRequest, signal?: AbortSignal): Promise<PrefillResult> {
    if (request.temperature !== undefined && request.temperature !== 1)
      throw new EngineFeatureError(
        `vLLM scores prompt tokens at temperature 1 only (asked for ${request.temperature}); use a reference-engine teacher`,
      );
    if (request.images && request.images.length > 0)
      throw new EngineFeatureError(
        'vLLM scores prompt tokens through /v1/completions, which takes no images; use a reference-engine or SGLang teacher',
      );
    const body = {
      model: await this.modelName(signal),
      prompt: request.inputIds,
      max_tokens: 1,
      temperature: 0,
      prompt_logprobs: request.topK,
    };
    const parsed = completionSchema.parse(await this.http.json('POST', '/v1/completions', body, { signal }));
    const rows = parsed.choices[0]?.prompt_logprobs ?? [];
    const total = request.inputIds.length;
    if (rows.length !== total)
      throw new EngineHttpError(
        'bad_response',
        `vLLM returned ${rows.length} prompt log-probs for ${total} tokens`,
      );
    const logprobs: number[] = [];
    const topLogProbs: number[][] = [];
    const topIds: number[][] = [];
    for (let position = total - request.responseLength; position < total; position++) {
      // Entry `position` holds log p(token at position | tokens before it), keyed by token id.
      const row = rows[position];
      const token = request.inputIds[position];
      const entry = row && token !== undefined ? row[String(token)] : undefined;
      if (!row || !entry)
        throw new EngineHttpError(
          'bad_response',
          `vLLM returned no log-prob for the token at position ${position}`,
        );
      logprobs.push(entry.logprob);
      if (request.topK > 0) {
        const ranked = Object.entries(row)
          .filter(([, item]) => item.rank !== null && item.rank !== undefined && item.rank <= request.topK)
          .sort(([, a], [, b]) => (a.rank ?? 0) - (b.rank ?? 0));
        if (ranked.length !== request.topK)
          throw new EngineHttpError(
            'bad_response',
            `vLLM returned ${ranked.length} top log-probs at position ${position}, not ${request.topK}`,
          );
        topLogProbs.push(ranked.map(([, item]) => item.logprob));
        topIds.push(ranked.map(([id]) => Number(id)));
      }
    }
    return { logprobs, topK: request.topK > 0 ? { logProbs: topLogProbs, tokenIds: topIds } : null };
  }

  async pause(signal?: AbortSignal): Promise<void> {
    // keep: requests in flight are frozen and go on after /resume; new ones wait.
    await this.http.json('POST', '/pause', undefined, { signal, query: { mode: 'keep' } });
  }

  async resume(signal?: AbortSignal): Promise<void> {
    await this.http.json('POST', '/resume', undefined, { signal });
  }

  async publishWeights(request: PublishRequest, signal?: AbortSignal): Promise<void> {
    // wait: generations in flight finish on the weights they started with, so every response comes from one
    // version; requests arriving meanwhile wait for /resume.
    await this.http.json('POST', '/pause', undefined, { signal, query: { mode: 'wait' } });
    try {
      await this.http.json(
        'POST',
        '/collective_rpc',
        { method: 'reload_weights', kwargs: { weights_path: request.path } },
        { signal },
      );
      await this.http.json('POST', '/update_weight_version', { new_version: request.version }, { signal });
    } finally {
      // Serving goes on (with the old weights if the load failed).
      await this.http.json('POST', '/resume', undefined, {});
    }
  }

  async loadLoraAdapter(request: LoraAdapterRequest, signal?: AbortSignal): Promise<void> {
    const body = { lora_name: request.name, lora_path: request.path, load_inplace: true };
    await this.http.send('POST', '/v1/load_lora_adapter', body, { signal }).then((r) => r.body?.cancel());
  }

  async abort(requestId: string, signal?: AbortSignal): Promise<void> {
    await this.http.json('POST', '/abort_requests', { request_ids: [requestId] }, { signal });
  }

  private async models(signal?: AbortSignal) {
    return modelsSchema.parse(await this.listModels(signal));
  }

  private async modelName(signal?: AbortSignal): Promise<string> {
    this.servedModel ??= (await this.models(signal)).data[0]?.id ?? null;
    if (this.servedModel === null) throw new EngineHttpError('bad_response', 'vLLM lists no model');
    return this.servedModel;
  }
}

/** vLLM's answer in the canonical shape: prompt ids onto the first choice, `reasoning` as `reasoning_content`. */
function canonical(body: Json, messageKey: 'message' | 'delta'): Json {
  const out: Json = { ...body };
  const promptIds = Array.isArray(out.prompt_token_ids) ? out.prompt_token_ids : null;
  delete out.prompt_token_ids;
  delete out.prompt_text;
  const choices = Array.isArray(out.choices) ? out.choices : [];
  out.choices = choices.map((raw, position) => {
    const choice: Json = { ...(raw as Json) };
    if (position === 0 && promptIds) choice.prompt_token_ids = promptIds;
    const message = isRecord(choice[messageKey]) ? { ...(choice[messageKey] as Json) } : null;
    if (message && 'reasoning' in message) {
      if (typeof message.reasoning === 'string') message.reasoning_content = message.reasoning;
      delete message.reasoning;
      choice[messageKey] = message;
    }
    return choice;
  });
  if (promptIds && choices.length === 0)
    out.choices = [
      { index: 0, [messageKey]: {}, logprobs: null, finish_reason: null, prompt_token_ids: promptIds },
    ];
  return out;
}

// What the project needs from a policy engine, whichever engine it is: one interface, one implementation per
// kind (sglang-adapter.ts, vllm-adapter.ts, reference-adapter.ts). The gateway, Track 2's policy steps, the
// teacher log-probs of scoring and weight publishing all go through it, so each engine's HTTP contract lives
// in exactly one place. docs/engines.md says what each kind reports and why each call is spelled as it is.
//
// Chat completions are relayed to clients as the engine sends them, after one translation: every adapter
// turns its engine's answer into the project's canonical shape (engines/chat-schema.ts: the prompt and
// sampled ids on the choice, `reasoning_content`, `metadata.weight_version`), which is what the capture reads
// and what clients see.

import type { Response } from 'undici';
import type { EngineKind } from '../core/engine-kinds.js';
import type { TeacherTopK } from '../core/types.js';

export type { EngineKind };

export interface EngineModelInfo {
  /** The model folder (or hub id) the engine serves. */
  modelPath: string | null;
  /** The name the engine answers to in `model`. */
  servedModelName: string | null;
  /** The weight version it serves now (SGLang and vLLM start at "default"). */
  weightVersion: string;
  maxContextLength: number | null;
}

export interface EngineFeatures {
  /** Whether a chat completion names the weight version that produced it (else it is asked around the call). */
  weightVersionInResponse: { stream: boolean; nonStream: boolean };
  /** Whether the engine loads LoRA adapters at run time (`loadLoraAdapter`). */
  loraAdapters: boolean;
  /** Whether `prefillLogprobs` can score at a temperature other than 1. */
  prefillTemperature: boolean;
  /** Whether `prefillLogprobs` takes a prompt's images (a vision-language teacher scoring an image turn). */
  prefillImages: boolean;
  /** Whether a chat completion can start from a pre-tokenised prompt with the engine's own output parsing. */
  chatFromTokenIds: boolean;
}

/** The prompt of a chat turn, rendered with the engine's own chat template. */
export interface PromptInput {
  messages: readonly unknown[];
  tools?: readonly unknown[] | null;
  chatTemplateKwargs?: Record<string, unknown> | null;
  model?: string;
}

/** A non-streaming chat completion whose exact tokens the caller keeps (Track 2 policy steps). */
export interface ExactChatRequest extends PromptInput {
  maxTokens: number;
  temperature: number;
  topP?: number;
  seed?: number;
  /** The prompt as token ids (a truncated rendering of `messages`); the messages still guide output parsing. */
  inputIds?: number[];
  /** The engine-side request id, so `abort(requestId)` can stop it. */
  requestId?: string;
  /** Extra headers (a gateway policy's turn type and bearer key). */
  headers?: Record<string, string>;
}

export interface ExactCompletion {
  promptIds: number[];
  responseIds: number[];
  /** One per response token: log p(token) as the engine sampled it. */
  logprobs: number[];
  message: { content: string; reasoning_content?: string | null; tool_calls?: unknown[] | null };
  finishReason: string;
  /** The weight version that produced it, or null when the engine could not say. */
  weightVersion: string | null;
}

/** Teacher log-probs of a response under a prompt: one prefill of `inputIds` = prompt ++ response. */
export interface PrefillRequest {
  inputIds: number[];
  /** The last `responseLength` ids are the response whose log-probs are wanted. */
  responseLength: number;
  /** Top-K log-probs per response position too (0: none). */
  topK: number;
  /** Temperature of the distribution scored (default 1). */
  temperature?: number;
  /** The prompt's images as data URLs, in order; the ids already hold each image's pad tokens. */
  images?: readonly string[];
}

export interface PrefillResult {
  /** log p(response[i] | prompt, response[<i]) for every response token. */
  logprobs: number[];
  topK: TeacherTopK | null;
}

export interface PublishRequest {
  /** A Hugging Face model folder the engine can read (same path on the engine's machine). */
  path: string;
  /** The weight version it becomes (the policy version, as text). */
  version: string;
}

export interface LoraAdapterRequest {
  name: string;
  /** The PEFT adapter folder (adapter_config.json and its weights), on the engine's machine. */
  path: string;
  /** The adapter's weight version, as text (the reference engine names it on answers it serves). */
  version?: string;
}

/** A LoRA adapter the engine serves, from its `GET /v1/models` (`parent` set, `root` its folder). */
export interface LoadedAdapter {
  name: string;
  path: string;
}

export interface ChatBodyOptions {
  /** A main turn: ask for the exact prompt ids, sampled ids and log-probs. */
  capture: boolean;
}

export interface EngineAdapter {
  readonly kind: EngineKind;
  /** Base URL, without `/v1`. */
  readonly url: string;
  readonly features: EngineFeatures;

  /** Whether the engine answers its health check. */
  health(timeoutMs?: number): Promise<boolean>;
  modelInfo(signal?: AbortSignal): Promise<EngineModelInfo>;
  weightVersion(signal?: AbortSignal): Promise<string>;
  /** The engine's own `GET /v1/models` answer (the gateway serves it as it is). */
  listModels(signal?: AbortSignal): Promise<unknown>;
  /** What is wrong with how the engine was started for this project (empty when nothing is). */
  servingProblems(signal?: AbortSignal): Promise<string[]>;

  /**
   * The engine's spelling of a client's chat body: the exact-token extensions the client asked for (the
   * project's names, `return_prompt_token_ids` / `return_token_ids`) and, for a captured turn, those the
   * capture needs.
   */
  chatBody(body: Readonly<Record<string, unknown>>, options: ChatBodyOptions): Record<string, unknown>;
  /** POST the chat completion; resolves with the 2xx response, its body (JSON or SSE) not yet read. */
  chatCompletions(body: Record<string, unknown>, signal?: AbortSignal): Promise<Response>;
  /** A whole response in the canonical shape. */
  canonicalResponse(body: Record<string, unknown>): Record<string, unknown>;
  /** One stream chunk in the canonical shape. */
  canonicalChunk(chunk: Record<string, unknown>): Record<string, unknown>;

  /** A non-streaming chat completion with exact tokens. */
  complete(request: ExactChatRequest, signal?: AbortSignal): Promise<ExactCompletion>;
  /** The prompt ids of `input` with a generation prompt, as a chat completion would see them. */
  renderPrompt(input: PromptInput, signal?: AbortSignal): Promise<number[]>;
  /** Plain text to ids, without special tokens. */
  tokenize(text: string, signal?: AbortSignal): Promise<number[]>;
  prefillLogprobs(request: PrefillRequest, signal?: AbortSignal): Promise<PrefillResult>;

  /** Holds new generations (requests wait); generations in flight finish first. */
  pause(signal?: AbortSignal): Promise<void>;
  resume(signal?: AbortSignal): Promise<void>;
  /** Serves the weights in `path` as `version`; streams in flight complete, new ones wait for the swap. */
  publishWeights(request: PublishRequest, signal?: AbortSignal): Promise<void>;
  /** Loads a LoRA adapter under `name` (only where `features.loraAdapters`). */
  loadLoraAdapter(request: LoraAdapterRequest, signal?: AbortSignal): Promise<void>;
  /** Stops the generation with this request id (a no-op when it already ended). */
  abort(requestId: string, signal?: AbortSignal): Promise<void>;
}

/** Thrown for an operation the engine kind does not have. */
export class EngineFeatureError extends Error {
  override name = 'EngineFeatureError';
}

// One policy step of a rollout: rebuild the transcript from the sample store, ask the policy for the next
// message with exact tokens, record the step (tokens, log-probs, the assistant message, the parsed action)
// under `<rolloutId>:<step>`, and return a small summary. Recorded once: a retried step returns the record
// instead of sampling again.
//
// engine mode: the engine's adapter (engines/) renders the messages and tools with the engine's own chat
// template; a prompt over budget is cut head 30% + "[OMITTED MIDDLE]" + tail on those token ids (by whole
// messages on an engine that cannot start a chat from token ids, vLLM); the completion returns the sampled
// ids and log-probs, and the engine parses tool calls. gateway mode: the messages go through the gateway as
// side turns (served, never recorded as Track 1 turns), asking for the gateway's exact-token fields;
// truncation is by whole messages with an estimated size. chat mode: a plain OpenAI-compatible endpoint, text
// only (the step records no token ids: the rollout is scored, never trained), truncated like gateway mode.

import { ApplicationFailure, Context } from '@temporalio/activity';
import { limitCallsPerTurn, parseErrorObservation, parsePolicyAction } from '../core/action-parsing.js';
import type { ChatMessage } from '../core/chat-messages.js';
import {
  OMITTED_MIDDLE,
  truncateMessagesHeadTail,
  truncateTokensHeadTail,
} from '../core/context-truncation.js';
import { fnv1a64Hex } from '../core/fnv1a64.js';
import { logprobTemperature } from '../core/logprob-temperature.js';
import { parsePolicyVersion } from '../core/policy-version.js';
import type { PolicySettings } from '../core/rollout-settings.js';
import { rolloutSampleId } from '../core/sample-id.js';
import type { SampleImageRef } from '../core/types.js';
import {
  type EngineAdapter,
  EngineFeatureError,
  type ExactChatRequest,
  type ExactCompletion,
} from '../engines/engine-adapter.js';
import { createEngineAdapter } from '../engines/engine-adapters.js';
import { EngineHttp, EngineHttpError } from '../engines/engine-http.js';
import { plainChatCompletion } from '../engines/plain-chat-policy.js';
import { exactCompletionOf } from '../engines/sglang-adapter.js';
import { keepDataUrlImage } from '../store/image-blobs.js';
import type { SampleStore } from '../store/sample-store.js';
import type { EpisodeProgress } from '../workflows/agentic-signals.js';
import { type RolloutStepRecord, readTranscript, rolloutKeys } from './rollout-records.js';

export interface PolicyStepInput {
  rolloutId: string;
  step: number;
  policy: PolicySettings;
  contextBudgetTokens: number;
}

export interface PolicyStepResult {
  sampleId: string;
  kind: 'tools' | 'final' | 'invalid';
  calls: number;
  /** The answer text when the policy stopped calling tools. */
  finalAnswer: string | null;
  error: string | null;
  finishReason: string;
  policyVersion: number;
  promptTokens: number;
  responseTokens: number;
  truncated: boolean;
}

export interface PolicyDependencies {
  store: SampleStore;
  /** Called while a step runs (with each heartbeat): the env host renews the rollout's lease here. */
  keepAlive?: (rolloutId: string) => void;
  /** Bearer key for a gateway or chat policy; held by the worker so it never enters a workflow history. */
  policyApiKey?: string;
  /** Headers of calls to an engine policy (the engine token, security/engine-token.ts); held by the worker too. */
  engineHeaders?: Record<string, string>;
}

type Truncation = { originalTokens: number | null; omittedMessages: number };

/** A request the policy refused (4xx other than 408/429) or cannot do will fail again: do not retry it. */
function classify(error: unknown): never {
  if (error instanceof EngineHttpError && error.permanent)
    throw ApplicationFailure.nonRetryable(error.message, 'PolicyRejected');
  if (error instanceof EngineHttpError && error.kind === 'bad_response')
    throw ApplicationFailure.nonRetryable(
      `the policy did not return prompt token ids, token ids and one log-prob per token: ${error.message}`,
      'PolicyMissingTokens',
    );
  if (error instanceof EngineFeatureError)
    throw ApplicationFailure.nonRetryable(error.message, 'PolicyRejected');
  throw error;
}

/** A per-step seed: the run's seed and the sample id, so retries repeat and rollouts differ. */
export function stepSeed(baseSeed: number, sampleId: string): number {
  return (baseSeed + Number.parseInt(fnv1a64Hex(sampleId).slice(0, 12), 16)) % 2 ** 48;
}

function currentContext(): Context | null {
  try {
    return Context.current();
  } catch {
    return null;
  }
}

/** What a rollout's activity heartbeats: its rollout, and (inside an episode's loop) where the loop is. */
export interface RolloutHeartbeat {
  rolloutId: string;
  progress?: EpisodeProgress;
}

/**
 * How long an activity runs before its first heartbeat. Each heartbeat is a write in the Temporal server, and a
 * container-free episode often ends sooner, so it sends none; a dead worker is still noticed within one
 * heartbeat timeout, as the first heartbeat comes well inside it.
 */
const FIRST_HEARTBEAT_MS = 1_000;

/**
 * Heartbeats (and keeps the lease) while `work` runs; passes the activity's cancellation signal on, and a
 * `report` whose progress goes out with the next heartbeat (at once after the first).
 */
export async function whileAlive<T>(
  rolloutId: string,
  keepAlive: ((rolloutId: string) => void) | undefined,
  work: (signal: AbortSignal, report: (progress: EpisodeProgress) => void) => Promise<T>,
): Promise<T> {
  const context = currentContext();
  const detail: RolloutHeartbeat = { rolloutId };
  let beating = false;
  const beat = () => {
    beating = true;
    context?.heartbeat(detail);
    keepAlive?.(rolloutId);
  };
  const report = (progress: EpisodeProgress) => {
    detail.progress = progress;
    if (beating) context?.heartbeat(detail);
  };
  const interval = Math.max(200, Math.floor((context?.info.heartbeatTimeoutMs || 30_000) / 3));
  let timer: ReturnType<typeof setInterval> | undefined;
  const first = setTimeout(
    () => {
      beat();
      timer = setInterval(beat, interval);
    },
    Math.min(interval, FIRST_HEARTBEAT_MS),
  );
  keepAlive?.(rolloutId);
  try {
    return await work(context?.cancellationSignal ?? new AbortController().signal, report);
  } finally {
    clearTimeout(first);
    clearInterval(timer);
  }
}

export function summariseStep(record: RolloutStepRecord): PolicyStepResult {
  const { action } = record;
  return {
    sampleId: record.sampleId,
    kind: action.kind,
    calls: action.kind === 'tools' ? action.calls.length : 0,
    finalAnswer: action.kind === 'final' ? action.text : null,
    error: action.kind === 'invalid' ? action.error : null,
    finishReason: record.finishReason,
    policyVersion: record.policyVersion,
    promptTokens: record.promptIds.length,
    responseTokens: record.responseIds.length,
    truncated: record.truncation !== null,
  };
}

export function createPolicyActivities(deps: PolicyDependencies) {
  const { store } = deps;
  const engines = new Map<string, EngineAdapter>();
  const markers = new Map<string, number[]>();

  function engineFor(policy: PolicySettings): EngineAdapter {
    const key = `${policy.engine} ${policy.url}`;
    let engine = engines.get(key);
    if (!engine) {
      engine = createEngineAdapter(policy.engine, policy.url, {
        timeoutMs: policy.timeoutMs,
        ...(deps.engineHeaders && { headers: deps.engineHeaders }),
      });
      engines.set(key, engine);
    }
    return engine;
  }

  async function omittedMarker(engine: EngineAdapter, signal: AbortSignal): Promise<number[]> {
    const key = `${engine.kind} ${engine.url}`;
    const known = markers.get(key);
    if (known) return known;
    const tokens = await engine.tokenize(OMITTED_MIDDLE, signal);
    markers.set(key, tokens);
    return tokens;
  }

  return {
    async policyStep(input: PolicyStepInput): Promise<PolicyStepResult> {
      const { rolloutId, step, policy } = input;
      const sampleId = rolloutSampleId(rolloutId, step);
      const key = rolloutKeys.step(rolloutId, step);
      const recorded = await store.get<RolloutStepRecord>(key);
      if (recorded) return summariseStep(recorded);

      const transcript = await readTranscript(store, rolloutId, step);
      const toolNames = transcript.tools.map((tool) => tool.function.name);
      const { sampling } = policy;
      const promptBudget = input.contextBudgetTokens - sampling.maxNewTokens;
      if (promptBudget < 64)
        throw ApplicationFailure.nonRetryable(
          `contextBudgetTokens ${input.contextBudgetTokens} leaves no room for a prompt after maxNewTokens ${sampling.maxNewTokens}`,
          'InvalidInput',
        );
      const request: ExactChatRequest = {
        ...(policy.model !== undefined && { model: policy.model }),
        messages: transcript.messages,
        ...(transcript.tools.length > 0 && { tools: transcript.tools }),
        maxTokens: sampling.maxNewTokens,
        temperature: sampling.temperature,
        topP: sampling.topP,
        seed: stepSeed(sampling.seed, sampleId),
      };

      const { completion, truncation, sent } = await whileAlive(rolloutId, deps.keepAlive, async (signal) => {
        try {
          if (policy.mode === 'chat') {
            // Text only: no ids to cut, so whole messages are left out by an estimated size.
            const cut = truncateMessagesHeadTail(transcript.messages, promptBudget);
            const completion = await plainChatCompletion(
              { url: policy.url, timeoutMs: policy.timeoutMs, apiKey: deps.policyApiKey },
              { ...request, messages: cut.messages },
              signal,
            );
            const truncation: Truncation | null =
              cut.omitted > 0 ? { originalTokens: null, omittedMessages: cut.omitted } : null;
            return { completion, truncation, sent: [] as readonly ChatMessage[] };
          }
          if (policy.mode === 'gateway') {
            const cut = truncateMessagesHeadTail(transcript.messages, promptBudget);
            const headers: Record<string, string> = { 'x-turn-type': 'side', 'x-session-id': rolloutId };
            if (deps.policyApiKey) headers.authorization = `Bearer ${deps.policyApiKey}`;
            const completion = await gatewayCompletion(
              policy,
              { ...request, messages: cut.messages },
              headers,
              signal,
            );
            const truncation: Truncation | null =
              cut.omitted > 0 ? { originalTokens: null, omittedMessages: cut.omitted } : null;
            return { completion, truncation, sent: cut.messages };
          }
          const engine = engineFor(policy);
          const rendered = await engine.renderPrompt(request, signal);
          let cut: Truncation | null = null;
          // The prompt is the rendering just made (on engines that start a chat from ids), so the ids recorded
          // are the ids generated from even if the template were to render differently on another call.
          let exact: ExactChatRequest = {
            ...request,
            requestId: sampleId,
            ...(engine.features.chatFromTokenIds && { inputIds: rendered }),
          };
          if (rendered.length > promptBudget) {
            // Cutting tokens could cut through an image's pad tokens: a prompt with images loses whole
            // messages instead, and is rendered again.
            const withImages = hasImageParts(transcript.messages);
            if (engine.features.chatFromTokenIds && !withImages) {
              const result = truncateTokensHeadTail(
                rendered,
                promptBudget,
                await omittedMarker(engine, signal),
              );
              exact = { ...exact, inputIds: result.ids };
              cut = { originalTokens: result.originalLength, omittedMessages: 0 };
            } else {
              const byMessages = truncateMessagesHeadTail(transcript.messages, promptBudget);
              exact = { ...exact, messages: byMessages.messages };
              if (engine.features.chatFromTokenIds)
                exact = { ...exact, inputIds: await engine.renderPrompt(exact, signal) };
              cut = { originalTokens: rendered.length, omittedMessages: byMessages.omitted };
            }
          }
          signal.addEventListener('abort', () => {
            // Stop the engine generating for a rollout nobody waits for any more.
            void engine.abort(sampleId).catch(() => undefined);
          });
          return {
            completion: await engine.complete(exact, signal),
            truncation: cut,
            sent: exact.messages as readonly ChatMessage[],
          };
        } catch (error) {
          return classify(error);
        }
      });

      const { promptIds, responseIds, logprobs } = completion;
      // The screenshots the prompt held, kept by digest: the step's sample trains with them.
      const images = await keepPromptImages(store, sent);
      const policyVersion = parsePolicyVersion(completion.weightVersion) ?? 0;
      const output = completion.message;
      const action = limitCallsPerTurn(parsePolicyAction(output, toolNames), transcript.maxCallsPerTurn);
      const message: ChatMessage = { role: 'assistant', content: output.content ?? '' };
      if (output.reasoning_content) message.reasoning_content = output.reasoning_content;
      if (output.tool_calls && output.tool_calls.length > 0) message.tool_calls = output.tool_calls;
      let errorMessages: ChatMessage[] = [];
      if (action.kind === 'invalid') {
        const text = parseErrorObservation(action.error);
        const ids = (output.tool_calls ?? []).map((call, i) => {
          const id = (call as { id?: unknown }).id;
          return typeof id === 'string' ? id : `call_${i}`;
        });
        // Tool calls that were returned get tool answers (templates pair them); markup left in text gets a user turn.
        errorMessages =
          ids.length > 0
            ? ids.map((id) => ({ role: 'tool', tool_call_id: id, content: text }))
            : [{ role: 'user', content: text }];
      }
      const record: RolloutStepRecord = {
        rolloutId,
        step,
        sampleId,
        promptIds,
        responseIds,
        responseLogProbs: logprobs,
        temperature: logprobTemperature(sampling.temperature),
        policyVersion,
        finishReason: completion.finishReason,
        message,
        action,
        errorMessages,
        truncation: truncation && { ...truncation, keptTokens: promptIds.length },
        ...(images.length > 0 && { images }),
        recordedAt: new Date().toISOString(),
      };
      // A concurrent duplicate (an activity retried while the first attempt still ran) keeps the first record.
      if (!(await store.putIfAbsent(key, record))) {
        const first = await store.get<RolloutStepRecord>(key);
        if (first) return summariseStep(first);
      }
      return summariseStep(record);
    },
  };
}

export type PolicyActivities = ReturnType<typeof createPolicyActivities>;

/**
 * One exact completion through a gateway policy: the gateway's client contract (the project's exact-token
 * names, answered in the canonical shape), as a side turn.
 */
async function gatewayCompletion(
  policy: PolicySettings,
  request: ExactChatRequest,
  headers: Record<string, string>,
  signal: AbortSignal,
): Promise<ExactCompletion> {
  const http = new EngineHttp(policy.url, { timeoutMs: policy.timeoutMs });
  const body = {
    ...(request.model !== undefined && { model: request.model }),
    messages: request.messages,
    ...(request.tools && { tools: request.tools }),
    max_tokens: request.maxTokens,
    temperature: request.temperature,
    ...(request.topP !== undefined && { top_p: request.topP }),
    ...(request.seed !== undefined && { seed: request.seed }),
    logprobs: true,
    return_prompt_token_ids: true,
    return_token_ids: true,
  };
  return exactCompletionOf(await http.json('POST', '/v1/chat/completions', body, { signal, headers }), null);
}

/** Whether any message carries an image part. */
function hasImageParts(messages: readonly ChatMessage[]): boolean {
  return messages.some(
    (message) => Array.isArray(message.content) && message.content.some((part) => part.type === 'image_url'),
  );
}

/** The prompt's `image_url` data URLs, in prompt order, stored by digest; their references. */
async function keepPromptImages(
  store: SampleStore,
  messages: readonly ChatMessage[],
): Promise<SampleImageRef[]> {
  const refs: SampleImageRef[] = [];
  for (const message of messages) {
    if (!Array.isArray(message.content)) continue;
    for (const part of message.content) {
      if (part.type !== 'image_url') continue;
      const value = (part as { image_url?: unknown }).image_url;
      const url = typeof value === 'string' ? value : (value as { url?: unknown } | undefined)?.url;
      const ref = typeof url === 'string' ? await keepDataUrlImage(store, url) : null;
      // An image that is no data URL cannot be kept: its pads then train without pixels, which the trainer refuses.
      if (ref) refs.push(ref);
    }
  }
  return refs;
}

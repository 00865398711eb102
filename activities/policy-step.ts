// One policy step of a rollout: rebuild the transcript from the sample store, ask the policy for the next
// message with exact tokens, record the step (tokens, log-probs, the assistant message, the parsed action)
// under `<rolloutId>:<step>`, and return a small summary. Recorded once: a retried step returns the record
// instead of sampling again.
//
// engine mode: `/tokenize` renders the messages and tools with the engine's own chat template; a prompt over
// budget is cut head 30% + "[OMITTED MIDDLE]" + tail on those token ids; `/v1/chat/completions` then
// generates from the exact `input_ids`, returns the sampled ids and log-probs, and parses tool calls.
// gateway mode: the messages go through the gateway as side turns (served, never recorded as Track 1
// turns), asking for the same token extensions; truncation is by whole messages with an estimated size.

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
import type { PolicySettings } from '../core/rollout-settings.js';
import { rolloutSampleId } from '../core/sample-id.js';
import { type RolloutStepRecord, readTranscript, rolloutKeys } from './rollout-records.js';
import type { SampleStore } from './sample-store.js';

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
  /** Bearer key for a gateway policy; held by the worker so it never enters a workflow history. */
  policyApiKey?: string;
}

interface EngineChoice {
  message?: { content?: string | null; reasoning_content?: string | null; tool_calls?: unknown[] | null };
  finish_reason?: string | null;
  prompt_token_ids?: number[];
  token_ids?: number[];
  logprobs?: { content?: { logprob: number }[] } | null;
}

interface EngineChatResponse {
  choices?: EngineChoice[];
  metadata?: { weight_version?: string | number | null } | null;
}

type Truncation = { originalTokens: number | null; omittedMessages: number };

class HttpError extends Error {
  constructor(
    message: string,
    readonly status: number,
  ) {
    super(message);
  }
}

async function postJson(
  url: string,
  body: unknown,
  headers: Record<string, string>,
  signal: AbortSignal,
): Promise<unknown> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
    signal,
  });
  const text = await response.text();
  if (!response.ok)
    throw new HttpError(`POST ${url}: HTTP ${response.status}: ${text.slice(0, 500)}`, response.status);
  return JSON.parse(text) as unknown;
}

/** A request the policy refused (4xx other than 408/429) will be refused again: do not retry it. */
function classify(error: unknown): never {
  if (
    error instanceof HttpError &&
    error.status >= 400 &&
    error.status < 500 &&
    ![408, 429].includes(error.status)
  )
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

/** Heartbeats (and keeps the lease) while `work` runs; passes the activity's cancellation signal on. */
export async function whileAlive<T>(
  rolloutId: string,
  keepAlive: ((rolloutId: string) => void) | undefined,
  work: (signal: AbortSignal) => Promise<T>,
): Promise<T> {
  const context = currentContext();
  const beat = () => {
    context?.heartbeat(rolloutId);
    keepAlive?.(rolloutId);
  };
  const interval = Math.max(200, Math.floor((context?.info.heartbeatTimeoutMs || 30_000) / 3));
  const timer = setInterval(beat, interval);
  beat();
  try {
    return await work(context?.cancellationSignal ?? new AbortController().signal);
  } finally {
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

function parseVersion(value: unknown): number | null {
  if (typeof value === 'number' && Number.isFinite(value)) return value;
  if (typeof value === 'string' && /^\d+$/.test(value.trim())) return Number(value.trim());
  return null;
}

export function createPolicyActivities(deps: PolicyDependencies) {
  const { store } = deps;
  const markers = new Map<string, number[]>();

  async function omittedMarker(url: string, signal: AbortSignal): Promise<number[]> {
    const known = markers.get(url);
    if (known) return known;
    const tokenized = (await postJson(
      `${url}/tokenize`,
      { prompt: OMITTED_MIDDLE, add_special_tokens: false },
      {},
      signal,
    )) as { tokens: number[] };
    markers.set(url, tokenized.tokens);
    return tokenized.tokens;
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
      const url = policy.url.replace(/\/+$/, '');
      const common = {
        ...(policy.model !== undefined && { model: policy.model }),
        ...(transcript.tools.length > 0 && { tools: transcript.tools }),
        max_tokens: sampling.maxNewTokens,
        temperature: sampling.temperature,
        top_p: sampling.topP,
        seed: stepSeed(sampling.seed, sampleId),
        logprobs: true,
        return_prompt_token_ids: true,
        return_token_ids: true,
      };

      const { response, truncation } = await whileAlive(rolloutId, deps.keepAlive, async (signal) => {
        try {
          if (policy.mode === 'gateway') {
            const cut = truncateMessagesHeadTail(transcript.messages, promptBudget);
            const headers: Record<string, string> = { 'x-turn-type': 'side', 'x-session-id': rolloutId };
            if (deps.policyApiKey) headers.authorization = `Bearer ${deps.policyApiKey}`;
            const body = { ...common, messages: cut.messages };
            const response = (await postJson(
              `${url}/v1/chat/completions`,
              body,
              headers,
              signal,
            )) as EngineChatResponse;
            const truncation: Truncation | null =
              cut.omitted > 0 ? { originalTokens: null, omittedMessages: cut.omitted } : null;
            return { response, truncation };
          }
          const rendered = (await postJson(
            `${url}/tokenize`,
            {
              messages: transcript.messages,
              ...(common.tools && { tools: common.tools }),
              add_generation_prompt: true,
            },
            {},
            signal,
          )) as { tokens: number[] };
          let inputIds = rendered.tokens;
          let cut: Truncation | null = null;
          if (inputIds.length > promptBudget) {
            const result = truncateTokensHeadTail(inputIds, promptBudget, await omittedMarker(url, signal));
            inputIds = result.ids;
            cut = { originalTokens: result.originalLength, omittedMessages: 0 };
          }
          const body = { ...common, messages: transcript.messages, input_ids: inputIds, rid: sampleId };
          signal.addEventListener('abort', () => {
            // Stop the engine generating for a rollout nobody waits for any more.
            void fetch(`${url}/abort_request`, {
              method: 'POST',
              headers: { 'content-type': 'application/json' },
              body: JSON.stringify({ rid: sampleId }),
            }).catch(() => undefined);
          });
          const response = (await postJson(
            `${url}/v1/chat/completions`,
            body,
            {},
            signal,
          )) as EngineChatResponse;
          return { response, truncation: cut };
        } catch (error) {
          return classify(error);
        }
      });

      const choice = response.choices?.[0];
      const responseIds = choice?.token_ids;
      const promptIds = choice?.prompt_token_ids;
      const logprobs = choice?.logprobs?.content?.map((entry) => entry.logprob);
      if (!choice || !responseIds || !promptIds || !logprobs || logprobs.length !== responseIds.length)
        throw ApplicationFailure.nonRetryable(
          'the policy did not return prompt token ids, token ids and one log-prob per token (SGLang extensions return_prompt_token_ids / return_token_ids / logprobs)',
          'PolicyMissingTokens',
        );
      const policyVersion = parseVersion(response.metadata?.weight_version) ?? 0;
      const output = choice.message ?? {};
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
        finishReason: choice.finish_reason ?? 'unknown',
        message,
        action,
        errorMessages,
        truncation: truncation && { ...truncation, keptTokens: promptIds.length },
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

import type { Client } from '@temporalio/client';
import type { ChatMessage } from '../../core/chat-messages.js';
import type { OpenClawConfig } from '../../core/config.js';
import type { TurnRef } from '../../core/types.js';
import {
  DurableTurnRecorder,
  type SessionSettings,
  sessionSettingsFromConfig,
} from '../../gateway/durable-turn-recorder.js';
import { sessionDelivery } from '../../gateway/outbox-delivery.js';
import { OutboxRelay } from '../../gateway/outbox-relay.js';
import type { SampleStore } from '../../store/sample-store.js';
import { sessionWorkflowId } from '../../temporal/workflow-ids.js';
import { type SessionInput, sessionDoneSignal } from '../../workflows/session-signals.js';
import type { EngineCalls } from './engine-calls.js';

interface EngineChatChoice {
  message: { content: string | null; reasoning_content?: string | null; tool_calls?: unknown[] | null };
  finish_reason: string;
  prompt_token_ids: number[];
  /** SGLang 0.5.23's name for the sampled ids, which the engine answers in strict mode. */
  response_token_ids: number[];
  logprobs: { content: { logprob: number }[] };
}

export function sessionInputFor(config: OpenClawConfig, sessionId: string): SessionInput {
  return { sessionId, ...sessionSettingsFromConfig(config) };
}

/**
 * Does what the gateway does for a main turn, without the HTTP front: asks the engine for a reply with exact
 * tokens, records it with the gateway's own recorder (the record and its outbox entry) and delivers the entry
 * with the gateway's relay (signal-with-start of its session workflow) before returning. Returns the reply's
 * message, as a client sends it back, and the turn's reference.
 */
export async function recordTurnDirectly(options: {
  engine: EngineCalls;
  store: SampleStore;
  client: Client;
  config: OpenClawConfig;
  taskQueue: string;
  sessionId: string;
  messages: ChatMessage[];
  seed: number;
  /** The sampling temperature the engine is asked for and the record keeps (default 1). */
  temperature?: number;
  /** Default: the config's session settings. */
  session?: SessionSettings;
  /** Default true. False leaves the turn's entry in the outbox, as a gateway that stopped before its relay ran. */
  deliver?: boolean;
}): Promise<{ message: ChatMessage; ref: TurnRef }> {
  const temperature = options.temperature ?? 1;
  const sampling = { temperature, top_p: 1, top_k: -1, min_p: 0, max_tokens: 8, seed: options.seed };
  const response = (await options.engine.request('POST', '/v1/chat/completions', {
    model: 'tiny',
    messages: options.messages,
    ...sampling,
    logprobs: true,
    return_prompt_token_ids: true,
    return_token_ids: true,
  })) as { choices: EngineChatChoice[] };
  const info = (await options.engine.modelInfo()) as { weight_version: string | number };
  const choice = response.choices[0];
  if (!choice) throw new Error('engine returned no choice');
  const recorder = new DurableTurnRecorder({
    store: options.store,
    session: options.session ?? sessionSettingsFromConfig(options.config),
    taskQueue: options.taskQueue,
  });
  const content = choice.message.content ?? '';
  const recorded = await recorder.record({
    sessionId: options.sessionId,
    model: 'tiny',
    messages: options.messages,
    tools: null,
    response: {
      content,
      reasoningContent: choice.message.reasoning_content ?? null,
      toolCalls: choice.message.tool_calls ?? null,
    },
    promptIds: choice.prompt_token_ids,
    responseIds: choice.response_token_ids,
    responseLogProbs: choice.logprobs.content.map((c) => c.logprob),
    policyVersion: Number(info.weight_version),
    finishReason: choice.finish_reason,
    sampling: { temperature, topP: 1, topK: null, minP: null, maxTokens: 8, seed: options.seed },
    chatTemplateKwargs: null,
  });
  if (options.deliver !== false) await deliverOutbox(options.store, options.client);
  return { message: { role: 'assistant', content }, ref: recorded.ref };
}

/** Runs a relay over the store's outbox until every entry in it is delivered. */
export async function deliverOutbox(store: SampleStore, client: Client): Promise<void> {
  const deliver = sessionDelivery(client);
  const relay = new OutboxRelay({ outbox: store.outbox, deliver, pollMs: 20 });
  relay.start();
  try {
    const deadline = Date.now() + 30_000;
    while ((await store.outbox.stats()).depth > 0) {
      if (Date.now() > deadline) throw new Error('the outbox was not delivered within 30 s');
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  } finally {
    await relay.stop();
  }
}

/** What `X-Session-Done: true` does at the gateway: the session settles its last turn now. */
export async function endSessionDirectly(options: {
  client: Client;
  config: OpenClawConfig;
  taskQueue: string;
  sessionId: string;
}): Promise<void> {
  await options.client.workflow.signalWithStart('sessionWorkflow', {
    workflowId: sessionWorkflowId(options.sessionId),
    taskQueue: options.taskQueue,
    args: [sessionInputFor(options.config, options.sessionId)],
    signal: sessionDoneSignal,
    signalArgs: [],
  });
}

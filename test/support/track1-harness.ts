import type { Client } from '@temporalio/client';
import type { SampleStore } from '../../activities/sample-store.js';
import type { ChatMessage } from '../../core/chat-messages.js';
import type { OpenClawConfig } from '../../core/config.js';
import { turnSampleId } from '../../core/sample-id.js';
import { type TurnRecord, turnRecordKey } from '../../core/turn-record.js';
import type { TurnRef } from '../../core/types.js';
import {
  type SessionInput,
  sessionDoneSignal,
  sessionWorkflowId,
  turnRecordedSignal,
} from '../../workflows/session-signals.js';
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
  return {
    sessionId,
    runId: config.runId,
    method: config.method,
    judgeVotes: config.judge.votes,
    idleTimeoutMs: config.session.idleTimeoutMs,
    continueAsNewAfterTurns: config.session.continueAsNewAfterTurns,
    heartbeatTimeoutMs: config.temporal.heartbeatTimeoutMs,
  };
}

/**
 * Does what the gateway's durable hand-off does, without the HTTP front: asks the engine for a reply with
 * exact tokens, stores the turn record and signals its session workflow. Returns the reply's message.
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
}): Promise<ChatMessage> {
  const response = (await options.engine.request('POST', '/v1/chat/completions', {
    model: 'tiny',
    messages: options.messages,
    max_tokens: 8,
    temperature: 1,
    seed: options.seed,
    logprobs: true,
    return_prompt_token_ids: true,
    return_token_ids: true,
  })) as { choices: EngineChatChoice[]; meta_info?: { weight_version?: string } };
  const info = (await options.engine.modelInfo()) as { weight_version: string | number };
  const choice = response.choices[0];
  if (!choice) throw new Error('engine returned no choice');
  const turn = options.messages.filter((m) => m.role === 'assistant').length + 1;
  const record: TurnRecord = {
    sessionId: options.sessionId,
    turn,
    sampleId: turnSampleId(options.sessionId, turn),
    requestHash: `${options.sessionId}-${turn}`,
    recordedAt: new Date().toISOString(),
    model: 'tiny',
    messages: options.messages,
    tools: null,
    response: {
      content: choice.message.content ?? '',
      reasoningContent: choice.message.reasoning_content ?? null,
      toolCalls: choice.message.tool_calls ?? null,
    },
    promptIds: choice.prompt_token_ids,
    responseIds: choice.response_token_ids,
    responseLogProbs: choice.logprobs.content.map((c) => c.logprob),
    policyVersion: Number(info.weight_version),
    finishReason: choice.finish_reason,
  };
  await options.store.put(turnRecordKey(options.sessionId, turn), record);
  const ref: TurnRef = {
    sessionId: options.sessionId,
    turn,
    sampleId: record.sampleId,
    policyVersion: record.policyVersion,
    kind: 'main',
  };
  await options.client.workflow.signalWithStart('sessionWorkflow', {
    workflowId: sessionWorkflowId(options.sessionId),
    taskQueue: options.taskQueue,
    args: [sessionInputFor(options.config, options.sessionId)],
    signal: turnRecordedSignal,
    signalArgs: [ref],
  });
  return { role: 'assistant', content: record.response.content };
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

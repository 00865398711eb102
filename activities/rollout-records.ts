// A rollout's durable state in the sample store, under `rollouts/<rolloutId>/...`. Every record is written
// once under a deterministic key, so any worker can rebuild the transcript after a restart, a retried step
// returns what was recorded instead of sampling or running a tool again, and a host that lost its container
// can replay the recorded tool calls into a new one.
//
//   rollouts/<id>/placement            where the sandbox was acquired (host, container)
//   rollouts/<id>/reset                the first messages and the tools
//   rollouts/<id>/steps/<k>            policy step k: exact tokens, the assistant message, the parsed action
//   rollouts/<id>/observations/<k>/<i> the result of tool call i of step k
//   rollouts/<id>/judge/<k>            step k's judge votes (optional)
//   rollouts/<id>/evaluation           the outcome reward
//   rollouts/<id>/released             the sandbox was released

import type { PolicyAction } from '../core/action-parsing.js';
import type { ChatMessage } from '../core/chat-messages.js';
import type { SampleImageRef } from '../core/types.js';
import type { ResetResult, ToolCallAction } from '../environments/environment.js';
import type { SampleStore } from '../store/sample-store.js';
import { storeKey } from '../store/sample-store.js';

export const rolloutKeys = {
  placement: (id: string) => storeKey('rollouts', id, 'placement'),
  reset: (id: string) => storeKey('rollouts', id, 'reset'),
  step: (id: string, step: number) => storeKey('rollouts', id, 'steps', step),
  observation: (id: string, step: number, call: number) =>
    storeKey('rollouts', id, 'observations', step, call),
  judge: (id: string, step: number) => storeKey('rollouts', id, 'judge', step),
  evaluation: (id: string) => storeKey('rollouts', id, 'evaluation'),
  released: (id: string) => storeKey('rollouts', id, 'released'),
};

/** The reset's result as recorded, with when it happened (the agent time limit counts from there). */
export interface ResetRecord extends ResetResult {
  /** Absent in records written before the time limit existed. */
  resetAt?: string;
}

export interface PlacementRecord {
  rolloutId: string;
  hostId: string;
  containerId: string | null;
  acquiredAt: string;
}

export interface RolloutStepRecord {
  rolloutId: string;
  step: number;
  /** `<rolloutId>:<step>`: the id the step's training sample is stored under. */
  sampleId: string;
  /** The prompt exactly as the engine saw it (after truncation). */
  promptIds: number[];
  responseIds: number[];
  responseLogProbs: number[];
  /** Temperature of those log-probs: the sampling temperature, 1 for greedy (absent in older records: 1). */
  temperature?: number;
  policyVersion: number;
  finishReason: string;
  /** The assistant message appended to the transcript. */
  message: ChatMessage;
  action: PolicyAction;
  /** For a parse error: the message(s) answering it in the transcript. */
  errorMessages: ChatMessage[];
  /**
   * Set when the prompt was cut to fit the context budget: the token count before (engine mode; null in
   * gateway mode, where whole messages are left out) and after.
   */
  truncation: { originalTokens: number | null; keptTokens: number; omittedMessages: number } | null;
  /** The prompt's images (screenshots) in prompt order, kept by digest; absent when it had none. */
  images?: SampleImageRef[];
  recordedAt: string;
}

export interface ObservationRecord {
  step: number;
  call: number;
  toolCallId: string;
  name: string;
  observation: string;
  /** Screenshots returned with the observation, as data URLs (gui kind). */
  images?: string[];
  done: boolean;
}

export interface EvaluationRecord {
  reward: number;
  detail: string;
  finalAnswer: string | null;
}

export interface JudgeRecord {
  score: number;
  votes: (number | null)[];
}

/** The steps recorded so far, in order (stops at the first missing one). */
export async function readSteps(
  store: SampleStore,
  rolloutId: string,
  before: number,
): Promise<RolloutStepRecord[]> {
  const steps: RolloutStepRecord[] = [];
  for (let k = 0; k < before; k++) {
    const record = await store.get<RolloutStepRecord>(rolloutKeys.step(rolloutId, k));
    if (!record) break;
    steps.push(record);
  }
  return steps;
}

/** The recorded observations of one step's tool calls (stops at the first missing one). */
export async function readObservations(
  store: SampleStore,
  rolloutId: string,
  step: RolloutStepRecord,
): Promise<ObservationRecord[]> {
  if (step.action.kind !== 'tools') return [];
  const out: ObservationRecord[] = [];
  for (let i = 0; i < step.action.calls.length; i++) {
    const record = await store.get<ObservationRecord>(rolloutKeys.observation(rolloutId, step.step, i));
    if (!record) break;
    out.push(record);
  }
  return out;
}

/** The tool message answering one call: its text, and its images as `image_url` parts when it has any. */
export function toolMessage(record: ObservationRecord): ChatMessage {
  const content: ChatMessage['content'] =
    record.images && record.images.length > 0
      ? [
          { type: 'text', text: record.observation },
          ...record.images.map((url) => ({ type: 'image_url', image_url: { url } })),
        ]
      : record.observation;
  return { role: 'tool', tool_call_id: record.toolCallId, name: record.name, content };
}

export interface Transcript {
  messages: ChatMessage[];
  tools: ResetResult['tools'];
  /** The most tool calls one turn may make (unset: no limit). */
  maxCallsPerTurn?: number;
  /** Every executed tool call with its observation, in order (what `EpisodeContext.history` holds). */
  history: { action: ToolCallAction; observation: string }[];
}

/** The conversation before step `step`: the reset messages, then each step's reply and what answered it. */
export async function readTranscript(
  store: SampleStore,
  rolloutId: string,
  step: number,
): Promise<Transcript> {
  const reset = await store.get<ResetResult>(rolloutKeys.reset(rolloutId));
  if (!reset) throw new Error(`rollout ${rolloutId} has no reset record`);
  const messages = [...reset.messages];
  const history: Transcript['history'] = [];
  for (const record of await readSteps(store, rolloutId, step)) {
    messages.push(record.message);
    if (record.action.kind === 'invalid') messages.push(...record.errorMessages);
    for (const observation of await readObservations(store, rolloutId, record)) {
      messages.push(toolMessage(observation));
      const call = record.action.kind === 'tools' ? record.action.calls[observation.call] : undefined;
      if (call) history.push({ action: call, observation: observation.observation });
    }
  }
  return { messages, tools: reset.tools, maxCallsPerTurn: reset.maxCallsPerTurn, history };
}

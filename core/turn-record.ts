// What the gateway stores for every main turn before its response completes: everything scoring needs,
// exact tokens included. Workflows never carry it; they carry its sample id and read it in activities.

import type { ChatMessage } from './chat-messages.js';
import { parseTurnSampleId } from './sample-id.js';
import type { TurnPointer } from './types.js';

export interface RecordedResponse {
  content: string;
  reasoningContent: string | null;
  toolCalls: unknown[] | null;
}

/**
 * The sampling parameters a response was drawn with, as the engine applied them. Training computes log-probs
 * at `temperature` (engines report log_softmax(logits / T)), so it must be the temperature actually used.
 */
export interface SamplingRecord {
  temperature: number;
  topP: number | null;
  topK: number | null;
  minP: number | null;
  maxTokens: number | null;
  seed: number | null;
  /**
   * The request fields that shaped the distribution in a way training does not replay (penalties, `logit_bias`,
   * `min_tokens`, a non-text `response_format`, a `tool_choice` of "required" or a named function, a grammar),
   * in request spelling; empty when the reply was drawn from log_softmax(logits / T) alone, absent in records
   * written before they were kept. Scoring excludes a turn that names any (docs/scoring.md).
   */
  constraints?: string[];
}

export interface TurnRecord {
  sessionId: string;
  /** 1-based position in the conversation: 1 + the assistant messages of the request. */
  turn: number;
  /** `<sessionId>:<turn>-<digest of prefix and response>` (core/sample-id.ts). */
  sampleId: string;
  /**
   * Chain hash of the request's normalised messages and tools (canonical JSON): the turn's identity. Turns with
   * the same prefix are siblings (a retry or a regenerate). Records written when turns were numbered have a
   * `requestHash` instead.
   */
  prefixHash: string;
  /** The turn whose kept reply this request continues (its next state is this request's last message). */
  continues: TurnPointer | null;
  /** ISO time the gateway recorded the turn. */
  recordedAt: string;
  model: string;
  /** The request's messages as the engine's chat template saw them (normalised: developer→system, text parts). */
  messages: ChatMessage[];
  tools: unknown[] | null;
  response: RecordedResponse;
  /** Prompt token ids exactly as the engine tokenised the rendered prompt. */
  promptIds: number[];
  /** The token ids the engine sampled, in order. */
  responseIds: number[];
  /** The engine's log-prob of each sampled token. */
  responseLogProbs: number[];
  /** Weight version of the policy that produced the response. */
  policyVersion: number;
  finishReason: string;
  /** How the response was sampled; absent in records written before it was kept (then T = 1). */
  sampling?: SamplingRecord;
  /** `chat_template_kwargs` the prompt was rendered with (e.g. `enable_thinking: false`); replayed for the teacher. */
  chatTemplateKwargs?: Record<string, unknown> | null;
}

/** Sample-store key of a turn's record, from its sample id (either form); null when the id is malformed. */
export function turnRecordKey(sampleId: string): string | null {
  const parsed = parseTurnSampleId(sampleId);
  if (parsed === null) return null;
  return ['turns', parsed.sessionId, parsed.turnKey].map(encodeURIComponent).join('/');
}

/** Sample-store folder of a session's turn records. */
export function sessionTurnsPrefix(sessionId: string): string {
  return ['turns', sessionId].map(encodeURIComponent).join('/');
}

/** Sample-store keys of what scoring produces for a sample id. */
export function sampleKey(sampleId: string): string {
  return ['samples', sampleId].map(encodeURIComponent).join('/');
}

export function exclusionKey(sampleId: string): string {
  return ['exclusions', sampleId].map(encodeURIComponent).join('/');
}

export function teacherKey(sampleId: string): string {
  return ['teacher', sampleId].map(encodeURIComponent).join('/');
}

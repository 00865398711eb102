// Head/tail context management for long agent transcripts (spec 10.1): when the prompt no longer fits its
// budget, keep the first ~30% of the budget (system prompt, task), an "[OMITTED MIDDLE]" marker, and as much
// of the end (the latest steps and the generation prompt) as fits. Two forms: exact, on the token ids the
// engine's chat template produced (engine mode), and by messages with an estimated size (gateway mode,
// where the prompt is rendered behind the gateway and only messages can be sent).

import type { ChatMessage } from './chat-messages.js';
import { flattenContent } from './chat-messages.js';

export const OMITTED_MIDDLE = '\n[OMITTED MIDDLE]\n';
export const DEFAULT_HEAD_FRACTION = 0.3;

export interface TokenTruncation {
  ids: number[];
  /** Token count before truncation. */
  originalLength: number;
  truncated: boolean;
}

/**
 * `ids` unchanged when they fit `budget`; otherwise head (⌊headFraction·budget⌋ tokens) + `marker` + tail,
 * exactly `budget` tokens long. A budget too small for head, marker and one tail token is an error.
 */
export function truncateTokensHeadTail(
  ids: readonly number[],
  budget: number,
  marker: readonly number[],
  headFraction = DEFAULT_HEAD_FRACTION,
): TokenTruncation {
  if (ids.length <= budget) return { ids: [...ids], originalLength: ids.length, truncated: false };
  const head = Math.floor(budget * headFraction);
  const tail = budget - head - marker.length;
  if (tail < 1) throw new Error(`a budget of ${budget} tokens leaves no room for the tail`);
  return {
    ids: [...ids.slice(0, head), ...marker, ...ids.slice(ids.length - tail)],
    originalLength: ids.length,
    truncated: true,
  };
}

/** A rough token count for text nobody tokenised: 3 characters a token over-counts English and code. */
export function estimateTokens(text: string): number {
  return Math.ceil(text.length / 3);
}

function messageSize(message: ChatMessage): number {
  const calls = message.tool_calls === undefined ? '' : JSON.stringify(message.tool_calls);
  return estimateTokens(flattenContent(message.content) + calls) + 4;
}

export interface MessageTruncation {
  messages: ChatMessage[];
  /** Messages left out of the middle (0 when everything fits). */
  omitted: number;
}

/**
 * Message-level head/tail: keeps the leading system/user messages (the task), then drops whole steps from
 * the middle (an assistant message together with the tool messages answering it) and puts one user
 * message saying `[OMITTED MIDDLE]` in their place, until the estimated size fits `budget` or only the
 * latest step is left.
 */
export function truncateMessagesHeadTail(
  messages: readonly ChatMessage[],
  budget: number,
  size: (message: ChatMessage) => number = messageSize,
): MessageTruncation {
  const total = messages.reduce((sum, m) => sum + size(m), 0);
  if (total <= budget) return { messages: [...messages], omitted: 0 };
  let headEnd = 0;
  while (headEnd < messages.length && messages[headEnd]?.role !== 'assistant') headEnd++;
  // Steps after the head: each starts at an assistant message and runs to the next one.
  const starts: number[] = [];
  for (let i = headEnd; i < messages.length; i++) if (messages[i]?.role === 'assistant') starts.push(i);
  const marker: ChatMessage = { role: 'user', content: OMITTED_MIDDLE.trim() };
  let dropSteps = 0;
  let dropped = 0;
  let current = total + size(marker);
  while (dropSteps < starts.length - 1 && current > budget) {
    const from = starts[dropSteps] ?? headEnd;
    const to = starts[dropSteps + 1] ?? messages.length;
    for (let i = from; i < to; i++) {
      const message = messages[i];
      if (message) current -= size(message);
    }
    dropped += to - from;
    dropSteps++;
  }
  if (dropped === 0) return { messages: [...messages], omitted: 0 };
  const keepFrom = starts[dropSteps] ?? messages.length;
  return {
    messages: [...messages.slice(0, headEnd), marker, ...messages.slice(keepFrom)],
    omitted: dropped,
  };
}

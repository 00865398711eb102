// The teacher side of on-policy distillation: the hinted prompt (spec 6.3) and the teacher's log-probs of
// the response tokens read back from an SGLang prefill (spec 6.4).
//
// How SGLang numbers `meta_info.input_token_logprobs` for `/generate` with `logprob_start_len = s`
// (scheduler_output_processor_mixin.py: `[None] + input_token_logprobs[:-1]`): one entry per input position
// from s, entry i belongs to the token at position s + i and holds log p(token | tokens before it), and
// entry 0 is always null because SGLang only runs the head from position s. So the first response token's
// log-prob needs s <= promptLength - 1; the original asked from s = promptLength, got null there, dropped it
// and padded a 0.0 (the spec's off-by-one). `teacherLogprobStartLen` asks one position earlier, and the
// readers below map entries to positions and never drop anything.

import { type ChatMessage, flattenContent } from './chat-messages.js';
import { pythonStrip } from './python-text.js';
import type { TeacherTopK } from './types.js';

/** The marker between the user's own text and the hint, as in the original (the teacher was tuned to it). */
export const HINT_MARKER = "[user's hint / instruction]";

/**
 * A copy of the turn's request messages with the hint appended to the last user message (or the last
 * message, if none is from the user); that message's content becomes flat text, unless it holds images: then
 * the hint is a text part after its parts. No messages → a single user
 * message carrying the hint. The input is not changed.
 */
export function appendHintToMessages(messages: readonly ChatMessage[], hint: string): ChatMessage[] {
  if (messages.length === 0) return [{ role: 'user', content: `${HINT_MARKER}\n${hint}` }];
  const copy = JSON.parse(JSON.stringify(messages)) as ChatMessage[];
  let target = copy.length - 1;
  for (let i = copy.length - 1; i >= 0; i--) {
    if (copy[i]?.role === 'user') {
      target = i;
      break;
    }
  }
  const message = copy[target] as ChatMessage;
  const hintText = `${HINT_MARKER}\n${pythonStrip(hint)}`;
  // A message with images keeps them where they were (the teacher sees what the policy saw); the hint follows.
  if (Array.isArray(message.content) && message.content.some((part) => part.type === 'image_ref')) {
    message.content = [...message.content, { type: 'text', text: `\n\n${hintText}` }];
    return copy;
  }
  message.content = pythonStrip(`${flattenContent(message.content)}\n\n${hintText}`);
  return copy;
}

/** The `logprob_start_len` to request so that every response token gets a log-prob from SGLang. */
export function teacherLogprobStartLen(totalLength: number, responseLength: number): number {
  return Math.max(0, totalLength - responseLength - 1);
}

/** One `input_token_logprobs` entry: `[logprob, token_id, text?]`, or `{ logprob }`, or null. */
export type InputTokenLogprob = readonly unknown[] | { logprob?: unknown } | null;

/** One `input_top_logprobs` row: K entries shaped like `InputTokenLogprob`, or null. */
export type InputTopLogprobsRow = readonly InputTokenLogprob[] | null;

export class TeacherLogprobsError extends Error {
  override name = 'TeacherLogprobsError';
}

interface Alignment {
  /** Index of the first response token's entry. */
  first: number;
}

function checkAlignment(
  entries: number,
  responseLength: number,
  logprobStartLen: number,
  totalLength: number,
): Alignment {
  for (const [name, value] of [
    ['responseLength', responseLength],
    ['logprobStartLen', logprobStartLen],
    ['totalLength', totalLength],
  ] as const) {
    if (!Number.isInteger(value) || value < 0) {
      throw new TeacherLogprobsError(`${name} must be a non-negative integer, got ${value}`);
    }
  }
  if (responseLength > totalLength) {
    throw new TeacherLogprobsError(`responseLength ${responseLength} exceeds totalLength ${totalLength}`);
  }
  const promptLength = totalLength - responseLength;
  if (logprobStartLen > promptLength) {
    throw new TeacherLogprobsError(
      `logprob_start_len ${logprobStartLen} is past the first response token at position ${promptLength}`,
    );
  }
  const expected = totalLength - logprobStartLen;
  if (entries !== expected) {
    throw new TeacherLogprobsError(
      `expected ${expected} log-prob entries (positions ${logprobStartLen}..${totalLength - 1}), got ${entries}`,
    );
  }
  return { first: promptLength - logprobStartLen };
}

function nullInResponse(position: number, logprobStartLen: number): TeacherLogprobsError {
  return new TeacherLogprobsError(
    `no teacher log-prob for the response token at position ${position}` +
      (position === logprobStartLen
        ? `: SGLang leaves the entry at logprob_start_len empty; request logprob_start_len = ${Math.max(0, logprobStartLen - 1)} (teacherLogprobStartLen)`
        : ''),
  );
}

function readLogprob(entry: InputTokenLogprob): number | null {
  if (entry === null) return null;
  const value = Array.isArray(entry) ? entry[0] : (entry as { logprob?: unknown }).logprob;
  if (value === null || value === undefined) return null;
  if (typeof value !== 'number' || !Number.isFinite(value)) {
    throw new TeacherLogprobsError(`log-prob entry is not a finite number: ${JSON.stringify(entry)}`);
  }
  return value;
}

function readTokenId(entry: InputTokenLogprob): number {
  const value = Array.isArray(entry) ? entry[1] : (entry as { token_id?: unknown } | null)?.token_id;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0) {
    throw new TeacherLogprobsError(`top log-prob entry has no token id: ${JSON.stringify(entry)}`);
  }
  return value;
}

/**
 * Exactly `responseLength` teacher log-probs, one per response token, from SGLang's `input_token_logprobs` of
 * a prefill of `totalLength` tokens (hinted prompt ++ response) requested with `logprobStartLen`. Entries
 * before the response are ignored (they may be null); a missing log-prob inside the response throws.
 */
export function alignTeacherLogprobs(
  inputTokenLogprobs: readonly InputTokenLogprob[],
  responseLength: number,
  logprobStartLen: number,
  totalLength: number,
): number[] {
  const { first } = checkAlignment(inputTokenLogprobs.length, responseLength, logprobStartLen, totalLength);
  const out: number[] = [];
  for (let i = first; i < inputTokenLogprobs.length; i++) {
    const value = readLogprob(inputTokenLogprobs[i] ?? null);
    if (value === null) throw nullInResponse(logprobStartLen + i, logprobStartLen);
    out.push(value);
  }
  return out;
}

/**
 * The top-K variant (spec 6.6) over `input_top_logprobs`: for each response token the teacher's K most likely
 * tokens and their log-probs, in SGLang's order. Every response row must hold exactly K entries.
 */
export function alignTeacherTopLogprobs(
  inputTopLogprobs: readonly InputTopLogprobsRow[],
  topK: number,
  responseLength: number,
  logprobStartLen: number,
  totalLength: number,
): TeacherTopK {
  if (!Number.isInteger(topK) || topK < 1) throw new TeacherLogprobsError(`topK must be >= 1, got ${topK}`);
  const { first } = checkAlignment(inputTopLogprobs.length, responseLength, logprobStartLen, totalLength);
  const logProbs: number[][] = [];
  const tokenIds: number[][] = [];
  for (let i = first; i < inputTopLogprobs.length; i++) {
    const row = inputTopLogprobs[i] ?? null;
    const position = logprobStartLen + i;
    if (row === null || row.length === 0) throw nullInResponse(position, logprobStartLen);
    if (row.length !== topK) {
      throw new TeacherLogprobsError(
        `expected ${topK} top log-probs at position ${position}, got ${row.length}`,
      );
    }
    const rowLogProbs: number[] = [];
    const rowTokenIds: number[] = [];
    for (const entry of row) {
      const value = readLogprob(entry);
      if (value === null) throw nullInResponse(position, logprobStartLen);
      rowLogProbs.push(value);
      rowTokenIds.push(readTokenId(entry));
    }
    logProbs.push(rowLogProbs);
    tokenIds.push(rowTokenIds);
  }
  return { logProbs, tokenIds };
}

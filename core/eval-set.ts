// A held-out evaluation set: conversations the model answers, scored by a judge (against what came next) or by a
// deterministic reply scorer (core/reply-scorers.ts). One JSON object per line, the same file for
// `openclaw-rl eval` and a run's publish gate (docs/evaluation.md).
import { z } from 'zod';
import { parseJsonLines } from './jsonl.js';

const evalMessageSchema = z.looseObject({
  role: z.enum(['system', 'developer', 'user', 'assistant', 'tool']),
  content: z.union([z.string(), z.array(z.unknown()), z.null()]),
});

/** One held-out line: the conversation so far, and (for a judge) what the user or a tool said after the reply. */
export const evalSetItemSchema = z.strictObject({
  id: z.string().min(1).optional(),
  messages: z.array(evalMessageSchema).min(1),
  /** What answered the model's reply: a judge scores the reply against it; a reply scorer does not need it. */
  next_user: z.string().min(1).optional(),
  /** `tool` when the reply is expected to be a tool call and `next_user` is its output. */
  next_role: z.enum(['user', 'tool']).default('user'),
});
export type EvalSetItem = z.output<typeof evalSetItemSchema>;

/** Parses a JSONL text; every bad line is reported with its number (`source:line: what is wrong`). */
export function parseEvalSet(text: string, source: string): EvalSetItem[] {
  return parseJsonLines(text, source, evalSetItemSchema, 'conversations').map(({ line, value }) => ({
    ...value,
    id: value.id ?? `line-${line}`,
  }));
}

import type { RecordedResponse } from '../core/turn-record.js';

/**
 * The assistant's response as the judge reads it: its text, then any tool calls in the chat template's
 * `<tool_call>` markup, which is what the policy actually produced (spec 4.1: the judge sees the response
 * only, not the history).
 */
export function responseTextForJudge(response: RecordedResponse): string {
  const parts: string[] = [];
  if (response.content) parts.push(response.content);
  for (const call of response.toolCalls ?? []) {
    const fn = (call as { function?: { name?: unknown; arguments?: unknown } }).function;
    let args: unknown = fn?.arguments ?? {};
    if (typeof args === 'string') {
      try {
        args = JSON.parse(args);
      } catch {
        // Keep the raw string: malformed arguments are evidence for the judge too.
      }
    }
    parts.push(`<tool_call>\n${JSON.stringify({ name: fn?.name ?? '', arguments: args })}\n</tool_call>`);
  }
  return parts.join('\n');
}

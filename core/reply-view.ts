// A reply as it survives a client's round trip: clients trim text, split it into parts, drop `<think>` blocks
// and tool-call ids, and re-serialise tool arguments when they send a reply back. The view keeps only what
// survives: the text without whitespace or inline reasoning, and each tool call's name and parsed arguments.
// The gateway pairs a turn with the request that keeps its reply by this view, and derives session ids from
// it. Pure (workflow-safe).

import { canonicalJson } from './canonical-json.js';

export function replyView(content: unknown, toolCalls: unknown): string {
  const calls = Array.isArray(toolCalls) ? toolCalls.map(toolCallView) : [];
  const text = replyText(content)
    .replace(/<think>[\s\S]*?<\/think>/g, '')
    .replace(/\s+/g, '');
  return canonicalJson({ content: text, toolCalls: calls });
}

function replyText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .map((part) => (part && typeof part === 'object' && typeof part.text === 'string' ? part.text : ''))
    .join('');
}

function toolCallView(call: unknown): { name: string; arguments: unknown } {
  const fn = (call as { function?: { name?: unknown; arguments?: unknown } } | null)?.function;
  let args: unknown = fn?.arguments ?? {};
  if (typeof args === 'string') {
    try {
      args = JSON.parse(args);
    } catch {
      // Arguments that are not JSON are compared as the text they are.
    }
  }
  return { name: typeof fn?.name === 'string' ? fn.name : '', arguments: args };
}

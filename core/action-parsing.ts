// What the policy did at one step, read from the assistant message the engine returned. The engine (like
// SGLang's qwen25 tool parser) turns each well-formed `<tool_call>{"name", "arguments"}</tool_call>` into an
// OpenAI `tool_calls` entry and leaves a malformed one in the text; so:
// - tool calls, each naming an offered tool with a JSON-object `arguments` → the tools to run;
// - no tool calls and no tool-call markup in the text → a final answer (the episode ends);
// - anything else (markup left in the text, arguments that are not a JSON object, an unknown tool) → a parse
//   error: the policy gets an error observation and the rollout FAILS after `maxParseErrors` of them.

export interface ParsedToolCall {
  id: string;
  name: string;
  arguments: Record<string, unknown>;
}

export type PolicyAction =
  | { kind: 'tools'; calls: ParsedToolCall[] }
  | { kind: 'final'; text: string }
  | { kind: 'invalid'; error: string };

/** The assistant message fields the parser reads (OpenAI's shape). */
export interface AssistantOutput {
  content?: string | null;
  tool_calls?: unknown[] | null;
}

const TOOL_MARKUP = /<\/?tool_call>/;

function callError(index: number, problem: string): PolicyAction {
  return { kind: 'invalid', error: `tool call ${index + 1}: ${problem}` };
}

export function parsePolicyAction(output: AssistantOutput, toolNames: readonly string[]): PolicyAction {
  const text = output.content ?? '';
  const rawCalls = output.tool_calls ?? [];
  if (rawCalls.length === 0) {
    if (TOOL_MARKUP.test(text))
      return {
        kind: 'invalid',
        error:
          'the tool call could not be parsed: write <tool_call>{"name": ..., "arguments": {...}}</tool_call>',
      };
    return { kind: 'final', text };
  }
  const calls: ParsedToolCall[] = [];
  for (const [index, raw] of rawCalls.entries()) {
    if (typeof raw !== 'object' || raw === null) return callError(index, 'not an object');
    const call = raw as { id?: unknown; function?: { name?: unknown; arguments?: unknown } };
    const name = call.function?.name;
    if (typeof name !== 'string' || name.length === 0) return callError(index, 'no function name');
    if (!toolNames.includes(name))
      return callError(index, `unknown tool "${name}"; available: ${toolNames.join(', ') || 'none'}`);
    let args: unknown = call.function?.arguments ?? {};
    if (typeof args === 'string') {
      try {
        args = args.trim() === '' ? {} : JSON.parse(args);
      } catch {
        return callError(index, `arguments of "${name}" are not valid JSON`);
      }
    }
    if (typeof args !== 'object' || args === null || Array.isArray(args))
      return callError(index, `arguments of "${name}" must be a JSON object`);
    const id = typeof call.id === 'string' && call.id.length > 0 ? call.id : `call_${index}`;
    calls.push({ id, name, arguments: args as Record<string, unknown> });
  }
  return { kind: 'tools', calls };
}

/** A turn with more tool calls than the environment allows is a parse error (the swe kind: one command). */
export function limitCallsPerTurn(action: PolicyAction, maxCalls: number | undefined): PolicyAction {
  if (action.kind !== 'tools' || maxCalls === undefined || action.calls.length <= maxCalls) return action;
  return {
    kind: 'invalid',
    error: `${action.calls.length} tool calls in one turn; this environment takes at most ${maxCalls} per turn`,
  };
}

/** The text the policy sees after a parse error. */
export function parseErrorObservation(error: string): string {
  return `[PARSE_ERROR] ${error}. Call one of the offered tools with valid JSON arguments, or give your final answer without a tool call.`;
}

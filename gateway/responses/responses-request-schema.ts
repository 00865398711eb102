// The Responses API request (`POST /v1/responses`) as the gateway accepts it. Strict: every field it takes is
// one it honours (responses-to-chat.ts), so a field it cannot honour (built-in tools, background runs,
// server-side conversations, encrypted reasoning…) gets a 400 naming it instead of being silently dropped.

import { z } from 'zod';
import { fieldPath } from '../chat-request-schema.js';
import { invalidRequest, type OpenAIError } from '../openai-errors.js';

const text = z.string({ error: 'expected a string' });

const inputText = z.looseObject({ type: z.literal('input_text'), text });
const outputText = z.looseObject({ type: z.literal('output_text'), text });
const refusal = z.looseObject({ type: z.literal('refusal'), refusal: text });
const inputImage = z.looseObject({
  type: z.literal('input_image'),
  image_url: z.string().min(1, 'input_image needs an image_url (a data: or http(s) URL)'),
  detail: z.enum(['low', 'high', 'auto']).nullable().optional(),
  file_id: z
    .null({ error: 'file_id is not supported: the gateway keeps no files; send image_url' })
    .optional(),
});

const contentPart = z.discriminatedUnion('type', [inputText, outputText, refusal, inputImage], {
  error: 'expected a content part of type input_text, output_text, refusal or input_image',
});
export type ResponsesContentPart = z.output<typeof contentPart>;

const itemStatus = z.enum(['in_progress', 'completed', 'incomplete']).optional();

const messageItem = z.looseObject({
  type: z.literal('message').optional(),
  role: z.enum(['user', 'system', 'developer', 'assistant'], {
    error: 'expected role user, system, developer or assistant',
  }),
  content: z.union([text, z.array(contentPart)], {
    error: 'expected a string or a list of content parts',
  }),
  id: z.string().optional(),
  status: itemStatus,
});

const functionCallItem = z.looseObject({
  type: z.literal('function_call'),
  call_id: z.string().min(1),
  name: z.string().min(1),
  arguments: text,
  id: z.string().optional(),
  status: itemStatus,
});

const functionOutputPart = z.discriminatedUnion('type', [inputText, inputImage], {
  error: 'expected a content part of type input_text or input_image',
});

const functionCallOutputItem = z.looseObject({
  type: z.literal('function_call_output'),
  call_id: z.string().min(1),
  output: z.union([text, z.array(functionOutputPart)], {
    error: 'expected a string or a list of input_text/input_image parts',
  }),
  id: z.string().nullable().optional(),
  status: itemStatus.nullable(),
});

const reasoningText = z.looseObject({ type: z.string(), text });
const reasoningItem = z.looseObject({
  type: z.literal('reasoning'),
  id: z.string().optional(),
  summary: z.array(reasoningText).optional(),
  content: z.array(reasoningText).nullable().optional(),
  encrypted_content: z
    .null({ error: 'encrypted_content is not supported: the gateway encrypts no reasoning' })
    .optional(),
  status: itemStatus,
});

const ITEM_TYPES = ['message', 'function_call', 'function_call_output', 'reasoning'] as const;

/** Items dispatched on `type` (a message may leave it out), so an error names the field of the right kind. */
const inputItem = z.unknown().transform((value, ctx) => {
  const type = typeof value === 'object' && value !== null ? (value as { type?: unknown }).type : undefined;
  const schema =
    type === undefined || type === 'message'
      ? messageItem
      : type === 'function_call'
        ? functionCallItem
        : type === 'function_call_output'
          ? functionCallOutputItem
          : type === 'reasoning'
            ? reasoningItem
            : null;
  if (schema === null) {
    ctx.addIssue({
      code: 'custom',
      path: ['type'],
      message: `input items of type ${JSON.stringify(type)} are not supported (supported: ${ITEM_TYPES.join(', ')})`,
    });
    return z.NEVER;
  }
  const parsed = schema.safeParse(value);
  if (!parsed.success) {
    for (const issue of parsed.error.issues) ctx.addIssue({ ...issue, code: 'custom', path: issue.path });
    return z.NEVER;
  }
  return parsed.data;
});

export type ResponsesInputItem =
  | z.output<typeof messageItem>
  | z.output<typeof functionCallItem>
  | z.output<typeof functionCallOutputItem>
  | z.output<typeof reasoningItem>;

const functionTool = z.looseObject({
  type: z.literal('function', {
    error:
      'only function tools are supported: built-in tools (web_search, file_search, computer_use…) are not',
  }),
  name: z.string().min(1),
  description: z.string().nullable().optional(),
  parameters: z.record(z.string(), z.unknown()).nullable().optional(),
  strict: z.boolean().nullable().optional(),
});

const toolChoice = z.union(
  [
    z.enum(['none', 'auto', 'required']),
    z.strictObject({ type: z.literal('function'), name: z.string().min(1) }),
  ],
  { error: 'expected none, auto, required or {type: "function", name}' },
);

const textFormat = z.discriminatedUnion(
  'type',
  [
    z.strictObject({ type: z.literal('text') }),
    z.strictObject({ type: z.literal('json_object') }),
    z.strictObject({
      type: z.literal('json_schema'),
      name: z.string().min(1),
      schema: z.record(z.string(), z.unknown()),
      description: z.string().optional(),
      strict: z.boolean().nullable().optional(),
    }),
  ],
  { error: 'expected a format of type text, json_object or json_schema' },
);

const unsupported = (message: string) => z.undefined({ error: message }).nullable().optional();
const flag = z.boolean().nullable().optional();

export const responsesRequestSchema = z.strictObject({
  model: z.string().optional(),
  input: z.union([text, z.array(inputItem)], { error: 'expected a string or a list of input items' }),
  instructions: z.string().nullable().optional(),
  tools: z.array(functionTool).optional(),
  tool_choice: toolChoice.optional(),
  parallel_tool_calls: flag,
  temperature: z.number().min(0).max(2).nullable().optional(),
  top_p: z.number().gt(0).max(1).nullable().optional(),
  max_output_tokens: z.number().int().min(1).nullable().optional(),
  stream: flag,
  stream_options: z.strictObject({ include_obfuscation: flag }).nullable().optional(),
  metadata: z.record(z.string(), z.string()).nullable().optional(),
  user: z.string().optional(),
  store: flag,
  previous_response_id: z.string().min(1).nullable().optional(),
  text: z
    .strictObject({
      format: textFormat.optional(),
      verbosity: z
        .literal('medium', 'text.verbosity is not supported: the engine has one verbosity')
        .nullable()
        .optional(),
    })
    .nullable()
    .optional(),
  reasoning: z
    .strictObject({
      effort: z
        .literal('none', 'reasoning.effort is not supported: the served model has no reasoning effort to set')
        .nullable()
        .optional(),
      summary: z
        .null({ error: 'reasoning.summary is not supported: the engine writes no reasoning summaries' })
        .optional(),
    })
    .nullable()
    .optional(),
  truncation: z
    .literal('disabled', 'truncation "auto" is not supported: the gateway never drops input')
    .nullable()
    .optional(),
  include: z
    .array(z.never({ error: 'include is not supported: the gateway has no extra output to include' }))
    .nullable()
    .optional(),
  // Hints for OpenAI's own cache and serving tiers: nothing to do here, and nothing changes in the answer.
  prompt_cache_key: z.string().nullable().optional(),
  prompt_cache_retention: z.string().nullable().optional(),
  safety_identifier: z.string().nullable().optional(),
  service_tier: z.enum(['auto', 'default']).nullable().optional(),
  background: z
    .literal(false, 'background responses are not supported: the gateway answers while the client waits')
    .nullable()
    .optional(),
  conversation: unsupported('conversation is not supported: send previous_response_id or the whole input'),
  prompt: unsupported('prompt templates are not supported: send input and instructions'),
  top_logprobs: unsupported('top_logprobs is not supported on /v1/responses'),
  max_tool_calls: unsupported('max_tool_calls is not supported: only function tools run, on the client'),
  // The gateway's session fields (docs/gateway.md), as on chat completions.
  session_id: z.union([z.string(), z.number()]).optional(),
  session_done: z.union([z.boolean(), z.string(), z.number()]).optional(),
  turn_type: z.string().optional(),
});

export type ResponsesRequest = z.output<typeof responsesRequestSchema>;

/** The request, or a 400 whose `param` names the first bad field (`input[1].content[0].type`, `tools[0].type`). */
export function parseResponsesRequest(
  body: unknown,
): { ok: true; request: ResponsesRequest } | { ok: false; error: OpenAIError } {
  const result = responsesRequestSchema.safeParse(body);
  if (result.success) return { ok: true, request: result.data };
  const first = result.error.issues[0];
  const issue = first ? innermost(first) : undefined;
  if (issue?.code === 'unrecognized_keys') {
    const param = fieldPath([...issue.path, issue.keys[0] ?? '']);
    return {
      ok: false,
      error: invalidRequest(`${param}: unknown or unsupported field on /v1/responses`, param),
    };
  }
  const param = issue ? fieldPath(issue.path) : 'body';
  return { ok: false, error: invalidRequest(`${param}: ${issue?.message ?? 'invalid request'}`, param) };
}

/**
 * Of a union that matched no branch (`input`: a string or a list of items), the issue deepest in the branch
 * that got furthest: it names the field that is wrong (`input[0].type`), not the union.
 */
function innermost(issue: z.core.$ZodIssue): z.core.$ZodIssue {
  if (issue.code !== 'invalid_union' || issue.errors.length === 0) return issue;
  let best: z.core.$ZodIssue = issue;
  for (const branch of issue.errors)
    for (const inner of branch) {
      const candidate = innermost({ ...inner, path: [...issue.path, ...inner.path] } as z.core.$ZodIssue);
      if (candidate.path.length > best.path.length) best = candidate;
    }
  return best;
}

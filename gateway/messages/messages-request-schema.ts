// The Anthropic Messages request as the gateway accepts it (`POST /v1/messages`). Checked here, at the edge, so
// a bad or unsupported request gets a 400 in Anthropic's shape naming its field (`messages.1.content.0.type`)
// before anything reaches the engine. What the gateway cannot honour (server tools, documents, files,
// containers, MCP servers, a prefilled reply) is refused by name; `cache_control` and other hints that change
// nothing a local engine does are accepted and ignored.

import { type core, z } from 'zod';
import { invalidRequest, type OpenAIError } from '../openai-errors.js';

const ignored = z.unknown().optional();

const textBlock = z.looseObject({
  type: z.literal('text'),
  text: z.string(),
  cache_control: ignored,
  citations: ignored,
});

const imageSource = z.discriminatedUnion(
  'type',
  [
    z.looseObject({
      type: z.literal('base64'),
      media_type: z.enum(['image/jpeg', 'image/png', 'image/gif', 'image/webp']),
      data: z.string().min(1, 'image data must not be empty'),
    }),
    z.looseObject({ type: z.literal('url'), url: z.url({ error: 'expected an http(s) URL' }) }),
  ],
  { error: (issue) => (issue.code === 'invalid_union' ? unsupportedImageSource(issue.input) : undefined) },
);

const imageBlock = z.looseObject({ type: z.literal('image'), source: imageSource, cache_control: ignored });

const toolUseBlock = z.looseObject({
  type: z.literal('tool_use'),
  id: z.string().min(1),
  name: z.string().min(1),
  input: z.unknown(),
  cache_control: ignored,
});

/** What a tool result may hold: text, and images (shown to a text-only engine as a placeholder). */
const toolResultPart = z.discriminatedUnion('type', [textBlock, imageBlock], {
  error: (issue) =>
    issue.code === 'invalid_union'
      ? `${blockType(issue.input)} blocks are not supported in a tool_result; send text or image blocks`
      : undefined,
});

const toolResultBlock = z.looseObject({
  type: z.literal('tool_result'),
  tool_use_id: z.string().min(1),
  content: z.union([z.string(), z.array(toolResultPart)]).optional(),
  is_error: z.boolean().optional(),
  cache_control: ignored,
});

const thinkingBlock = z.looseObject({
  type: z.literal('thinking'),
  thinking: z.string(),
  signature: z.string().optional(),
});
const redactedThinkingBlock = z.looseObject({ type: z.literal('redacted_thinking'), data: z.string() });

const contentBlock = z.discriminatedUnion(
  'type',
  [textBlock, imageBlock, toolUseBlock, toolResultBlock, thinkingBlock, redactedThinkingBlock],
  { error: (issue) => (issue.code === 'invalid_union' ? unsupportedBlock(issue.input) : undefined) },
);
export type MessagesContentBlock = z.output<typeof contentBlock>;

const message = z.looseObject({
  role: z.enum(['user', 'assistant', 'system'], { error: 'role must be user, assistant or system' }),
  content: z.union([z.string(), z.array(contentBlock)], {
    error: 'expected a string or a list of content blocks',
  }),
});
export type MessagesMessage = z.output<typeof message>;

const tool = z
  .looseObject({
    // A client tool has no type, or `custom`; anything else is one of Anthropic's server tools.
    type: z.string().nullable().optional(),
    name: z.string().min(1, 'a tool needs a name'),
    description: z.string().optional(),
    input_schema: z.record(z.string(), z.unknown()).optional(),
    cache_control: ignored,
  })
  .superRefine((value, ctx) => {
    if (value.type !== undefined && value.type !== null && value.type !== 'custom') {
      ctx.addIssue({
        code: 'custom',
        path: ['type'],
        message: `server tool ${JSON.stringify(value.type)} is not supported: the gateway serves a self-hosted model; declare client tools (name, description, input_schema) and run them yourself`,
      });
      return;
    }
    if (value.input_schema === undefined)
      ctx.addIssue({
        code: 'custom',
        path: ['input_schema'],
        message: 'a client tool needs an input_schema',
      });
  });
export type MessagesTool = z.output<typeof tool>;

const toolChoice = z.discriminatedUnion(
  'type',
  [
    z.looseObject({ type: z.literal('auto'), disable_parallel_tool_use: z.boolean().optional() }),
    z.looseObject({ type: z.literal('any'), disable_parallel_tool_use: z.boolean().optional() }),
    z.looseObject({
      type: z.literal('tool'),
      name: z.string().min(1),
      disable_parallel_tool_use: z.boolean().optional(),
    }),
    z.looseObject({ type: z.literal('none') }),
  ],
  { error: (issue) => (issue.code === 'invalid_union' ? 'type must be auto, any, tool or none' : undefined) },
);
export type MessagesToolChoice = z.output<typeof toolChoice>;

const thinking = z.discriminatedUnion(
  'type',
  [
    z.looseObject({ type: z.literal('enabled'), budget_tokens: z.number().int().min(1).optional() }),
    z.looseObject({ type: z.literal('adaptive') }),
    z.looseObject({ type: z.literal('disabled') }),
  ],
  {
    error: (issue) =>
      issue.code === 'invalid_union' ? 'type must be enabled, adaptive or disabled' : undefined,
  },
);

/** Request fields whose meaning the gateway cannot provide: refused rather than silently dropped. */
const UNSUPPORTED_FIELDS: Record<string, string> = {
  container: 'code-execution containers are not supported',
  mcp_servers: 'MCP servers are not supported; connect them in your client and declare their tools',
  context_management: 'server-side context management is not supported',
  output_format: 'structured outputs are not supported',
};

export const messagesRequestSchema = z
  .looseObject({
    model: z.string({ error: 'model is required' }).min(1, 'model is required'),
    max_tokens: z
      .number({ error: 'max_tokens is required: a positive integer' })
      .int('max_tokens must be an integer')
      .min(1, 'max_tokens must be at least 1'),
    messages: z
      .array(message, { error: 'messages must be a non-empty list' })
      .min(1, 'messages must be a non-empty list'),
    system: z
      .union([z.string(), z.array(textBlock)], { error: 'expected a string or a list of text blocks' })
      .optional(),
    tools: z.array(tool).optional(),
    tool_choice: toolChoice.optional(),
    temperature: z.number().min(0).max(1).optional(),
    top_p: z.number().gt(0).max(1).optional(),
    top_k: z.number().int().min(1).optional(),
    stop_sequences: z.array(z.string().min(1, 'a stop sequence must not be empty')).max(32).optional(),
    stream: z.boolean().optional(),
    metadata: z.looseObject({ user_id: z.string().nullable().optional() }).optional(),
    thinking: thinking.optional(),
    output_config: z.looseObject({ format: ignored, effort: ignored }).optional(),
    // The gateway's own session fields, as on the chat route (removed before the engine sees the request).
    session_id: z.union([z.string(), z.number()]).optional(),
    session_done: z.union([z.boolean(), z.string(), z.number()]).optional(),
    turn_type: z.string().optional(),
  })
  .superRefine((body, ctx) => {
    for (const [field, why] of Object.entries(UNSUPPORTED_FIELDS))
      if (body[field] !== undefined && body[field] !== null)
        ctx.addIssue({ code: 'custom', path: [field], message: why });
    if (body.output_config?.format !== undefined && body.output_config.format !== null)
      ctx.addIssue({
        code: 'custom',
        path: ['output_config', 'format'],
        message: 'structured outputs are not supported',
      });
    const last = body.messages.at(-1);
    if (last?.role === 'assistant')
      ctx.addIssue({
        code: 'custom',
        path: ['messages', body.messages.length - 1, 'role'],
        message: 'a final assistant message (a prefilled reply) is not supported; end with a user message',
      });
    const names = new Set((body.tools ?? []).map((t) => t.name));
    if (body.tool_choice?.type === 'tool' && !names.has(body.tool_choice.name))
      ctx.addIssue({
        code: 'custom',
        path: ['tool_choice', 'name'],
        message: `no tool named ${JSON.stringify(body.tool_choice.name)} in tools`,
      });
    body.messages.forEach((m, i) => {
      if (typeof m.content === 'string') return;
      m.content.forEach((block, j) => {
        const misplaced =
          (m.role !== 'assistant' && (block.type === 'tool_use' || block.type === 'thinking')) ||
          (m.role !== 'user' && block.type === 'tool_result') ||
          (m.role === 'system' && block.type !== 'text');
        if (misplaced)
          ctx.addIssue({
            code: 'custom',
            path: ['messages', i, 'content', j, 'type'],
            message: `${block.type} blocks are not accepted in a ${m.role} message`,
          });
      });
    });
  });

export type MessagesRequest = z.output<typeof messagesRequestSchema>;

export type MessagesRequestResult =
  | { ok: true; request: MessagesRequest }
  | { ok: false; error: OpenAIError };

/**
 * The request, or a 400 whose message starts with the first bad field's path (Anthropic's errors name a field
 * only in their message; the route renders it in Anthropic's shape, anthropic-errors.ts).
 */
export function parseMessagesRequest(body: unknown): MessagesRequestResult {
  const result = messagesRequestSchema.safeParse(body);
  if (result.success) return { ok: true, request: result.data };
  const issue = result.error.issues[0];
  const { path, message } = issue ? innermost(issue) : { path: [], message: 'invalid request' };
  const field = fieldPath(path);
  return { ok: false, error: invalidRequest(`${field}: ${message}`, field) };
}

/**
 * The issue that says what is wrong: for a union (a string or a list of blocks), the branch that got furthest
 * into the value; the union's own message when every branch failed at its top.
 */
function innermost(issue: core.$ZodIssue): { path: PropertyKey[]; message: string } {
  if (issue.code !== 'invalid_union' || issue.errors.length === 0)
    return { path: [...issue.path], message: issue.message };
  let best: core.$ZodIssue | undefined;
  for (const branch of issue.errors) {
    const first = branch[0];
    if (first && (best === undefined || first.path.length > best.path.length)) best = first;
  }
  if (best === undefined || best.path.length === 0) return { path: [...issue.path], message: issue.message };
  const inner = innermost(best);
  return { path: [...issue.path, ...inner.path], message: inner.message };
}

/** `['messages', 0, 'content', 1]` → `messages.0.content.1` (Anthropic's spelling); the empty path is the body. */
export function fieldPath(path: readonly PropertyKey[]): string {
  return path.length === 0 ? 'body' : path.map(String).join('.');
}

function blockType(input: unknown): string {
  const type = (input as { type?: unknown } | null)?.type;
  return typeof type === 'string' ? JSON.stringify(type) : 'untyped';
}

function unsupportedBlock(input: unknown): string {
  const type = (input as { type?: unknown } | null)?.type;
  switch (type) {
    case 'document':
      return 'document blocks (PDF, plain-text documents) are not supported; send the text as a text block';
    case 'search_result':
      return 'search_result blocks are not supported; send the text as a text block';
    case 'container_upload':
      return 'container_upload blocks are not supported (no code-execution containers)';
    case undefined:
      return 'each content block needs a type';
  }
  if (typeof type === 'string' && (type.startsWith('server_tool') || type.endsWith('_tool_result')))
    return `${JSON.stringify(type)} blocks belong to server tools, which are not supported`;
  return `unsupported content block type ${blockType(input)}; use text, image, tool_use, tool_result or thinking`;
}

function unsupportedImageSource(input: unknown): string {
  const type = (input as { type?: unknown } | null)?.type;
  if (type === 'file')
    return 'image sources of type "file" (the Files API) are not supported; send base64 or a url';
  return 'source.type must be base64 or url';
}

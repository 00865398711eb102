// `openclaw-rl eval --simulate personas.jsonl`: a user model plays each persona for K turns against the policy
// (any OpenAI-compatible URL: the gateway or an engine), and the judge scores each policy reply against the
// user's next message, as the original's openclaw-test does. The report has the shape of a version comparison.
import OpenAI from 'openai';
import { z } from 'zod';
import type { EvalSetItem } from '../core/eval-set.js';
import { parseJsonLines } from '../core/jsonl.js';
import type { ItemScores, ReplyScoring, VersionsReport } from './eval-versions.js';

export const personaSchema = z.strictObject({
  id: z.string().min(1).optional(),
  /** Who the user is and what they want, in the user model's system prompt. */
  persona: z.string().min(1),
  /** The first user message; the user model writes it when absent. */
  opening: z.string().min(1).optional(),
});
export type Persona = z.output<typeof personaSchema>;

/** Parses a JSONL text of personas; a bad line is reported with its number. */
export function parsePersonas(text: string, source: string): Persona[] {
  return parseJsonLines(text, source, personaSchema, 'personas').map(({ line, value }) => ({
    ...value,
    id: value.id ?? `persona-${line}`,
  }));
}

export interface ChatEndpoint {
  /** OpenAI-compatible base URL, `.../v1`. */
  baseUrl: string;
  model: string;
  apiKey?: string | undefined;
}

export interface SimulationOptions {
  user: ChatEndpoint;
  policy: ChatEndpoint;
  turns: number;
  maxTokens: number;
  temperature: number;
}

type Message = { role: 'system' | 'user' | 'assistant'; content: string };

const client = (endpoint: ChatEndpoint) =>
  new OpenAI({ baseURL: endpoint.baseUrl, apiKey: endpoint.apiKey || 'none', maxRetries: 1 });

function userPrompt(persona: Persona, conversation: readonly Message[]): Message[] {
  // The user model sees the conversation with the roles swapped: it speaks as the user.
  return [
    {
      role: 'system',
      content: `You are a user talking to an AI assistant. Stay in character: ${persona.persona}\nWrite only your next message to the assistant.`,
    },
    ...conversation.map(
      (m): Message => ({ role: m.role === 'user' ? 'assistant' : 'user', content: m.content }),
    ),
  ];
}

/** One persona's conversation: K policy replies, each scored against the user's next message. */
async function simulate(
  persona: Persona,
  scoring: ReplyScoring,
  options: SimulationOptions,
  seed: number,
): Promise<ItemScores> {
  const user = client(options.user);
  const policy = client(options.policy);
  const say = async (endpoint: ChatEndpoint, api: OpenAI, messages: Message[], turnSeed: number) =>
    (
      await api.chat.completions.create({
        model: endpoint.model,
        messages,
        max_tokens: options.maxTokens,
        temperature: options.temperature,
        seed: turnSeed,
      })
    ).choices[0]?.message.content ?? '';
  const conversation: Message[] = [];
  const first = persona.opening ?? (await say(options.user, user, userPrompt(persona, []), seed));
  conversation.push({ role: 'user', content: first });
  const scores: (number | null)[] = [];
  for (let turn = 0; turn < options.turns; turn++) {
    const reply = await say(options.policy, policy, conversation, seed + turn);
    const before = [...conversation];
    conversation.push({ role: 'assistant', content: reply });
    const next = await say(options.user, user, userPrompt(persona, conversation), seed + turn + 1);
    const item: EvalSetItem = {
      id: persona.id ?? '',
      messages: before,
      next_user: next || '(no reply)',
      next_role: 'user',
    };
    scores.push(await scoring(reply, item));
    conversation.push({ role: 'user', content: next || '(no reply)' });
  }
  const scored = scores.filter((s): s is number => s !== null);
  return {
    id: persona.id ?? '',
    scores,
    mean: scored.length === 0 ? null : scored.reduce((a, b) => a + b, 0) / scored.length,
  };
}

/** Every persona in turn; the report's one version is the policy. */
export async function runSimulation(
  personas: readonly Persona[],
  scoring: ReplyScoring,
  options: SimulationOptions,
  say: (line: string) => void = () => {},
): Promise<VersionsReport> {
  const items: ItemScores[] = [];
  for (const [index, persona] of personas.entries()) {
    const scored = await simulate(persona, scoring, options, 1000 * index);
    items.push(scored);
    say(`${scored.id}  ${scored.scores.map((s) => (s === null ? '-' : String(s))).join(' ')}`);
  }
  const means = items.map((i) => i.mean).filter((m): m is number => m !== null);
  return {
    scorer: 'judge',
    samples: options.turns,
    maxTokens: options.maxTokens,
    temperature: options.temperature,
    versions: [
      {
        label: options.policy.model,
        model: options.policy.baseUrl,
        mean: means.length === 0 ? null : means.reduce((a, b) => a + b, 0) / means.length,
        items,
      },
    ],
    at: new Date().toISOString(),
  };
}

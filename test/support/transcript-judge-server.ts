import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { z } from 'zod';
import type { NextStateRole } from '../../core/chat-messages.js';
import { buildBinaryJudgeMessages, buildHintJudgeMessages } from '../../core/judge-prompts.js';

/**
 * A STAND-IN for an LLM judge (a test double; the rule judge, fake-judge-server.ts, votes on keywords). It
 * answers OpenAI chat completions the way a judge model would after reading the whole prompt: it takes the
 * prompt apart with the project's own prompt builders (core/judge-prompts.ts, so a prompt the builders did not
 * make is refused with a 400), and decides from the whole next-state message, as the test describes it:
 * `verdicts` maps each next-state message the test expects, in full, to what a judge reading it would conclude.
 * A message it was not told about gets a neutral \boxed{0} (hint judge: \boxed{-1}) and is noted as unexpected.
 * Every prompt it reads is kept in `judged`, so a test checks which next state reached the judge for which
 * response, not just which score came out.
 */
export interface Verdict {
  score: 1 | -1 | 0;
  /** The hint the hint judge gives (only with score 1). */
  hint?: string;
}

export interface JudgedStep {
  kind: 'eval' | 'hint';
  responseText: string;
  nextStateRole: NextStateRole;
  nextStateText: string;
}

export interface TranscriptJudge {
  url: string;
  /** Every prompt answered, in order. */
  readonly judged: readonly JudgedStep[];
  /** Next-state messages the judge was shown and had no verdict for. */
  readonly unexpected: readonly string[];
  /** Tells the judge what a next-state message means (the whole message, trimmed). */
  expect(nextStateText: string, verdict: Verdict): void;
  /** The next states the judge saw for a response (eval prompts). */
  nextStatesFor(responseText: string): string[];
  close(): Promise<void>;
}

const requestSchema = z.looseObject({
  model: z.string().min(1),
  messages: z.tuple([
    z.object({ role: z.literal('system'), content: z.string() }),
    z.object({ role: z.literal('user'), content: z.string() }),
  ]),
  temperature: z.number().optional(),
  max_tokens: z.number().int().optional(),
  seed: z.number().int().optional(),
});

/** The two halves of a builder's user message around the response and the next state, per role. */
interface PromptShape {
  kind: JudgedStep['kind'];
  role: NextStateRole;
  system: string;
  before: string;
  between: string;
  after: string;
}

const RESPONSE_MARK = '\u0001response\u0001';
const NEXT_MARK = '\u0001next\u0001';

function promptShapes(): PromptShape[] {
  const builders = [
    ['eval', buildBinaryJudgeMessages],
    ['hint', buildHintJudgeMessages],
  ] as const;
  return builders.flatMap(([kind, build]) =>
    (['user', 'tool'] as const).map((role) => {
      const [system, user] = build({
        responseText: RESPONSE_MARK,
        nextStateText: NEXT_MARK,
        nextStateRole: role,
      });
      const text = user?.content ?? '';
      const [before = '', rest = ''] = text.split(RESPONSE_MARK);
      const [between = '', after = ''] = rest.split(NEXT_MARK);
      return { kind, role, system: system?.content ?? '', before, between, after };
    }),
  );
}

function readPrompt(shapes: PromptShape[], system: string, user: string): JudgedStep | null {
  for (const shape of shapes) {
    if (shape.system !== system || !user.startsWith(shape.before) || !user.endsWith(shape.after)) continue;
    const middle = user.slice(shape.before.length, user.length - shape.after.length);
    const split = middle.indexOf(shape.between);
    if (split < 0) continue;
    return {
      kind: shape.kind,
      nextStateRole: shape.role,
      responseText: middle.slice(0, split),
      nextStateText: middle.slice(split + shape.between.length),
    };
  }
  return null;
}

function answer(step: JudgedStep, verdict: Verdict | undefined): string {
  const score = verdict?.score ?? 0;
  if (step.kind === 'eval') return `Having read the whole next state, I conclude: \\boxed{${score}}`;
  if (score === 1 && verdict?.hint)
    return `The next state shows what the response missed. \\boxed{1} [HINT_START]${verdict.hint}[HINT_END]`;
  return 'The next state holds nothing the response could have used. \\boxed{-1}';
}

export async function startTranscriptJudge(
  options: { verdicts?: Record<string, Verdict> } = {},
): Promise<TranscriptJudge> {
  const shapes = promptShapes();
  const verdicts = new Map(Object.entries(options.verdicts ?? {}).map(([text, v]) => [text.trim(), v]));
  const judged: JudgedStep[] = [];
  const unexpected: string[] = [];
  const server: Server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk) => {
      body += chunk;
    });
    req.on('end', () => {
      const refuse = (message: string) => {
        res.writeHead(400, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { message, type: 'invalid_request_error' } }));
      };
      let parsed: z.infer<typeof requestSchema>;
      try {
        parsed = requestSchema.parse(JSON.parse(body));
      } catch (error) {
        return refuse(`not a judge request: ${String(error)}`);
      }
      const [system, user] = parsed.messages;
      const step = readPrompt(shapes, system.content, user.content);
      if (step === null) return refuse('the prompt was not built by core/judge-prompts.ts');
      judged.push(step);
      const verdict = verdicts.get(step.nextStateText.trim());
      if (!verdict) unexpected.push(step.nextStateText);
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          id: `judge-${judged.length}`,
          object: 'chat.completion',
          created: 0,
          model: parsed.model,
          choices: [
            {
              index: 0,
              message: { role: 'assistant', content: answer(step, verdict) },
              finish_reason: 'stop',
            },
          ],
          usage: { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 },
        }),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    judged,
    unexpected,
    expect(nextStateText, verdict) {
      verdicts.set(nextStateText.trim(), verdict);
    },
    nextStatesFor(responseText) {
      return judged
        .filter((step) => step.kind === 'eval' && step.responseText === responseText)
        .map((step) => step.nextStateText);
    },
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

// `openclaw-rl eval --checkpoints A,B`: the flags of a version comparison, checked with zod, and the scorer they
// name: a deterministic `style:<rule>` (core/reply-scorers.ts) or the project's binary judge.
import { readFile } from 'node:fs/promises';
import { basename } from 'node:path';
import { z } from 'zod';
import { OpenAIJudge } from '../activities/judge-client.js';
import { parseEvalSet } from '../core/eval-set.js';
import { buildBinaryJudgeMessages } from '../core/judge-prompts.js';
import { majorityVote, parseJudgeVote } from '../core/judge-votes.js';
import { replyScorer } from '../core/reply-scorers.js';
import { describeZodError } from '../core/training-settings.js';
import { judgeApiKey } from '../security/engine-token.js';
import { configFromFlags } from './cli-config.js';
import { writeVersionsReport } from './eval-report.js';
import { compareVersions, type ReplyScoring, type VersionsReport } from './eval-versions.js';
import { runVersions } from './run-versions.js';

const number = (flag: string) => z.coerce.number({ error: `${flag} must be a number` });

export const compareFlagsSchema = z.object({
  checkpoints: z
    .string()
    .optional()
    .default('')
    .transform((list) =>
      list
        .split(',')
        .map((p) => p.trim())
        .filter((p) => p.length > 0),
    )
    .pipe(z.array(z.string())),
  run: z.string().min(1).optional(),
  versions: z.string().optional(),
  dataDir: z.string().optional(),
  conversations: z.string({ error: '--checkpoints needs --conversations FILE.jsonl (an evaluation set)' }),
  scorer: z
    .string()
    .refine((name) => replyScorer(name) !== null, '--scorer must be a style:<rule> (style:vowels)')
    .optional(),
  samples: number('--samples').pipe(z.number().int().min(1).max(100)).default(3),
  maxTokens: number('--max-tokens').pipe(z.number().int().min(1)).default(64),
  temperature: number('--temperature').pipe(z.number().min(0).max(2)).default(1),
  votes: number('--votes').pipe(z.number().int().min(1)).optional(),
  report: z.string().optional(),
  device: z.enum(['cpu', 'cuda']).optional(),
  judgeUrl: z.string().optional(),
  judgeModel: z.string().optional(),
  judgeApiKey: z.string().optional(),
  judgeApiKeyFile: z.string().optional(),
});
export type CompareFlags = z.input<typeof compareFlagsSchema>;

/** The judge's majority on a reply against the item's `next_user`: 1, 0, −1, or null without a vote. */
export interface JudgeFlags {
  judgeUrl?: string | undefined;
  judgeModel?: string | undefined;
  judgeApiKey?: string | undefined;
  judgeApiKeyFile?: string | undefined;
  votes?: number | undefined;
}

export function judgeScoring(flags: JudgeFlags, env: NodeJS.ProcessEnv): ReplyScoring {
  if (!flags.judgeUrl && !env.OPENCLAW_JUDGE_URL)
    throw new Error(
      'give --scorer style:<rule>, or a judge with --judge-url URL (each version is its own engine)',
    );
  const config = configFromFlags(
    {
      judgeUrl: flags.judgeUrl,
      judgeModel: flags.judgeModel,
      judgeApiKey: flags.judgeApiKey,
      judgeApiKeyFile: flags.judgeApiKeyFile,
    },
    env,
  );
  const judge = new OpenAIJudge({
    baseUrl: config.judge.baseUrl,
    model: config.judge.model,
    apiKey: judgeApiKey(config),
    temperature: config.judge.temperature,
    maxTokens: config.judge.maxTokens ?? 4096,
  });
  const votes = flags.votes ?? config.judge.votes ?? 1;
  return async (reply, item) => {
    if (!item.next_user) throw new Error(`item ${item.id}: the judge needs next_user`);
    const prompt = buildBinaryJudgeMessages({
      responseText: reply,
      nextStateText: item.next_user,
      nextStateRole: item.next_role,
    });
    const replies = await Promise.all(
      Array.from({ length: votes }, (_, seed) => judge.complete(prompt, { seed }).catch(() => null)),
    );
    const majority = majorityVote(replies.map(parseJudgeVote));
    return majority.votes.some((v) => v.score !== null) ? (majority.score as number) : null;
  };
}

/** Scores each checkpoint on the evaluation set and writes the report when asked; the report. */
export async function runCompare(
  raw: Record<string, unknown>,
  env: NodeJS.ProcessEnv = process.env,
  say: (line: string) => void = (line) => console.error(line),
): Promise<VersionsReport> {
  const parsed = compareFlagsSchema.safeParse(raw);
  if (!parsed.success) throw new Error(describeZodError(parsed.error));
  const flags = parsed.data;
  let versions = flags.checkpoints.map((model) => ({ label: basename(model), model }));
  if (flags.run !== undefined) {
    if (versions.length > 0) throw new Error('give --checkpoints or --run, not both');
    const config = configFromFlags({ runId: flags.run, dataDir: flags.dataDir }, env);
    versions = await runVersions(config, flags.run, flags.versions ?? 'all');
  }
  if (versions.length === 0)
    throw new Error('name the versions: --checkpoints DIR,DIR or --run RUN_ID --versions 0,2,4|all');
  const items = parseEvalSet(await readFile(flags.conversations, 'utf8'), flags.conversations);
  const scorer = flags.scorer ? replyScorer(flags.scorer) : null;
  const scoring: ReplyScoring = scorer ? async (reply) => scorer.score(reply) : judgeScoring(flags, env);
  const report = await compareVersions(
    versions,
    items,
    scorer ? scorer.name : 'judge',
    scoring,
    {
      samples: flags.samples,
      maxTokens: flags.maxTokens,
      temperature: flags.temperature,
      ...(flags.device && { device: flags.device }),
    },
    say,
  );
  if (flags.report) {
    const written = await writeVersionsReport(flags.report, report);
    say(`report ${written.json} ${written.html}`);
  }
  return report;
}

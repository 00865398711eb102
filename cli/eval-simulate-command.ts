// `openclaw-rl eval --simulate personas.jsonl`: the flags of a simulated-user evaluation, checked with zod.
import { readFile } from 'node:fs/promises';
import { z } from 'zod';
import { describeZodError } from '../core/training-settings.js';
import { judgeScoring } from './eval-compare-command.js';
import { writeVersionsReport } from './eval-report.js';
import type { VersionsReport } from './eval-versions.js';
import { secretFromFlags } from './secret-flags.js';
import { parsePersonas, runSimulation } from './simulated-users.js';

const number = (flag: string) => z.coerce.number({ error: `${flag} must be a number` });
const url = (flag: string) => z.url({ error: `${flag} must be a URL (http://host:port/v1)` });

export const simulateFlagsSchema = z.object({
  simulate: z.string().min(1),
  userUrl: url('--user-url'),
  userModel: z.string({ error: '--simulate needs --user-model NAME (the model that plays the personas)' }),
  userApiKey: z.string().optional(),
  userApiKeyFile: z.string().optional(),
  policyUrl: url('--policy-url').optional(),
  engineUrl: url('--engine-url').optional(),
  policyModel: z.string().default('default'),
  turns: number('--turns').pipe(z.number().int().min(1).max(100)).default(3),
  maxTokens: number('--max-tokens').pipe(z.number().int().min(1)).default(64),
  temperature: number('--temperature').pipe(z.number().min(0).max(2)).default(1),
  votes: number('--votes').pipe(z.number().int().min(1)).optional(),
  report: z.string().optional(),
  judgeUrl: z.string().optional(),
  judgeModel: z.string().optional(),
  judgeApiKey: z.string().optional(),
  judgeApiKeyFile: z.string().optional(),
});

/** Plays every persona against the policy, the judge scoring each reply; writes the report when asked. */
export async function runSimulateCommand(
  raw: Record<string, unknown>,
  env: NodeJS.ProcessEnv = process.env,
  say: (line: string) => void = (line) => console.error(line),
): Promise<VersionsReport> {
  const parsed = simulateFlagsSchema.safeParse(raw);
  if (!parsed.success) throw new Error(describeZodError(parsed.error));
  const flags = parsed.data;
  const policyUrl = flags.policyUrl ?? (flags.engineUrl && `${flags.engineUrl.replace(/\/+$/, '')}/v1`);
  if (!policyUrl)
    throw new Error('--simulate needs the policy: --policy-url URL/v1 (the gateway) or --engine-url URL');
  const personas = parsePersonas(await readFile(flags.simulate, 'utf8'), flags.simulate);
  const userKey = secretFromFlags('user-api-key', 'OPENCLAW_USER_API_KEY', {
    inline: flags.userApiKey,
    file: flags.userApiKeyFile,
  });
  const report = await runSimulation(
    personas,
    judgeScoring(flags, env),
    {
      user: { baseUrl: flags.userUrl, model: flags.userModel, apiKey: userKey ?? env.OPENCLAW_USER_API_KEY },
      policy: { baseUrl: policyUrl, model: flags.policyModel },
      turns: flags.turns,
      maxTokens: flags.maxTokens,
      temperature: flags.temperature,
    },
    say,
  );
  if (flags.report) {
    const written = await writeVersionsReport(flags.report, report);
    say(`report ${written.json} ${written.html}`);
  }
  return report;
}

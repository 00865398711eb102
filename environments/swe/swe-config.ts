// The swe environment's settings (`options.swe`), with the original's defaults (spec 10.3): one bash command
// per turn, 180 s per command, a 20-turn step limit, observations cut past 10000 characters, 4 GiB and 256
// processes per container, evaluation for up to an hour. Validated with zod at the edge.

import { z } from 'zod';
import { sandboxLimitsSchema } from '../sandbox-limits-schema.js';

export const sweConfigSchema = z.strictObject({
  /** A JSONL file of SWE-bench / SWE-Gym rows served beside the bundled instances (ids must not clash). */
  instancesFile: z.string().min(1).optional(),
  /** Image of a row that names none: SWE-bench's `swebench/sweb.eval.x86_64.*` or SWE-Gym's `xingyaoww/...`. */
  imageNaming: z.enum(['swebench', 'swe-gym']).default('swebench'),
  limits: sandboxLimitsSchema({
    memoryBytes: 4 * 1024 ** 3,
    cpus: 1,
    pids: 256,
    minMemoryBytes: 64 * 1024 ** 2,
    minPids: 16,
  }),
  /** Commands run as this user; unset: as `runAs` says. */
  user: z.string().min(1).optional(),
  /**
   * non-root: the policy's commands run as the image's user when it is not root (the bundled images' `agent`),
   * else as uid 1000 owning `workdir` (SWE-bench's images run as root); image: as the image's user. The
   * evaluation container always runs the row's script as the image's user.
   */
  runAs: z.enum(['non-root', 'image']).default('non-root'),
  /**
   * More folders a task id naming a row file (`rows.jsonl#<id>`, `row.json`) may lie in, beside the shipped
   * instances' folder and the folder of `instancesFile`; a row file anywhere else is refused.
   */
  taskFileRoots: z.array(z.string().min(1)).default([]),
  workdir: z.string().startsWith('/').default('/testbed'),
  /** Per bash command (the original's exec timeout). */
  commandTimeoutMs: z.number().int().min(100).default(180_000),
  /** For applying the patch and running the tests in the evaluation container. */
  evalTimeoutMs: z.number().int().min(1_000).default(3_600_000),
  /** Turns the policy is told it has (the "turns left" reminder); match the rollout's maxTurns. */
  stepLimit: z.number().int().min(1).default(20),
  /** Output longer than this is shown as head + tail with a warning (mini-swe-agent's rule). */
  maxOutputChars: z.number().int().min(100).default(10_000),
  /** Runs the listed tests when a row has no test_cmd / eval_script; the test ids are appended. */
  testCommand: z.string().min(1).default('python3 -m pytest -rA -p no:cacheprovider'),
  reward: z
    .strictObject({ resolved: z.number().default(1), unresolved: z.number().default(-1) })
    .prefault({}),
});

export type SweConfig = z.infer<typeof sweConfigSchema>;
export type SweConfigInput = z.input<typeof sweConfigSchema>;

export function parseSweConfig(input: SweConfigInput = {}): SweConfig {
  const parsed = sweConfigSchema.safeParse(input);
  if (!parsed.success) {
    const problems = parsed.error.issues
      .slice(0, 3)
      .map((issue) => `${issue.path.join('.') || '(options)'}: ${issue.message}`)
      .join('; ');
    throw new Error(`invalid swe options: ${problems}`);
  }
  return parsed.data;
}

// One SWE task as SWE-bench / SWE-Gym ship them (a JSONL row): the repository at `base_commit` in /testbed
// of a Docker image, an issue text, and the tests that decide it (FAIL_TO_PASS must pass after the fix,
// PASS_TO_PASS must keep passing). Rows are validated here and turned into `SweInstance`; fields the kind
// does not use (hints_text, created_at, environment_setup_commit, ...) are dropped.

import { z } from 'zod';

/** How an image is named when a row names none (spec 10.3). */
export type ImageNaming = 'swebench' | 'swe-gym';

/** SWE-bench ships test lists as JSON-encoded strings; SWE-Gym and hand-written rows use plain lists. */
const testList = z.preprocess(
  (value) => {
    if (typeof value !== 'string') return value;
    try {
      return JSON.parse(value);
    } catch {
      return value; // left for the array check below to reject with a clear message
    }
  },
  z.array(z.string().min(1), 'expected a list of test ids (a JSON list or a JSON-encoded string of one)'),
);

const optionalText = z
  .string()
  .nullish()
  .transform((value) => (value === null || value === undefined || value.trim() === '' ? undefined : value));

export const sweInstanceRowSchema = z
  .object({
    instance_id: z
      .string()
      .regex(
        /^[A-Za-z0-9._-]{1,200}$/,
        'use 1-200 letters, digits, ".", "_" or "-" (e.g. "owner__repo-123")',
      ),
    repo: z.string().min(1),
    base_commit: z.string().regex(/^[0-9a-f]{7,40}$/, 'expected a git commit hash'),
    problem_statement: z.string().min(1),
    FAIL_TO_PASS: testList,
    PASS_TO_PASS: testList.default([]),
    version: z.union([z.string(), z.number()]).nullish(),
    /** The image to run; SWE-Gym rows may call it `docker_image`. */
    image_name: optionalText,
    docker_image: optionalText,
    /** The test command; the test ids are appended, or replace `{tests}` where it appears. */
    test_cmd: optionalText,
    /** A complete evaluation script (SWE-Gym style): run instead of the test command. */
    eval_script: optionalText,
    /** Tests added by the fix (SWE-bench): applied in the evaluation container after the model's patch. */
    test_patch: optionalText,
    /** The reference fix; not shown to the policy. */
    patch: optionalText,
  })
  .refine((row) => row.FAIL_TO_PASS.length + row.PASS_TO_PASS.length > 0, {
    message: 'FAIL_TO_PASS and PASS_TO_PASS are both empty: nothing would decide the task',
    path: ['FAIL_TO_PASS'],
  });

export type SweInstanceRow = z.input<typeof sweInstanceRowSchema>;

/** What `EnvTask.data` holds for the swe kind. */
export interface SweInstance {
  instanceId: string;
  repo: string;
  baseCommit: string;
  problemStatement: string;
  failToPass: string[];
  passToPass: string[];
  image: string;
  testCommand?: string;
  evalScript?: string;
  testPatch?: string;
  goldPatch?: string;
}

/** The image a row names, or the SWE-bench / SWE-Gym image of its instance id. */
export function instanceImage(instanceId: string, naming: ImageNaming): string {
  if (naming === 'swe-gym')
    return `xingyaoww/sweb.eval.x86_64.${instanceId.replaceAll('__', '_s_')}:latest`.toLowerCase();
  return `swebench/sweb.eval.x86_64.${instanceId.replaceAll('__', '_1776_')}:latest`.toLowerCase();
}

/** Validates one row; `where` names it in errors (e.g. "instances.jsonl line 3"). */
export function parseSweInstance(raw: unknown, naming: ImageNaming, where = 'SWE instance'): SweInstance {
  const parsed = sweInstanceRowSchema.safeParse(raw);
  if (!parsed.success) {
    const problems = parsed.error.issues
      .slice(0, 4)
      .map((issue) => `${issue.path.length > 0 ? issue.path.join('.') : '(row)'}: ${issue.message}`)
      .join('; ');
    throw new Error(`${where} is not a valid SWE-bench row: ${problems}`);
  }
  const row = parsed.data;
  return {
    instanceId: row.instance_id,
    repo: row.repo,
    baseCommit: row.base_commit,
    problemStatement: row.problem_statement,
    failToPass: row.FAIL_TO_PASS,
    passToPass: row.PASS_TO_PASS,
    image: row.image_name ?? row.docker_image ?? instanceImage(row.instance_id, naming),
    ...(row.test_cmd !== undefined && { testCommand: row.test_cmd }),
    ...(row.eval_script !== undefined && { evalScript: row.eval_script }),
    ...(row.test_patch !== undefined && { testPatch: row.test_patch }),
    ...(row.patch !== undefined && { goldPatch: row.patch }),
  };
}

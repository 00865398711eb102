// OSWorld's task JSON (`{id, snapshot, instruction, source, config, related_apps, evaluator}`), validated with
// zod, and the part of it this project can run in a desktop container: the config steps that act inside the
// container or copy local files, and evaluators whose results are read with commands or files in it. Anything
// else (VM snapshots aside, which are ignored: every episode starts from a fresh container) is rejected with an
// error that names the unsupported config type, result type or function, so a user's data set fails early.

import { z } from 'zod';

/** A command as OSWorld writes it: an argv list, or a string (run by `sh -c` when `shell` is true or it is a string). */
const command = z.union([z.string().min(1), z.array(z.string()).min(1)]);

/** A file the task brings: a path on this machine (absolute, `file://`, or relative to the task file). */
const localSource = z
  .string()
  .min(1)
  .refine((url) => !/^[a-z][a-z0-9+.-]*:\/\//i.test(url) || url.startsWith('file://'), {
    message:
      'only local files are supported here (an absolute path, a file:// URL, or a path relative to the task file); nothing can be downloaded',
  });

const absoluteContainerPath = z.string().regex(/^\//, 'must be an absolute path inside the container');

const configParameters = {
  /** Starts an application detached; reset then waits for its window (class or name matching `window`, default the program's name). */
  launch: z.looseObject({
    command,
    shell: z.boolean().optional(),
    window: z.string().min(1).optional(),
  }),
  execute: z.looseObject({ command, shell: z.boolean().optional() }),
  command: z.looseObject({ command, shell: z.boolean().optional() }),
  sleep: z.looseObject({ seconds: z.number().min(0).max(600) }),
  download: z.looseObject({
    files: z.array(z.looseObject({ url: localSource, path: absoluteContainerPath })).min(1),
  }),
  /** Opens a file with the desktop's opener (`xdg-open`); the bundled image has none, see docs/environments/gui.md. */
  open: z.looseObject({ path: absoluteContainerPath }),
  activate_window: z.looseObject({
    window_name: z.string().min(1),
    strict: z.boolean().optional(),
    by_class: z.boolean().optional(),
  }),
} as const;

export type ConfigStepType = keyof typeof configParameters;
export const SUPPORTED_CONFIG_TYPES = Object.keys(configParameters) as ConfigStepType[];

export type ConfigStep = {
  [T in ConfigStepType]: { type: T; parameters: z.infer<(typeof configParameters)[T]> };
}[ConfigStepType];

/** Parses `{type, parameters}` with the schema of its type; an unknown type is an error naming it. */
function typed<Schemas extends Record<string, z.ZodType>>(schemas: Schemas, what: string, field: string) {
  return z.looseObject({ type: z.string().min(1) }).transform((raw, ctx) => {
    const record = raw as Record<string, unknown>;
    const schema = schemas[raw.type];
    if (schema === undefined) {
      ctx.addIssue({
        code: 'custom',
        path: ['type'],
        message: `${what} "${raw.type}" is not supported here (supported: ${Object.keys(schemas).join(', ')})`,
      });
      return z.NEVER;
    }
    const parsed = schema.safeParse(field === '' ? record : (record[field] ?? {}));
    if (!parsed.success) {
      for (const issue of parsed.error.issues) {
        ctx.addIssue({
          code: 'custom',
          path: field === '' ? issue.path : [field, ...issue.path],
          message: `${what} "${raw.type}": ${issue.message}`,
        });
      }
      return z.NEVER;
    }
    return { type: raw.type, ...(field === '' ? (parsed.data as object) : { [field]: parsed.data }) };
  });
}

export const configStepSchema = typed(configParameters, 'config type', 'parameters') as unknown as z.ZodType<
  ConfigStep,
  unknown
>;

const getterFields = {
  /** stdout of a command run in the container (as the sandbox user, DISPLAY set). */
  vm_command_line: z.looseObject({ command, shell: z.boolean().optional() }),
  /** The text of a file in the container. */
  vm_file: z.looseObject({ path: absoluteContainerPath }),
  /** Values written in the task (`rules` for exact_match and check_include_exclude). */
  rule: z.looseObject({ rules: z.record(z.string(), z.unknown()) }),
  /** The text of a file the task brings (OSWorld downloads these; here they must be local). */
  cloud_file: z.looseObject({ path: localSource }),
  local_file: z.looseObject({ path: localSource }),
} as const;

export type GetterType = keyof typeof getterFields;
export type Getter = {
  [T in GetterType]: { type: T } & z.infer<(typeof getterFields)[T]>;
}[GetterType];

const getterSchema = typed(getterFields, 'evaluator result type', '') as unknown as z.ZodType<
  Getter,
  unknown
>;

/** The metric functions implemented in evaluator-funcs.ts. */
export const SUPPORTED_FUNCS = [
  'exact_match',
  'check_include_exclude',
  'compare_text_file',
  'infeasible',
] as const;
export type EvaluatorFunc = (typeof SUPPORTED_FUNCS)[number];

const funcName = z.string().refine((name) => (SUPPORTED_FUNCS as readonly string[]).includes(name), {
  error: (issue) =>
    `evaluator func "${String(issue.input)}" is not supported here (supported: ${SUPPORTED_FUNCS.join(', ')})`,
});

/** A value or a list of them (OSWorld writes both), always parsed as a list so errors point into it. */
const oneOrMany = <T extends z.ZodType>(schema: T) =>
  z.preprocess((value) => (Array.isArray(value) ? value : [value]), z.array(schema).min(1));

const evaluatorSchema = z
  .looseObject({
    func: oneOrMany(funcName),
    result: oneOrMany(getterSchema).optional(),
    expected: oneOrMany(getterSchema).optional(),
    options: oneOrMany(z.record(z.string(), z.unknown())).optional(),
    conj: z.enum(['and', 'or']).default('and'),
    postconfig: z.array(configStepSchema).default([]),
  })
  .transform((evaluator, ctx) => {
    const funcs = evaluator.func as EvaluatorFunc[];
    const results = evaluator.result ?? [];
    const expecteds = evaluator.expected ?? [];
    const options = evaluator.options ?? [];
    const checks: EvaluatorCheck[] = [];
    for (const [index, func] of funcs.entries()) {
      const where = funcs.length > 1 ? `func[${index}] ${func}` : func;
      if (func === 'infeasible') {
        checks.push({ func, result: null, expected: null, options: {} });
        continue;
      }
      const result = results[funcs.length > 1 ? index : 0];
      const expected = expecteds[funcs.length > 1 ? index : 0];
      if (result === undefined || expected === undefined) {
        ctx.addIssue({ code: 'custom', message: `${where} needs a result and an expected value` });
        return z.NEVER;
      }
      checks.push({ func, result, expected, options: options[funcs.length > 1 ? index : 0] ?? {} });
    }
    return { checks, conj: evaluator.conj, postconfig: evaluator.postconfig };
  });

export interface EvaluatorCheck {
  func: EvaluatorFunc;
  /** What the episode produced; null for `infeasible` (decided by the last action). */
  result: Getter | null;
  expected: Getter | null;
  /** The function's options (compare_text_file: ignore_blanks, ignore_case). */
  options: Record<string, unknown>;
}

export const osworldTaskSchema = z.looseObject({
  id: z.string().regex(/^[A-Za-z0-9._-]{1,128}$/, 'use 1-128 letters, digits, ".", "_" or "-"'),
  /** The VM snapshot OSWorld restores first; ignored here (every episode gets a fresh container). */
  snapshot: z.string().optional(),
  instruction: z.string().min(1),
  source: z.string().optional(),
  config: z.array(configStepSchema).default([]),
  related_apps: z.array(z.string()).default([]),
  evaluator: evaluatorSchema,
});

export type OsworldTask = z.infer<typeof osworldTaskSchema>;
export type OsworldEvaluator = OsworldTask['evaluator'];

/** Validates one task; the error names the file and every problem found. */
export function parseOsworldTask(raw: unknown, source: string): OsworldTask {
  const parsed = osworldTaskSchema.safeParse(raw);
  if (!parsed.success) throw new Error(`invalid gui task ${source}:\n${z.prettifyError(parsed.error)}`);
  return parsed.data;
}

// A terminal-bench task.yaml: the instruction (or the older `descriptions: [{key: base, description}]` list),
// the agent and test timeouts, the result parser (pytest only), and optionally an image to run. Fields this
// project does not use (author_email, difficulty, tags, category, ...) are accepted and ignored; the ones it
// uses are checked with zod, and errors name the file and the field.

import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { describeZodError } from '../../core/training-settings.js';

/** terminal-bench's defaults when a task leaves the timeouts out. */
export const DEFAULT_AGENT_TIMEOUT_SEC = 360;
export const DEFAULT_TEST_TIMEOUT_SEC = 60;

const taskYamlSchema = z
  .looseObject({
    instruction: z.string().trim().min(1).optional(),
    descriptions: z
      .array(z.looseObject({ key: z.string(), description: z.string().trim().min(1) }))
      .min(1)
      .optional(),
    max_agent_timeout_sec: z.number().positive().default(DEFAULT_AGENT_TIMEOUT_SEC),
    max_test_timeout_sec: z.number().positive().default(DEFAULT_TEST_TIMEOUT_SEC),
    parser_name: z.literal('pytest', { error: 'only the "pytest" parser is supported' }).default('pytest'),
    /** An image to run the task in, as it is (terminal-bench: `docker_image`; `image` is accepted too). */
    docker_image: z.string().min(1).optional(),
    image: z.string().min(1).optional(),
    /** Who runs setup.sh at reset (this project's addition): the sandbox's user (default) or root. */
    setup_user: z.enum(['agent', 'root']).default('agent'),
    difficulty: z.string().optional(),
    tags: z.array(z.string()).optional(),
  })
  .refine((yaml) => yaml.instruction !== undefined || yaml.descriptions !== undefined, {
    message: 'needs `instruction` or `descriptions: [{key: base, description: ...}]`',
  });

/** What the terminal kind takes from a task.yaml. */
export interface TaskYaml {
  instruction: string;
  maxAgentTimeoutSec: number;
  maxTestTimeoutSec: number;
  parser: 'pytest';
  /** The image named by the task, if any. */
  image: string | null;
  /** `agent`: the image's user (the default image's `agent`); `root`: root, without capabilities. */
  setupUser: 'agent' | 'root';
  difficulty: string | null;
  tags: string[];
}

/** Parses the text of a task.yaml; `source` (its path) is named in errors. */
export function parseTaskYaml(text: string, source: string): TaskYaml {
  let raw: unknown;
  try {
    raw = parseYaml(text);
  } catch (error) {
    throw new Error(`${source} is not valid YAML: ${(error as Error).message.split('\n')[0]}`);
  }
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw))
    throw new Error(`${source} must be a YAML mapping (instruction: ..., max_test_timeout_sec: ...)`);
  const parsed = taskYamlSchema.safeParse(raw);
  if (!parsed.success) throw new Error(`${source}: ${describeZodError(parsed.error)}`);
  const yaml = parsed.data;
  const base = yaml.descriptions?.find((entry) => entry.key === 'base') ?? yaml.descriptions?.[0];
  return {
    instruction: (yaml.instruction ?? base?.description ?? '').trim(),
    maxAgentTimeoutSec: yaml.max_agent_timeout_sec,
    maxTestTimeoutSec: yaml.max_test_timeout_sec,
    parser: yaml.parser_name,
    image: yaml.docker_image ?? yaml.image ?? null,
    setupUser: yaml.setup_user,
    difficulty: yaml.difficulty ?? null,
    tags: yaml.tags ?? [],
  };
}

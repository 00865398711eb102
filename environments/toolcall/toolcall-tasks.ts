// The toolcall tasks: math problems with a short exact answer (tasks.json ships 30 written for this project;
// a user's data set has the same shape). Validated once when loaded.

import { readFile } from 'node:fs/promises';
import { z } from 'zod';

export const toolcallTaskSchema = z.strictObject({
  id: z.string().regex(/^[A-Za-z0-9._-]{1,128}$/, 'use 1-128 letters, digits, ".", "_" or "-"'),
  problem: z.string().min(1),
  /** The label: compared with the last `\boxed{}` of the final answer for mathematical equivalence. */
  answer: z.string().min(1),
});

export type ToolcallTask = z.infer<typeof toolcallTaskSchema>;

/** What `EnvTask.data` holds for this kind. */
export interface ToolcallTaskData {
  problem: string;
  answer: string;
}

const BUNDLED_TASKS = new URL('./tasks.json', import.meta.url);

/** Reads and validates a task file (a JSON array); ids must be unique. */
export async function readToolcallTasks(path: string | URL = BUNDLED_TASKS): Promise<ToolcallTask[]> {
  const tasks = z.array(toolcallTaskSchema).parse(JSON.parse(await readFile(path, 'utf8')));
  const seen = new Set<string>();
  for (const task of tasks) {
    if (seen.has(task.id)) throw new Error(`duplicate toolcall task id ${task.id} in ${String(path)}`);
    seen.add(task.id);
  }
  return tasks;
}

// Where gui tasks come from: the tasks written for this project (environments/gui/tasks/*.json), a user's
// OSWorld examples folder (`tasksDir`: `<dir>/<domain>/<id>.json`, `<dir>/examples/<domain>/<id>.json` or flat
// `<dir>/<id>.json`), or one task file named by its path as the task id. Every file is validated when read;
// a folder scan keeps the tasks this project can run and says why it left out each of the others.

import { readdir, readFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type OsworldTask, parseOsworldTask } from './osworld-task.js';

/** What `EnvTask.data` holds for this kind. */
export interface GuiTaskData {
  task: OsworldTask;
  /** The task file; local files the task names are relative to its folder. */
  path: string;
}

export const BUNDLED_TASKS_DIR = fileURLToPath(new URL('./tasks/', import.meta.url));

export async function readGuiTaskFile(path: string): Promise<GuiTaskData> {
  const absolute = resolve(path);
  let raw: unknown;
  try {
    raw = JSON.parse(await readFile(absolute, 'utf8'));
  } catch (error) {
    throw new Error(`cannot read gui task ${absolute}: ${(error as Error).message}`, { cause: error });
  }
  return { task: parseOsworldTask(raw, absolute), path: absolute };
}

/** The folder local paths of a task are resolved against. */
export function taskBaseDir(data: GuiTaskData): string {
  return dirname(data.path);
}

export interface GuiTaskScan {
  /** Runnable tasks by id. */
  tasks: Map<string, GuiTaskData>;
  /** Task files that cannot run here (unsupported config types or evaluators), with the reason. */
  rejected: { path: string; reason: string }[];
}

/** Reads every task file under `dir` (three levels deep at most); meta files (not task objects) are skipped. */
export async function scanGuiTasks(dir: string): Promise<GuiTaskScan> {
  const scan: GuiTaskScan = { tasks: new Map(), rejected: [] };
  for (const path of await jsonFiles(resolve(dir), 3)) {
    let raw: unknown;
    try {
      raw = JSON.parse(await readFile(path, 'utf8'));
    } catch (error) {
      scan.rejected.push({ path, reason: `not JSON: ${(error as Error).message}` });
      continue;
    }
    if (!looksLikeTask(raw)) continue; // e.g. OSWorld's test_all.json (domain → ids)
    try {
      const task = parseOsworldTask(raw, path);
      const seen = scan.tasks.get(task.id);
      if (seen !== undefined) throw new Error(`duplicate gui task id ${task.id} (also in ${seen.path})`);
      scan.tasks.set(task.id, { task, path });
    } catch (error) {
      scan.rejected.push({ path, reason: (error as Error).message });
    }
  }
  return scan;
}

function looksLikeTask(raw: unknown): boolean {
  return typeof raw === 'object' && raw !== null && 'instruction' in raw && 'evaluator' in raw;
}

async function jsonFiles(dir: string, depth: number): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true });
  const files: string[] = [];
  for (const entry of entries.sort((a, b) => a.name.localeCompare(b.name))) {
    const path = join(dir, entry.name);
    if (entry.isFile() && entry.name.endsWith('.json')) files.push(path);
    else if (entry.isDirectory() && depth > 1) files.push(...(await jsonFiles(path, depth - 1)));
  }
  return files;
}

/** A task id that names a task file rather than a task of the loaded folders. */
export function isTaskPath(id: string): boolean {
  return id.endsWith('.json');
}

// Terminal tasks are terminal-bench task folders: task.yaml, run-tests.sh, tests/ (pytest files), and
// optionally a Dockerfile, setup.sh (run at reset) and solution.sh (the reference solution). A task id is
// either a task's name, looked up in the configured tasks folder and then among the tasks bundled with this
// project (environments/terminal/tasks/), or the absolute path of any task folder.

import { readdir, readFile, stat } from 'node:fs/promises';
import { basename, isAbsolute, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseTaskYaml, type TaskYaml } from './task-yaml.js';

export const BUNDLED_TASKS_DIR = fileURLToPath(new URL('./tasks', import.meta.url));

const TASK_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

/** What `EnvTask.data` holds for this kind. */
export interface TerminalTaskData extends TaskYaml {
  /** The folder's name, shown to the policy as "Task name". */
  name: string;
  /** Absolute path of the task folder (read again at evaluation for run-tests.sh and tests/). */
  folder: string;
  hasDockerfile: boolean;
  hasSetup: boolean;
  hasSolution: boolean;
  hasTestsDir: boolean;
}

async function kindOf(path: string): Promise<'file' | 'dir' | null> {
  try {
    const info = await stat(path);
    return info.isDirectory() ? 'dir' : info.isFile() ? 'file' : null;
  } catch {
    return null;
  }
}

/** Reads and checks one task folder; errors say what is missing or wrong, and where. */
export async function readTerminalTaskFolder(folder: string): Promise<TerminalTaskData> {
  const path = resolve(folder);
  if ((await kindOf(path)) !== 'dir') throw new Error(`terminal task folder ${path} does not exist`);
  const yamlPath = join(path, 'task.yaml');
  if ((await kindOf(yamlPath)) !== 'file')
    throw new Error(`${path} has no task.yaml: not a terminal-bench task folder`);
  const yaml = parseTaskYaml(await readFile(yamlPath, 'utf8'), yamlPath);
  if ((await kindOf(join(path, 'run-tests.sh'))) !== 'file')
    throw new Error(`${path} has no run-tests.sh (the script that runs the task's tests)`);
  return {
    ...yaml,
    name: basename(path),
    folder: path,
    hasDockerfile: (await kindOf(join(path, 'Dockerfile'))) === 'file',
    hasSetup: (await kindOf(join(path, 'setup.sh'))) === 'file',
    hasSolution: (await kindOf(join(path, 'solution.sh'))) === 'file',
    hasTestsDir: (await kindOf(join(path, 'tests'))) === 'dir',
  };
}

/** Where task names are looked up: the user's tasks folder first, then the bundled tasks. */
export class TerminalTaskCatalog {
  private readonly dirs: string[];

  constructor(options: { tasksDir?: string; bundledDir?: string } = {}) {
    this.dirs = [
      ...(options.tasksDir !== undefined ? [resolve(options.tasksDir)] : []),
      options.bundledDir ?? BUNDLED_TASKS_DIR,
    ];
  }

  /** The folder of a task id (a name or an absolute path). */
  async folderOf(id: string): Promise<string> {
    if (isAbsolute(id)) return id;
    if (!TASK_NAME.test(id))
      throw new Error(`"${id}" is neither a task name (letters, digits, ".", "_", "-") nor an absolute path`);
    for (const dir of this.dirs) {
      const folder = join(dir, id);
      if ((await kindOf(folder)) === 'dir') return folder;
    }
    throw new Error(`no terminal task "${id}" in ${this.dirs.join(' or ')}`);
  }

  async load(id: string): Promise<TerminalTaskData> {
    return readTerminalTaskFolder(await this.folderOf(id));
  }

  /** Task names in every folder (a name in the user's folder hides a bundled one), sorted. */
  async list(): Promise<string[]> {
    const names = new Set<string>();
    for (const dir of this.dirs) {
      const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
      for (const entry of entries) {
        if (!entry.isDirectory() || !TASK_NAME.test(entry.name)) continue;
        if ((await kindOf(join(dir, entry.name, 'task.yaml'))) === 'file') names.add(entry.name);
      }
    }
    return [...names].sort();
  }
}

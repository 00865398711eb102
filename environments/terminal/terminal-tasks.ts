// Terminal tasks are terminal-bench task folders: task.yaml, tests/ (pytest files), and optionally
// run-tests.sh (terminal-bench's default one when absent), a Dockerfile, setup.sh (run at reset) and
// solution.sh (the reference solution). A task id is either a task's name, looked up in the configured tasks
// folder and then among the tasks bundled with this project (environments/terminal/tasks/), or the absolute
// path of any task folder. Every file of a task is read from inside its folder: a link that leads out of it
// is refused, naming the file, so a task cannot copy the env host's own files (~/.ssh, .env) into a sandbox.

import { readdir, readFile, stat } from 'node:fs/promises';
import { basename, isAbsolute, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { confinedTaskPath } from '../task-files.js';
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
  /** false: terminal-bench's default run-tests.sh runs the tests (environments/terminal/test-runner/). */
  hasRunTests: boolean;
}

async function kindOf(path: string): Promise<'file' | 'dir' | null> {
  try {
    const info = await stat(path);
    return info.isDirectory() ? 'dir' : info.isFile() ? 'file' : null;
  } catch {
    return null;
  }
}

/** The real path of a file of the task folder, refused when it resolves outside it; null when absent. */
function confinedPath(folder: string, name: string): Promise<string | null> {
  return confinedTaskPath(folder, name, name);
}

/** Reads a file of the task folder (refused when it resolves outside the folder). */
export async function readTaskFile(task: TerminalTaskData, name: string): Promise<Buffer> {
  const path = await confinedPath(task.folder, name);
  if (path === null) throw new Error(`terminal task ${task.folder} has no ${name}`);
  return readFile(path);
}

/** Every file under `dir` of the task folder, as paths relative to `dir`, each checked to stay inside. */
export async function taskFilesUnder(task: TerminalTaskData, dir: string): Promise<string[]> {
  const base = await confinedPath(task.folder, dir);
  if (base === null) return [];
  const out: string[] = [];
  for (const entry of await readdir(base, { recursive: true, withFileTypes: true })) {
    if (entry.isDirectory()) continue;
    const name = relative(base, join(entry.parentPath, entry.name));
    const real = await confinedPath(task.folder, join(dir, name));
    if (real !== null && (await kindOf(real)) === 'file') out.push(name);
  }
  return out.sort();
}

/** Reads and checks one task folder; errors say what is missing or wrong, and where. */
export async function readTerminalTaskFolder(folder: string): Promise<TerminalTaskData> {
  const path = resolve(folder);
  if ((await kindOf(path)) !== 'dir') throw new Error(`terminal task folder ${path} does not exist`);
  const kind = async (name: string) => {
    const real = await confinedPath(path, name);
    return real === null ? null : kindOf(real);
  };
  const yamlPath = join(path, 'task.yaml');
  if ((await kind('task.yaml')) !== 'file')
    throw new Error(`${path} has no task.yaml: not a terminal-bench task folder`);
  const yaml = parseTaskYaml(await readFile(yamlPath, 'utf8'), yamlPath);
  return {
    ...yaml,
    name: basename(path),
    folder: path,
    hasDockerfile: (await kind('Dockerfile')) === 'file',
    hasSetup: (await kind('setup.sh')) === 'file',
    hasSolution: (await kind('solution.sh')) === 'file',
    hasTestsDir: (await kind('tests')) === 'dir',
    hasRunTests: (await kind('run-tests.sh')) === 'file',
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

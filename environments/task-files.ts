// A task's own files, confined to its folder: a name (or file:// URL) from a task file must resolve inside the
// task's folder, through links too, so a task cannot copy the env host's own files (~/.ssh, .env, another
// tenant's data) into a sandbox or read them into an evaluation. Refusals name the task field.

import { lstat, realpath } from 'node:fs/promises';
import { isAbsolute, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

/** A task names a file outside its folder. */
export class TaskFileOutsideFolderError extends Error {
  constructor(
    readonly field: string,
    readonly path: string,
    readonly folder: string,
  ) {
    super(
      `${field}: ${path} is outside the task's folder ${folder}; a task may only use files from its own folder`,
    );
    this.name = 'TaskFileOutsideFolderError';
  }
}

const inside = (root: string, path: string) => path === root || path.startsWith(`${root}${sep}`);

/**
 * The real path of `name` (relative to the folder, absolute, or a file:// URL) when it lies inside `folder`;
 * null when it does not exist. `field` names where the task gave it (e.g. `config[2].parameters.files[0].url`).
 */
export async function confinedTaskPath(folder: string, name: string, field: string): Promise<string | null> {
  const root = await realpath(folder);
  const given = name.startsWith('file://') ? fileURLToPath(name) : name;
  const path = isAbsolute(given) ? resolve(given) : resolve(root, given);
  if (!inside(root, path) && !inside(resolve(folder), path))
    throw new TaskFileOutsideFolderError(field, path, root);
  let real: string;
  try {
    real = await realpath(path);
  } catch {
    // A dangling link is refused like one that leads out; a missing file is simply absent.
    if (
      await lstat(path).then(
        () => true,
        () => false,
      )
    )
      throw new TaskFileOutsideFolderError(field, `${path} (a link to nothing)`, root);
    return null;
  }
  if (!inside(root, real)) throw new TaskFileOutsideFolderError(field, `${path} (leads to ${real})`, root);
  return real;
}

/** A task file named outside every folder tasks may come from. */
export class TaskFileOutsideRootsError extends Error {
  constructor(
    readonly path: string,
    readonly roots: readonly string[],
    readonly setting: string,
  ) {
    super(
      `task id: ${path} is not inside ${setting} (${roots.join(', ')}); refused: a task file must lie in one of these folders (add its folder to ${setting})`,
    );
    this.name = 'TaskFileOutsideRootsError';
  }
}

/**
 * The real path of the task file `path` (absolute, or relative to the working directory) when it lies inside
 * one of `roots`, links followed; null when it would but does not exist. `setting` names the option that
 * adds roots, for the refusal. Roots that do not exist hold nothing.
 */
export async function taskFileInRoots(
  roots: readonly string[],
  path: string,
  setting: string,
): Promise<string | null> {
  const absolute = resolve(path);
  for (const root of roots) {
    try {
      return await confinedTaskPath(root, absolute, 'task id');
    } catch (error) {
      if (error instanceof TaskFileOutsideFolderError) continue;
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') continue; // the root itself is missing
      throw error;
    }
  }
  throw new TaskFileOutsideRootsError(absolute, roots, setting);
}

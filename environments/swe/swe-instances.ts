// Where swe instances come from: the bundled fixtures (instances.jsonl, rows for the images under images/),
// a user's JSONL file named in the options, or the task id itself — `path/to/rows.jsonl#<instance_id>` or
// `path/to/row.json` (one row) — so a user can run their own SWE-bench / SWE-Gym rows without configuring
// anything. Paths are read on the env host that loads the task.

import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type ImageNaming, parseSweInstance, type SweInstance } from './swe-instance.js';

export const BUNDLED_INSTANCES = fileURLToPath(new URL('./instances.jsonl', import.meta.url));

/** Reads and validates a JSONL file of rows (blank lines skipped); instance ids must be unique. */
export async function readSweInstances(path: string, naming: ImageNaming): Promise<SweInstance[]> {
  const text = await readText(path);
  const instances: SweInstance[] = [];
  const seen = new Set<string>();
  for (const [index, line] of text.split('\n').entries()) {
    if (line.trim() === '') continue;
    const where = `${path} line ${index + 1}`;
    const instance = parseSweInstance(parseJson(line, where), naming, where);
    if (seen.has(instance.instanceId))
      throw new Error(`${where}: instance ${instance.instanceId} appears twice`);
    seen.add(instance.instanceId);
    instances.push(instance);
  }
  return instances;
}

/** A task id that names a file: `rows.jsonl#<instance_id>` or a one-row `row.json`; null for a plain id. */
export function taskFileReference(taskId: string): { path: string; instanceId: string | null } | null {
  const hash = taskId.lastIndexOf('#');
  if (hash > 0 && /\.jsonl?$/.test(taskId.slice(0, hash)))
    return { path: taskId.slice(0, hash), instanceId: taskId.slice(hash + 1) };
  if (taskId.endsWith('.json')) return { path: taskId, instanceId: null };
  return null;
}

/** The instance a file task id names. */
export async function loadInstanceFromFile(
  reference: { path: string; instanceId: string | null },
  naming: ImageNaming,
): Promise<SweInstance> {
  if (reference.instanceId === null) {
    return parseSweInstance(
      parseJson(await readText(reference.path), reference.path),
      naming,
      reference.path,
    );
  }
  const instances = await readSweInstances(reference.path, naming);
  const found = instances.find((instance) => instance.instanceId === reference.instanceId);
  if (found === undefined)
    throw new Error(
      `${reference.path} has no instance ${reference.instanceId} (it has ${instances
        .slice(0, 5)
        .map((instance) => instance.instanceId)
        .join(', ')}${instances.length > 5 ? ', ...' : ''})`,
    );
  return found;
}

async function readText(path: string): Promise<string> {
  try {
    return await readFile(resolve(path), 'utf8');
  } catch (error) {
    throw new Error(`cannot read SWE instances from ${path}: ${(error as Error).message}`);
  }
}

function parseJson(text: string, where: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    // The parser's message quotes the text: a wrong file's content would end up in workflow histories.
    throw new Error(`${where} is not valid JSON`);
  }
}

import { execFile } from 'node:child_process';
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils.js';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { findTemporalExecutable } from '../../cli/temporal-cli.js';

const execFileAsync = promisify(execFile);

export const historiesDir = fileURLToPath(new URL('../histories/', import.meta.url));

/**
 * Writes a workflow's history (its latest run, or `runId`) under test/histories/<name>.json in the JSON the
 * Temporal CLI and UI export (`temporal workflow show --output json`), which is what a user would hand us from
 * production too.
 */
export async function saveHistory(
  env: TestWorkflowEnvironment,
  workflowId: string,
  name: string,
  runId?: string,
): Promise<void> {
  const cli = findTemporalExecutable();
  if (cli.type !== 'existing-path') throw new Error('recording histories needs the temporal CLI');
  const { stdout } = await execFileAsync(cli.path, [
    'workflow',
    'show',
    '--workflow-id',
    workflowId,
    ...(runId ? ['--run-id', runId] : []),
    '--address',
    env.address,
    '--namespace',
    env.namespace ?? 'default',
    '--output',
    'json',
  ]);
  await writeFile(join(historiesDir, `${name}.json`), stdout);
}

export async function loadHistories(): Promise<
  { name: string; history: ReturnType<typeof historyFromJSON> }[]
> {
  const files = (await readdir(historiesDir)).filter((f) => f.endsWith('.json')).sort();
  return Promise.all(
    files.map(async (file) => ({
      name: file.replace(/\.json$/, ''),
      history: historyFromJSON(JSON.parse(await readFile(join(historiesDir, file), 'utf8'))),
    })),
  );
}

// envRolloutWorkflow with the terminal environment in real containers (DockerSandboxProvider) and the scripted
// policy test double: a known-good sequence (the task's reference solution through the shell tools) earns +1, a
// known-bad one (looking around, then claiming success) −1, and both rollouts leave no container behind.

import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RolloutStepRecord, rolloutKeys } from '../../activities/rollout-records.js';
import { DockerSandboxProvider } from '../../environments/docker-sandbox.js';
import { createEnvironmentRegistry } from '../../environments/registry.js';
import { BUNDLED_TASKS_DIR } from '../../environments/terminal/terminal-tasks.js';
import { ensureImage, IMAGE_BUILD_TIMEOUT_MS, rolloutIds } from '../support/sandbox-fixture.js';
import {
  type ScriptedPolicyServer,
  type ScriptedTurn,
  scriptsByTask,
  startScriptedPolicy,
} from '../support/scripted-policy-server.js';
import { connectTestEnvironment } from '../support/temporal.js';
import { startTrack2, type Track2Harness } from './track2-harness.js';

const ids = rolloutIds('terminal-rollout');

describe('envRolloutWorkflow with the terminal environment and a scripted policy', () => {
  let env: TestWorkflowEnvironment;
  let policy: ScriptedPolicyServer;
  let t2: Track2Harness;
  const hostId = `host-${process.pid}-${Date.now().toString(36)}`;

  beforeAll(async () => {
    await ensureImage('openclaw/sandbox-terminal');
    const solution = await readFile(join(BUNDLED_TASKS_DIR, 'csv-summary', 'solution.sh'), 'utf8');
    // Scripts keyed by the task name in the opening user message.
    const scripts: Record<string, ScriptedTurn[]> = {
      'Task name:csv-summary': [
        {
          content: 'I will write the solution script.',
          toolCalls: [
            {
              name: 'shell_write_content_to_file',
              arguments: { file_path: '/tmp/solve.sh', content: solution },
            },
          ],
        },
        {
          toolCalls: [
            {
              name: 'shell_exec',
              arguments: { command: 'bash /tmp/solve.sh && cat /home/agent/summary.json' },
            },
          ],
        },
        { content: 'summary.json is written.' },
      ],
      'Task name:git-first-commit': [
        { toolCalls: [{ name: 'shell_exec', arguments: { command: 'ls -la /home/agent' } }] },
        { toolCalls: [{ name: 'shell_kill_process', arguments: { id: 'main' } }] },
        { content: 'Done.' },
      ],
    };
    env = await connectTestEnvironment();
    policy = await startScriptedPolicy(scriptsByTask(scripts));
    t2 = await startTrack2(env);
    await t2.startEnvHost({
      hostId,
      provider: new DockerSandboxProvider(),
      registry: createEnvironmentRegistry(
        { terminal: { limits: { memoryBytes: 512 * 1024 * 1024, cpus: 1, pids: 128 } } },
        ['terminal'],
      ),
    });
  }, IMAGE_BUILD_TIMEOUT_MS);

  afterAll(async () => {
    await t2?.close();
    await policy?.close();
    await env?.teardown();
    await ids.removeAll();
  });

  const run = (rolloutId: string, taskId: string) =>
    t2.executeRollout({
      rolloutId,
      env: 'terminal',
      taskId,
      policy: { url: policy.url, sampling: { maxNewTokens: 64 } },
      maxTurns: 10,
      contextBudgetTokens: 100_000,
    });

  it('a good sequence (the reference solution through the tools) → COMPLETED, reward 1', async () => {
    const rolloutId = ids.next('good');
    const result = await run(rolloutId, 'csv-summary');
    expect(result).toMatchObject({ rolloutId, status: 'COMPLETED', reward: 1, steps: 3, parseErrors: 0 });
    expect(result.detail).toBe('final answer; 4/4 tests passed (run-tests.sh exit code 0); 2 tool calls');
    expect(result.containerIds).toHaveLength(1);
    const observation = await t2.store.get<{ observation: string }>(rolloutKeys.observation(rolloutId, 1, 0));
    expect(observation?.observation).toMatch(/"top_region": "south"\n\}\n\[exit code: 0\]$/);
    const step0 = await t2.store.get<RolloutStepRecord>(rolloutKeys.step(rolloutId, 0));
    expect(step0?.action).toMatchObject({ kind: 'tools', calls: [{ name: 'shell_write_content_to_file' }] });
    expect(await ids.leftovers()).toEqual([]);
  }, 120_000);

  it('a bad sequence (look around, call a tool that is not offered, claim success) → COMPLETED, reward -1', async () => {
    const rolloutId = ids.next('bad');
    const result = await run(rolloutId, 'git-first-commit');
    expect(result).toMatchObject({ status: 'COMPLETED', reward: -1, steps: 3, parseErrors: 1 });
    expect(result.detail).toMatch(
      /0\/4 tests passed \(run-tests.sh exit code 1\); failing: .*; 1 tool calls$/,
    );
    // A tool the environment does not offer is caught by the rollout loop, before it reaches the container.
    const step1 = await t2.store.get<RolloutStepRecord>(rolloutKeys.step(rolloutId, 1));
    expect(step1?.errorMessages[0]?.content).toMatch(
      /unknown tool "shell_kill_process"; available: shell_exec/,
    );
    expect(await t2.store.get(rolloutKeys.released(rolloutId))).toBeDefined();
    expect(await ids.leftovers()).toEqual([]);
  }, 120_000);
});

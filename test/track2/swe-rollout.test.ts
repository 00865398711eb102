// envRolloutWorkflow with the swe environment, real containers and a scripted policy (TEST DOUBLE of the
// engine): a known-good command sequence earns exactly +1, a regressing one −1, two bash calls in one turn
// are a parse error; afterwards no container of these rollouts is left, the `.eval` ones included.

import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RolloutStepRecord, rolloutKeys } from '../../activities/rollout-records.js';
import { evaluationRolloutId } from '../../activities/rollout-sandboxes.js';
import { DockerSandboxProvider } from '../../environments/docker-sandbox.js';
import { createEnvironmentRegistry } from '../../environments/registry.js';
import { SUBMIT_COMMAND } from '../../environments/swe/swe-patch.js';
import { ensureImage, IMAGE_BUILD_TIMEOUT_MS, rolloutIds } from '../support/sandbox-fixture.js';
import {
  type ScriptedPolicyServer,
  type ScriptedTurn,
  scriptsByTask,
  startScriptedPolicy,
} from '../support/scripted-policy-server.js';
import { connectTestEnvironment } from '../support/temporal.js';
import { startTrack2, type Track2Harness } from './track2-harness.js';

const bash = (command: string, thought = 'THOUGHT: next step.'): ScriptedTurn => ({
  content: thought,
  toolCalls: [{ name: 'bash', arguments: { command } }],
});

// Scripts keyed by a phrase of each instance's problem statement.
const scripts: Record<string, ScriptedTurn[]> = {
  'DateRange drops its last day': [
    bash('grep -n "_day_count" -A2 daterange/ranges.py', 'THOUGHT: find where the days are counted.'),
    bash(
      `sed -i 's/return (self.end - self.start).days$/return (self.end - self.start).days + 1/' daterange/ranges.py`,
      'THOUGHT: both ends belong to the range, so add one day.',
    ),
    bash(SUBMIT_COMMAND, 'THOUGHT: done, submit.'),
  ],
  'Pre-release versions with numeric identifiers': [
    // Compares identifiers by length first: beta.2 < beta.11, but "alpha" now sorts after "beta".
    bash(
      `sed -i 's/return (a > b) - (a < b)/return (len(a) > len(b)) - (len(a) < len(b)) or (a > b) - (a < b)/' minisemver/version.py`,
    ),
    bash(SUBMIT_COMMAND),
  ],
  'Quoted values lose everything': [
    {
      content: 'THOUGHT: two at once.',
      toolCalls: [
        { name: 'bash', arguments: { command: 'ls' } },
        { name: 'bash', arguments: { command: 'pwd' } },
      ],
    },
    bash(SUBMIT_COMMAND),
  ],
};

/** The real Docker provider, noting which rollout ids it made containers for. */
class NotingProvider extends DockerSandboxProvider {
  readonly acquired: string[] = [];
  override acquire(...args: Parameters<DockerSandboxProvider['acquire']>) {
    this.acquired.push(args[1]);
    return super.acquire(...args);
  }
}

describe('envRolloutWorkflow with the swe environment', () => {
  let env: TestWorkflowEnvironment;
  let policy: ScriptedPolicyServer;
  let t2: Track2Harness;
  const ids = rolloutIds('swe-rollout');
  const provider = new NotingProvider();
  const hostId = `swe-host-${process.pid}-${Date.now().toString(36)}`;

  beforeAll(async () => {
    for (const name of ['swe-semver', 'swe-iniconf', 'swe-daterange']) await ensureImage(`openclaw/${name}`);
    env = await connectTestEnvironment();
    policy = await startScriptedPolicy(scriptsByTask(scripts));
    t2 = await startTrack2(env);
    await t2.startEnvHost({
      hostId,
      provider,
      registry: createEnvironmentRegistry(
        {
          swe: {
            limits: { memoryBytes: 512 * 1024 * 1024, cpus: 1, pids: 128 },
            commandTimeoutMs: 30_000,
            evalTimeoutMs: 60_000,
            stepLimit: 6,
          },
        },
        ['swe'],
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
      env: 'swe',
      taskId,
      policy: { url: policy.url, sampling: { maxNewTokens: 1024 } },
      maxTurns: 6,
      contextBudgetTokens: 100_000,
    });

  it('a good sequence (read, sed fix, submit) → COMPLETED, reward +1, no container left', async () => {
    const rolloutId = ids.next('good');
    const result = await run(rolloutId, 'openclaw__daterange-1');
    expect(result).toMatchObject({
      status: 'COMPLETED',
      reward: 1,
      steps: 3,
      parseErrors: 0,
      hostIds: [hostId],
    });
    expect(result.containerIds).toHaveLength(1);
    // The patch was scored in a second container, made for the evaluation alone.
    expect(provider.acquired.filter((id) => id.startsWith(rolloutId))).toEqual([
      rolloutId,
      evaluationRolloutId(rolloutId),
    ]);
    expect(result.detail).toMatch(
      /^the environment ended the episode; submitted patch: resolved: 3 FAIL_TO_PASS and 6 PASS_TO_PASS tests pass$/,
    );
    const read = await t2.store.get<{ observation: string }>(rolloutKeys.observation(rolloutId, 0, 0));
    expect(read?.observation).toMatch(/^<returncode>0<\/returncode>\n<output>\n\d+: {4}def _day_count/);
    expect(read?.observation).toMatch(/REMINDER: You have 5 turns left to complete the task\.$/);
    expect(await ids.leftovers()).toEqual([]);
  });

  it('a bad sequence (a fix that breaks PASS_TO_PASS tests, submitted) → COMPLETED, reward -1, no container left', async () => {
    const rolloutId = ids.next('bad');
    const result = await run(rolloutId, 'openclaw__minisemver-1');
    expect(result).toMatchObject({ status: 'COMPLETED', reward: -1, steps: 2, parseErrors: 0 });
    expect(result.detail).toMatch(/PASS_TO_PASS broken .*test_alphanumeric_identifiers_compare_lexically/);
    expect(await ids.leftovers()).toEqual([]);
  });

  it('two bash calls in one turn are a parse error; an empty submission scores -1', async () => {
    const rolloutId = ids.next('two-calls');
    const result = await run(rolloutId, 'openclaw__iniconf-1');
    expect(result).toMatchObject({ status: 'COMPLETED', reward: -1, steps: 2, parseErrors: 1 });
    expect(result.detail).toMatch(/submitted patch: the patch is empty/);
    const step0 = await t2.store.get<RolloutStepRecord>(rolloutKeys.step(rolloutId, 0));
    expect(step0?.action).toMatchObject({
      kind: 'invalid',
      error: expect.stringMatching(/2 tool calls in one turn/),
    });
    expect(await ids.leftovers()).toEqual([]);
  });
});

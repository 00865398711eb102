// envRolloutWorkflow with the gui environment: real desktop containers, real Temporal, the scripted policy
// test double playing a known-good and a known-bad computer_use sequence. Rewards are exact, observation
// records carry the screenshots, the policy is sent them as image parts, and no container is left.

import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type ObservationRecord,
  type RolloutStepRecord,
  rolloutKeys,
} from '../../activities/rollout-records.js';
import type { ChatMessage } from '../../core/chat-messages.js';
import { DockerSandboxProvider } from '../../environments/docker-sandbox.js';
import type { ResetResult } from '../../environments/environment.js';
import { createEnvironmentRegistry } from '../../environments/registry.js';
import { KNOWN_BAD, KNOWN_GOOD } from '../environments/gui-scripts.js';
import { ensureImage, IMAGE_BUILD_TIMEOUT_MS, rolloutIds } from '../support/sandbox-fixture.js';
import {
  type ScriptedPolicyServer,
  type ScriptedTurn,
  startScriptedPolicy,
} from '../support/scripted-policy-server.js';
import { connectTestEnvironment } from '../support/temporal.js';
import { startTrack2, type Track2Harness } from './track2-harness.js';

const ids = rolloutIds('gui-rollout');
const goodId = ids.next('good');
const badId = ids.next('bad');
const TASK = 'xclock-close';

const turnsOf = (script: readonly Record<string, unknown>[]): ScriptedTurn[] =>
  script.map((args) => ({
    content: `Action: ${String(args.action)}.`,
    toolCalls: [{ name: 'computer_use', arguments: args }],
  }));
const good = turnsOf(KNOWN_GOOD[TASK]);
const bad = turnsOf(KNOWN_BAD[TASK]);

describe('envRolloutWorkflow with the gui environment and a scripted policy', () => {
  let env: TestWorkflowEnvironment;
  let policy: ScriptedPolicyServer;
  let t2: Track2Harness;
  const hostId = `gui-host-${process.pid}-${Date.now().toString(36)}`;

  beforeAll(async () => {
    await ensureImage('openclaw/sandbox-desktop');
    env = await connectTestEnvironment();
    // The same task for both rollouts: the request id (`<rolloutId>:<step>`) says which sequence to play.
    policy = await startScriptedPolicy(({ rid, step }) => (rid?.startsWith(goodId) ? good : bad)[step]);
    t2 = await startTrack2(env);
    await t2.startEnvHost({
      hostId,
      provider: new DockerSandboxProvider(),
      registry: createEnvironmentRegistry({ gui: { settleMs: 300 } }, ['gui']),
    });
  }, IMAGE_BUILD_TIMEOUT_MS);

  afterAll(async () => {
    await t2?.close();
    await policy?.close();
    await env?.teardown();
    await ids.removeAll();
  });

  const run = (rolloutId: string) =>
    t2.executeRollout({
      rolloutId,
      env: 'gui',
      taskId: TASK,
      policy: { url: policy.url, sampling: { maxNewTokens: 64 } },
      maxTurns: 5,
      // The test double's tokens are bytes, and screenshots travel as base64 in the prompt.
      contextBudgetTokens: 4_000_000,
    });

  it('a good and a bad sequence give exactly +1 and −1, with screenshots recorded and sent, and no container left', async () => {
    const [goodResult, badResult] = await Promise.all([run(goodId), run(badId)]);
    expect(goodResult).toMatchObject({
      rolloutId: goodId,
      status: 'COMPLETED',
      reward: 1,
      steps: 2,
      parseErrors: 0,
    });
    expect(goodResult.detail).toMatch(/exact_match: 1/);
    expect(badResult).toMatchObject({ rolloutId: badId, status: 'COMPLETED', reward: -1, steps: 2 });
    expect(goodResult.containerIds).toHaveLength(1);

    // The opening message carries the first screenshot as an image part.
    const reset = await t2.store.get<ResetResult>(rolloutKeys.reset(goodId));
    const opening = reset?.messages.at(-1)?.content as { type: string; image_url?: { url: string } }[];
    expect(opening.map((part) => part.type)).toEqual(['text', 'image_url']);
    expect(opening[1]?.image_url?.url).toMatch(/^data:image\/png;base64,iVBORw0KGgo/);

    // The click's observation record keeps its screenshot; terminate's has none (the episode is over).
    const click = await t2.store.get<ObservationRecord>(rolloutKeys.observation(goodId, 0, 0));
    expect(click?.observation).toMatch(/^left click at \(648, 262\) = pixel \(829, 210\)$/);
    expect(click?.images).toHaveLength(1);
    expect(click?.images?.[0]).toMatch(/^data:image\/png;base64,iVBORw0KGgo/);
    const end = await t2.store.get<ObservationRecord>(rolloutKeys.observation(goodId, 1, 0));
    expect(end).toMatchObject({ observation: 'ended the task (success)', done: true });
    expect(end?.images).toBeUndefined();

    // The second policy request held the tool message with the screenshot as an image_url part.
    const second = policy.requests.find((request) => request.rid === `${goodId}:1`);
    const prompt = JSON.parse(Buffer.from(second?.inputIds ?? []).toString('utf8')) as {
      messages: ChatMessage[];
    };
    const tool = prompt.messages.find((message) => message.role === 'tool');
    expect(tool?.content).toEqual([
      { type: 'text', text: click?.observation },
      { type: 'image_url', image_url: { url: click?.images?.[0] } },
    ]);
    const step1 = await t2.store.get<RolloutStepRecord>(rolloutKeys.step(goodId, 1));
    expect(step1?.promptIds).toEqual(second?.inputIds);

    for (const id of [goodId, badId]) expect(await t2.store.get(rolloutKeys.released(id))).toBeDefined();
    expect(await ids.leftovers()).toEqual([]);
  }, 180_000);
});

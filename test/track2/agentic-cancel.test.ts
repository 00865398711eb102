// Cancelling a Track 2 training step releases every container: agenticTrainingWorkflow over the toolcall
// kind (real containers) fans out 2 tasks x 2 samples and is cancelled with `handle.cancel()` while every
// rollout has a live container: once while the scripted policy holds each rollout's second step (the
// container has run code), once while each rollout's acquire has created its container but not answered yet,
// and once with those answers seconds apart (a cancelled batch waits until every rollout has released).
// The cancellation reaches the batch and every rollout (ParentClosePolicy and cancellation scopes); each
// rollout ends ABORTED and releases its sandbox in a scope the cancellation cannot interrupt. Both ways a batch
// runs its rollouts: as child workflows, and as episode activities in the batch itself.
import { CancelledFailure, WorkflowFailedError } from '@temporalio/client';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rolloutKeys } from '../../activities/rollout-records.js';
import { DockerSandboxProvider } from '../../environments/docker-sandbox.js';
import type { Environment } from '../../environments/environment.js';
import { LABELS } from '../../environments/sandbox-lease.js';
import { ToolcallEnvironment } from '../../environments/toolcall/toolcall-environment.js';
import { agenticWorkflowId, envRolloutWorkflowId } from '../../temporal/workflow-ids.js';
import type { AgenticTrainingInput, EnvRolloutResult } from '../../workflows/agentic-signals.js';
import { rolloutIdFor } from '../../workflows/rollout-batch-workflow.js';
import { GatedSandboxProvider } from '../support/gated-sandbox-provider.js';
import { saveHistory } from '../support/histories.js';
import { docker, ensureImage, eventually, IMAGE_BUILD_TIMEOUT_MS } from '../support/sandbox-fixture.js';
import {
  type Hold,
  type ScriptedPolicyServer,
  startScriptedPolicy,
} from '../support/scripted-policy-server.js';
import { connectTestEnvironment } from '../support/temporal.js';
import { startTrack2, type Track2Harness } from './track2-harness.js';

const TASKS = ['telescoping-sum', 'sum-multiples-3-or-5'];
const SAMPLES = 2;

/** Rejects when `promise` does not settle within `ms`. */
function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

describe.each(['workflows', 'activities'] as const)(
  'cancelling agenticTrainingWorkflow mid-step releases every container (rollouts as %s)',
  (rolloutsAs) => {
    let env: TestWorkflowEnvironment;
    let policy: ScriptedPolicyServer;
    let t2: Track2Harness;
    const holds: Hold[] = [];
    const opens: (() => void)[] = [];
    const provider = new GatedSandboxProvider(new DockerSandboxProvider());
    const prefix = `agcancel-${rolloutsAs[0]}-${process.pid}-${Date.now().toString(36)}`;
    const hostId = `agcancel-${rolloutsAs[0]}-${process.pid}`;
    const registry = new Map<string, Environment>([
      [
        'toolcall',
        new ToolcallEnvironment({
          config: {
            limits: { memoryBytes: 256 * 1024 * 1024, cpus: 0.5, pids: 64 },
            pythonTimeoutMs: 10_000,
          },
        }),
      ],
    ]);
    const rolloutIdsOf = (runId: string) =>
      TASKS.flatMap((_, group) =>
        Array.from({ length: SAMPLES }, (_, sample) => rolloutIdFor(`${runId}-s0`, group, sample, 0)),
      );

    /** Every container (any state) whose rollout id starts with `idPrefix`, evaluation containers included. */
    const containersOf = async (idPrefix: string) =>
      (await docker.listContainers({ all: true, filters: { label: [`${LABELS.managed}=true`] } })).filter(
        (c) => c.Labels[LABELS.rolloutId]?.startsWith(idPrefix),
      );

    beforeAll(async () => {
      await ensureImage('openclaw/sandbox-python');
      env = await connectTestEnvironment();
      // Step 0 runs code in the container; step 1 answers (when a test does not hold it).
      policy = await startScriptedPolicy(({ step }) =>
        step === 0
          ? { toolCalls: [{ name: 'code_interpreter', arguments: { code: 'print(6 * 7)' } }] }
          : { content: 'Answer: \\boxed{42}' },
      );
      t2 = await startTrack2(env);
      await t2.startEnvHost({ hostId, registry, provider });
    }, IMAGE_BUILD_TIMEOUT_MS);

    afterAll(async () => {
      for (const hold of holds) hold.release();
      for (const open of opens) open();
      await t2?.close();
      await policy?.close();
      await env?.teardown();
      const left = await containersOf(`${prefix}-`);
      await Promise.all(
        left.map((c) =>
          docker
            .getContainer(c.Id)
            .remove({ force: true })
            .catch(() => undefined),
        ),
      );
      expect(left.map((c) => c.Labels[LABELS.rolloutId])).toEqual([]);
    }, 30_000);

    /** Starts a one-step run of 2 tasks x 2 samples that trains nothing; returns its handle. */
    const startRun = (runId: string) => {
      const input: AgenticTrainingInput = {
        runId,
        env: 'toolcall',
        taskIds: TASKS,
        samplesPerTask: SAMPLES,
        maxRetriesPerRollout: 0,
        policy: { url: policy.url },
        envTaskQueue: t2.envQueue,
        heartbeatTimeoutMs: 2_000,
        training: { train: false },
        rolloutsAs,
      };
      return env.client.workflow.start('agenticTrainingWorkflow', {
        taskQueue: t2.workflowQueue,
        workflowId: agenticWorkflowId(runId),
        args: [input],
      });
    };

    /**
     * Cancels the run (all its rollouts have a running container), runs `afterCancel`, then checks that the run
     * ended cancelled, every rollout ABORTED (or cancelled) with its sandbox released, and no container is left.
     */
    const cancelAndCount = async (
      runId: string,
      handle: Awaited<ReturnType<typeof startRun>>,
      afterCancel: () => void = () => undefined,
    ) => {
      const rolloutIds = rolloutIdsOf(runId);
      const live = await containersOf(`${runId}-`);
      expect(live.map((c) => c.Labels[LABELS.rolloutId]).sort()).toEqual([...rolloutIds].sort());
      expect(live.every((c) => c.State === 'running')).toBe(true);
      const cancelled = Date.now();

      await handle.cancel();
      afterCancel();
      const outcome = await within(
        handle.result().then(
          () => null,
          (error: unknown) => error,
        ),
        30_000,
        'the run to end',
      );
      expect(outcome).toBeInstanceOf(WorkflowFailedError);
      expect((outcome as WorkflowFailedError).cause).toBeInstanceOf(CancelledFailure);

      const statuses: string[] = [];
      for (const rolloutId of rolloutIds) {
        if (rolloutsAs === 'activities') {
          // No workflow of its own: the rollout's record in the store says it released its sandbox.
          expect(
            await eventually(
              async () => (await t2.store.get(rolloutKeys.released(rolloutId))) !== undefined,
              30_000,
            ),
            rolloutId,
          ).toBe(true);
          statuses.push('released');
          continue;
        }
        const child = env.client.workflow.getHandle(envRolloutWorkflowId(rolloutId));
        statuses.push(
          await within(
            child.result().then(
              (r) => (r as EnvRolloutResult).status as string,
              (error: unknown) =>
                error instanceof WorkflowFailedError ? String(error.cause?.name) : String(error),
            ),
            30_000,
            `${rolloutId} to end`,
          ),
        );
        expect(await t2.store.get(rolloutKeys.released(rolloutId)), rolloutId).toBeDefined();
      }
      expect(
        statuses.every((status) => ['ABORTED', 'CancelledFailure', 'released'].includes(status)),
        statuses.join(),
      ).toBe(true);
      expect(await eventually(async () => (await containersOf(`${runId}-`)).length === 0, 20_000)).toBe(true);
      return { statuses, seconds: (Date.now() - cancelled) / 1000 };
    };

    it('cancelled while the policy holds every rollout mid-episode', async () => {
      const began = Date.now();
      const runId = `${prefix}-policy`;
      for (const _ of rolloutIdsOf(runId))
        holds.push(policy.hold((c) => c.step === 1 && (c.rid?.startsWith(`${runId}-`) ?? false)));
      const handle = await startRun(runId);
      await within(Promise.all(holds.map((h) => h.reached)), 60_000, 'every rollout at its second step');
      const held = (Date.now() - began) / 1000;
      const { statuses, seconds } = await cancelAndCount(runId, handle);
      console.log(
        `[agentic-cancel] policy held after ${held.toFixed(1)} s; rollouts ${statuses.join(', ')}; ` +
          `every container gone ${seconds.toFixed(1)} s after the cancel`,
      );
    }, 90_000);

    it('cancelled while every acquire has made its container but not answered', async () => {
      const began = Date.now();
      const runId = `${prefix}-acquire`;
      const gate = provider.gate((id) => id.startsWith(`${runId}-`), rolloutIdsOf(runId).length);
      opens.push(gate.open);
      const handle = await startRun(runId);
      await within(gate.reached, 60_000, 'every acquire at the gate');
      const gated = (Date.now() - began) / 1000;
      // The acquires answer only after the cancellation: the rollouts must still learn their containers and
      // release them (not leave them to the lease).
      const { statuses, seconds } = await cancelAndCount(runId, handle, () => setTimeout(gate.open, 500));
      console.log(
        `[agentic-cancel] acquires gated after ${gated.toFixed(1)} s; rollouts ${statuses.join(', ')}; ` +
          `every container gone ${seconds.toFixed(1)} s after the cancel`,
      );
    }, 90_000);

    // The rollouts of one batch end their cancellation at different times (under load, their acquires answer
    // seconds apart): the first to end must not close the batch while the others still have containers.
    it('cancelled while the acquires answer one group after the other', async () => {
      const runId = `${prefix}-stagger`;
      const late = rolloutIdsOf(runId).filter((id) => id.startsWith(`${runId}-s0-g0-`));
      const lateGate = provider.gate((id) => late.includes(id), late.length);
      const earlyGate = provider.gate(
        (id) => id.startsWith(`${runId}-`),
        rolloutIdsOf(runId).length - late.length,
      );
      opens.push(lateGate.open, earlyGate.open);
      const handle = await startRun(runId);
      await within(Promise.all([lateGate.reached, earlyGate.reached]), 60_000, 'every acquire at its gate');
      const { statuses, seconds } = await cancelAndCount(runId, handle, () => {
        setTimeout(earlyGate.open, 500);
        setTimeout(lateGate.open, 4_000);
      });
      expect(seconds).toBeGreaterThanOrEqual(4);
      if (process.env.RECORD_HISTORIES && rolloutsAs === 'activities')
        await saveHistory(
          env,
          `${agenticWorkflowId(runId)}-s0-b0`,
          'rollout-batch-workflow-cancelled-lanes-settle',
        );
      console.log(
        `[agentic-cancel] acquires answered 0.5 s and 4 s after the cancel; rollouts ${statuses.join(', ')}; ` +
          `every container gone ${seconds.toFixed(1)} s after the cancel`,
      );
    }, 90_000);
  },
);

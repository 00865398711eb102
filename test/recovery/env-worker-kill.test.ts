// kill -9 of an env host in the middle of a toolcall episode, with real processes and real containers: the env
// host runs as `openclaw-rl worker env` (its own process, the Docker sandbox provider, the sample store of
// the test's folder), envRolloutWorkflow runs on a workflow worker in this process, the policy is the scripted
// test double, which holds its answer to a chosen step so the host can be killed while the rollout waits on
// it. A new host process with the same host id takes the rollout over: it attaches to the container that
// survived, or, when the container was removed while no host ran, creates a new one and replays the recorded
// tool calls into it. docs/recovery.md ("Track 2: env hosts") describes the scenarios.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { type ObservationRecord, rolloutKeys } from '../../activities/rollout-records.js';
import { DockerSandboxProvider } from '../../environments/docker-sandbox.js';
import { envRolloutWorkflowId } from '../../temporal/workflow-ids.js';
import type { EnvRolloutInput, EnvRolloutResult } from '../../workflows/agentic-signals.js';
import { type CliProcess, cliTestEnvironment, startCli } from '../support/cli-process.js';
import {
  docker,
  ensureImage,
  eventually,
  IMAGE_BUILD_TIMEOUT_MS,
  rolloutIds,
} from '../support/sandbox-fixture.js';
import {
  type ScriptedPolicyServer,
  type ScriptedTurn,
  startScriptedPolicy,
} from '../support/scripted-policy-server.js';
import { connectTestEnvironment } from '../support/temporal.js';
import { startTrack2, type Track2Harness } from '../track2/track2-harness.js';

const IMAGE = 'openclaw/sandbox-python';
const TASK = 'telescoping-sum'; // label \frac{99}{100}
const code = (source: string): ScriptedTurn => ({
  toolCalls: [{ name: 'code_interpreter', arguments: { code: source } }],
});
// Step 0 leaves a mark in the container each time it runs; step 1 (where the host is killed) reads the marks;
// step 2 answers. The second observation therefore says how often the first call ran in the container the
// episode ended in: "x" is once.
const SCRIPT: ScriptedTurn[] = [
  code(
    'open("runs.txt", "a").write("x")\nfrom fractions import Fraction\nprint(sum(Fraction(1, k * (k + 1)) for k in range(1, 100)))',
  ),
  code('print(open("runs.txt").read())'),
  { content: 'Answer: \\boxed{\\frac{99}{100}}' },
];
const HELD_STEP = 1;
// The same, but step 1 writes its mark and then runs for a few seconds, long enough to kill the host inside
// the tool call; step 2 reads the marks again.
const MIDCALL_SCRIPT: ScriptedTurn[] = [
  SCRIPT[0] as ScriptedTurn,
  code('import time\nopen("runs.txt", "a").write("y")\ntime.sleep(4)\nprint(open("runs.txt").read())'),
  code('print(open("runs.txt").read())'),
  SCRIPT[2] as ScriptedTurn,
];

/** Rejects when `promise` does not settle within `ms`. */
function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** Containers (any state) labelled with this rollout id: `docker ps -a --filter label=openclaw.rollout-id=<id>`. */
async function containersOf(rolloutId: string): Promise<{ Id: string; State: string }[]> {
  return docker.listContainers({ all: true, filters: { label: [`openclaw.rollout-id=${rolloutId}`] } });
}

describe('kill -9 of `openclaw-rl worker env` mid-episode; a restart with the same host id finishes it', () => {
  let env: TestWorkflowEnvironment;
  let policy: ScriptedPolicyServer;
  let t2: Track2Harness;
  let logDir: string;
  let host: CliProcess | undefined;
  let failed = false;
  const ids = rolloutIds('env-worker-kill');
  /** This process's own view of the Docker host, to look into a rollout's container. */
  const sandboxes = new DockerSandboxProvider();
  const hostId = `kill-${process.pid}-${Date.now().toString(36)}`;
  let starts = 0;

  /** `openclaw-rl worker env` with this suite's host id, store, queues and server; resolves once it polls. */
  const startHost = async (): Promise<CliProcess> => {
    const began = Date.now();
    // The run's shared dev server (test/support/global-setup.ts).
    const address = inject('temporalAddress');
    starts += 1;
    const started = startCli(
      `env host #${starts}`,
      [
        'worker',
        'env',
        '--host-id',
        hostId,
        '--temporal-address',
        address,
        '--data-dir',
        t2.dir,
        '--env-queue',
        t2.envQueue,
        // The reaper sweeps every second beside the resumed rollout: it must leave the live container alone.
        '--reap-interval-ms',
        '1000',
      ],
      cliTestEnvironment(),
      join(logDir, 'env-host.log'),
    );
    host = started;
    await started.waitForLine(new RegExp(`^env host ${hostId} on .* \\(containers\\)$`), 60_000);
    console.log(`[env-worker-kill] host #${starts} up in ${((Date.now() - began) / 1000).toFixed(1)} s`);
    return started;
  };

  beforeAll(async () => {
    await ensureImage(IMAGE);
    env = await connectTestEnvironment();
    logDir = await mkdtemp(join(tmpdir(), 'env-worker-kill-'));
    policy = await startScriptedPolicy(
      ({ rid, step }) => (rid?.includes('-midcall') ? MIDCALL_SCRIPT : SCRIPT)[step],
    );
    t2 = await startTrack2(env);
    await startHost();
  }, IMAGE_BUILD_TIMEOUT_MS);

  afterAll(async () => {
    await host?.stop(5_000);
    await t2?.close();
    await policy?.close();
    await env?.teardown();
    const left = await ids.leftovers();
    await ids.removeAll();
    if (failed) console.log(`[env-worker-kill] logs kept in ${logDir}`);
    else await rm(logDir, { recursive: true, force: true });
    expect(left).toEqual([]);
  }, 30_000);

  /** Where the host is killed: `armed` runs before the rollout starts, `reached` resolves at the moment. */
  interface KillPoint {
    arm(rolloutId: string): { reached: Promise<void>; afterKill(): void };
  }

  /** While the policy holds its answer to step HELD_STEP: the container exists and has run step 0. */
  const atHeldPolicyStep: KillPoint = {
    arm(rolloutId) {
      const hold = policy.hold((c) => c.rid === `${rolloutId}:${HELD_STEP}`);
      return { reached: hold.reached, afterKill: hold.release }; // the answer goes to a dead connection
    },
  };

  /** While step HELD_STEP's code runs in the container (it has written its mark and sleeps). */
  const insideToolCall: KillPoint = {
    arm(rolloutId) {
      const marked = async () => {
        const sandbox = await sandboxes.attach(rolloutId);
        const runs = await sandbox?.readFile('/home/agent/runs.txt').catch(() => null);
        return runs?.toString('utf8').includes('y') ?? false;
      };
      return {
        reached: eventually(marked, 30_000, 100).then((ok) => {
          if (!ok) throw new Error(`the code of step ${HELD_STEP} of ${rolloutId} never started`);
        }),
        afterKill: () => undefined,
      };
    },
  };

  /**
   * Starts a rollout, kills the host with SIGKILL at `point`, runs `whileDown`, starts a new host with the
   * same id, and waits for the rollout's result.
   */
  async function rolloutAcrossKill(
    label: string,
    point: KillPoint,
    whileDown: (containerId: string, rolloutId: string) => Promise<void> = async () => undefined,
  ): Promise<{ rolloutId: string; result: EnvRolloutResult; before: string }> {
    const rolloutId = ids.next(label);
    const armed = point.arm(rolloutId);
    const input: EnvRolloutInput = {
      rolloutId,
      env: 'toolcall',
      taskId: TASK,
      policy: { url: policy.url },
      envTaskQueue: t2.envQueue,
      maxTurns: 6,
      // A dead host's activity is retried after 2 s instead of 30 s.
      heartbeatTimeoutMs: 2_000,
      leaseMs: 60_000,
    };
    const handle = await env.client.workflow.start('envRolloutWorkflow', {
      taskQueue: t2.workflowQueue,
      workflowId: envRolloutWorkflowId(rolloutId),
      args: [input],
    });
    await within(armed.reached, 30_000, `${rolloutId} at its kill point`);
    const live = await containersOf(rolloutId);
    expect(live).toHaveLength(1);
    expect(live[0]?.State).toBe('running');
    const before = live[0]?.Id as string;

    await host?.kill9();
    armed.afterKill();
    await whileDown(before, rolloutId);
    await startHost();
    const result = (await within(handle.result(), 60_000, `${rolloutId} to finish`)) as EnvRolloutResult;
    return { rolloutId, result, before };
  }

  const observation = async (rolloutId: string, step: number) =>
    (await t2.store.get<ObservationRecord>(rolloutKeys.observation(rolloutId, step, 0)))?.observation;
  const asked = (rolloutId: string, step: number) =>
    policy.requests.filter((r) => r.rid === `${rolloutId}:${step}`).length;

  const phase = (name: string, body: () => Promise<void>) =>
    it(name, async () => {
      const began = Date.now();
      try {
        await body();
      } catch (error) {
        failed = true;
        throw new Error(`${(error as Error).message}\nenv host:\n${host?.tail(30) ?? '(none)'}`, {
          cause: error,
        });
      } finally {
        console.log(`[env-worker-kill] ${name}: ${((Date.now() - began) / 1000).toFixed(1)} s`);
      }
    }, 90_000);

  phase('the container survived: the new host attaches to it; every tool call ran once', async () => {
    const { rolloutId, result, before } = await rolloutAcrossKill('attach', atHeldPolicyStep);
    expect(result).toMatchObject({ status: 'COMPLETED', reward: 1, steps: 3, hostIds: [hostId] });
    expect(result.containerIds).toEqual([before]);
    expect(result.detail).toMatch(/is correct.*2 tool calls, 0 invalid/);
    // The first call's mark is there once: it was not run again in the container it had run in.
    expect(await observation(rolloutId, 0)).toBe('99/100');
    expect(await observation(rolloutId, 1)).toBe('x');
    // The step in flight was asked again by the new host; the recorded step 0 was not.
    expect(asked(rolloutId, 0)).toBe(1);
    expect(asked(rolloutId, HELD_STEP)).toBeGreaterThanOrEqual(2);
    expect(await containersOf(rolloutId)).toEqual([]);
  });

  phase('the container was removed while no host ran: re-created, the recorded calls replayed', async () => {
    const { rolloutId, result, before } = await rolloutAcrossKill(
      'replay',
      atHeldPolicyStep,
      async (containerId, rolloutId) => {
        await docker.getContainer(containerId).remove({ force: true });
        expect(await containersOf(rolloutId)).toEqual([]);
      },
    );
    expect(result).toMatchObject({ status: 'COMPLETED', reward: 1, steps: 3, hostIds: [hostId] });
    expect(result.containerIds).toHaveLength(2);
    expect(result.containerIds[0]).toBe(before);
    expect(result.containerIds[1]).not.toBe(before);
    // The replay ran the recorded first call once in the new container (one mark), and its recorded
    // observation is what the policy saw; the count the reward uses is right.
    expect(await observation(rolloutId, 1)).toBe('x');
    expect(result.detail).toMatch(/is correct.*2 tool calls, 0 invalid/);
    expect(asked(rolloutId, 0)).toBe(1);
    expect(await containersOf(rolloutId)).toEqual([]);
  });

  phase('killed inside a tool call: the call runs again (at least once), it is counted once', async () => {
    const { rolloutId, result, before } = await rolloutAcrossKill('midcall', insideToolCall);
    expect(result).toMatchObject({ status: 'COMPLETED', reward: 1, steps: 4, hostIds: [hostId] });
    expect(result.containerIds).toEqual([before]);
    // The interrupted call had no recorded result, so the new host ran it again in the same container: two
    // marks (docs/containers.md: at-least-once for the code). Its observation is the retry's, recorded once,
    // and the reward's tool-call count is exact.
    expect(await observation(rolloutId, 1)).toBe('xyy');
    expect(await observation(rolloutId, 2)).toBe('xyy');
    expect(result.detail).toMatch(/is correct.*3 tool calls, 0 invalid/);
    expect(asked(rolloutId, HELD_STEP)).toBe(1);
    expect(await containersOf(rolloutId)).toEqual([]);
  });

  phase('nothing of any rollout is left on the Docker host', async () => {
    expect(await ids.leftovers()).toEqual([]);
    expect(host?.child.exitCode).toBeNull();
  });
});

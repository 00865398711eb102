import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ArithEnvironment } from '../../environments/arith/arith-environment.js';
import { arithProblem } from '../../environments/arith/problems.js';
import type {
  Environment,
  EnvTask,
  EpisodeContext,
  Evaluation,
  ResetResult,
  StepResult,
  ToolCallAction,
} from '../../environments/environment.js';
import type {
  ExecResult,
  Sandbox,
  SandboxLease,
  SandboxProvider,
  SandboxSpec,
} from '../../environments/sandbox.js';
import { envRolloutWorkflowId } from '../../temporal/workflow-ids.js';
import type { EnvRolloutInput, EnvRolloutResult } from '../../workflows/agentic-signals.js';
import { type ScriptedTurn, scriptsByTask, startScriptedPolicy } from '../support/scripted-policy-server.js';
import { connectTestEnvironment } from '../support/temporal.js';
import { startTrack2, type Track2Harness } from './track2-harness.js';

/** TEST DOUBLE of a container: files in memory. */
class MemorySandbox implements Sandbox {
  readonly files = new Map<string, Buffer>();
  constructor(readonly id: string) {}
  async exec(): Promise<ExecResult> {
    return { exitCode: 0, stdout: '', stderr: '', timedOut: false };
  }
  async writeFile(path: string, content: string | Buffer): Promise<void> {
    this.files.set(path, Buffer.from(content));
  }
  async readFile(path: string): Promise<Buffer> {
    const content = this.files.get(path);
    if (!content) throw new Error(`${path}: no such file`);
    return content;
  }
}

/**
 * TEST DOUBLE of a Docker host: `daemon` outlives the provider (and the worker) that made its containers,
 * as Docker outlives a worker process; a test removes a container to simulate losing it.
 */
class MemoryProvider implements SandboxProvider {
  constructor(
    readonly daemon: Map<string, { sandbox: MemorySandbox; expiresAt: number }>,
    readonly calls: string[],
  ) {}
  private static next = 0;
  async acquire(_spec: SandboxSpec, rolloutId: string, leaseMs: number) {
    this.calls.push(`acquire ${rolloutId}`);
    const held = this.daemon.get(rolloutId) ?? {
      sandbox: new MemorySandbox(`mem-${++MemoryProvider.next}`),
      expiresAt: 0,
    };
    held.expiresAt = Date.now() + leaseMs;
    this.daemon.set(rolloutId, held);
    const lease: SandboxLease = { sandboxId: held.sandbox.id, rolloutId, expiresAt: held.expiresAt };
    return { sandbox: held.sandbox, lease };
  }
  async attach(rolloutId: string) {
    this.calls.push(`attach ${rolloutId}`);
    return this.daemon.get(rolloutId)?.sandbox ?? null;
  }
  async renew(rolloutId: string, leaseMs: number) {
    this.calls.push(`renew ${rolloutId}`);
    const held = this.daemon.get(rolloutId);
    if (held) held.expiresAt = Date.now() + leaseMs;
  }
  async release(rolloutId: string) {
    this.calls.push(`release ${rolloutId}`);
    this.daemon.delete(rolloutId);
  }
  async reapExpired(now = Date.now()) {
    const reaped: string[] = [];
    for (const [id, held] of this.daemon) {
      if (held.expiresAt < now) {
        this.daemon.delete(id);
        reaped.push(held.sandbox.id);
      }
    }
    return reaped;
  }
}

interface CounterTask {
  target: number;
}

/** A test kind whose state lives in its container: `add` keeps a running total in a file. */
class CounterEnvironment implements Environment<CounterTask> {
  readonly kind = 'counter';
  async loadTask(id: string): Promise<EnvTask<CounterTask>> {
    return { kind: this.kind, id, data: { target: Number(id.split('-')[1]) } };
  }
  async listTasks() {
    return ['counter-6'];
  }
  sandboxSpec(): SandboxSpec {
    return { image: 'memory', limits: { memoryBytes: 1 << 20, cpus: 0.1, pids: 1 }, network: false };
  }
  private async total(context: EpisodeContext<CounterTask>): Promise<number> {
    return Number((await context.sandbox?.readFile('/total'))?.toString() ?? 'NaN');
  }
  async reset(context: EpisodeContext<CounterTask>): Promise<ResetResult> {
    await context.sandbox?.writeFile('/total', '0');
    return {
      messages: [{ role: 'user', content: `Count to ${context.task.data.target} with add.` }],
      tools: [
        {
          type: 'function',
          function: { name: 'add', description: 'adds n', parameters: { type: 'object', properties: {} } },
        },
      ],
    };
  }
  async step(context: EpisodeContext<CounterTask>, action: ToolCallAction): Promise<StepResult> {
    const total = (await this.total(context)) + Number(action.arguments.n);
    await context.sandbox?.writeFile('/total', String(total));
    return { observation: String(total), done: false };
  }
  async evaluate(context: EpisodeContext<CounterTask>): Promise<Evaluation> {
    const total = await this.total(context);
    return { reward: total === context.task.data.target ? 1 : 0, detail: `total ${total}` };
  }
}

const add = (n: number): ScriptedTurn => ({ toolCalls: [{ name: 'add', arguments: { n } }] });
const p0 = arithProblem(0);
const scripts: Record<string, ScriptedTurn[]> = {
  [p0.question]: [
    { toolCalls: [{ name: 'calculator', arguments: { expression: p0.expression } }] },
    { toolCalls: [{ name: 'submit', arguments: { answer: p0.answer } }] },
  ],
  'Count to 6': [add(1), add(2), add(3), { content: 'done' }],
};

describe('a restarted env host (same host id) finishes its rollouts', () => {
  let env: TestWorkflowEnvironment;
  let t2: Track2Harness;
  let policy: Awaited<ReturnType<typeof startScriptedPolicy>>;
  const daemon = new Map<string, { sandbox: MemorySandbox; expiresAt: number }>();
  const calls: string[] = [];
  const registry = new Map<string, Environment>([
    ['arith', new ArithEnvironment()],
    ['counter', new CounterEnvironment()],
  ]);
  const hostId = `restart-${process.pid}-${Date.now().toString(36)}`;
  const startHost = () => t2.startEnvHost({ hostId, registry, provider: new MemoryProvider(daemon, calls) });

  beforeAll(async () => {
    env = await connectTestEnvironment();
    policy = await startScriptedPolicy(scriptsByTask(scripts));
    t2 = await startTrack2(env);
  }, 120_000);

  afterAll(async () => {
    await t2?.close();
    await policy?.close();
    await env?.teardown();
  });

  /** Starts a rollout, stops its host while step `at` waits on the policy, runs `between`, starts a new host. */
  async function rolloutAcrossRestart(
    rolloutId: string,
    taskId: string,
    envKind: string,
    at: number,
    between: () => void = () => undefined,
  ): Promise<EnvRolloutResult> {
    const first = await startHost();
    const hold = policy.hold((c) => c.rid === `${rolloutId}:${at}`);
    const input: EnvRolloutInput = {
      rolloutId,
      env: envKind,
      taskId,
      policy: { url: policy.url },
      envTaskQueue: t2.envQueue,
      heartbeatTimeoutMs: 2_000,
    };
    const handle = await env.client.workflow.start('envRolloutWorkflow', {
      taskQueue: t2.workflowQueue,
      workflowId: envRolloutWorkflowId(rolloutId),
      args: [input],
    });
    await hold.reached;
    await first.stop();
    hold.release();
    between();
    const second = await startHost();
    try {
      return (await handle.result()) as EnvRolloutResult;
    } finally {
      await second.stop();
    }
  }

  it('container-free: the policy step in flight is retried on the new worker; the reward is right', async () => {
    const rolloutId = `arith-${hostId}`;
    const result = await rolloutAcrossRestart(rolloutId, 'arith-0', 'arith', 1);
    expect(result).toMatchObject({ status: 'COMPLETED', reward: 1, steps: 2, hostIds: [hostId] });
    // Step 1 was asked twice (the stopped worker's attempt and the retry); step 0 once (it was recorded).
    expect(policy.requests.filter((r) => r.rid === `${rolloutId}:1`).length).toBeGreaterThanOrEqual(2);
    expect(policy.requests.filter((r) => r.rid === `${rolloutId}:0`)).toHaveLength(1);
  }, 60_000);

  it('the container survived: the new worker attaches to it and resumes', async () => {
    const rolloutId = `attach-${hostId}`;
    const result = await rolloutAcrossRestart(rolloutId, 'counter-6', 'counter', 2);
    expect(result).toMatchObject({ status: 'COMPLETED', reward: 1, steps: 4 });
    expect(result.containerIds).toHaveLength(1);
    const mine = calls.filter((c) => c.endsWith(rolloutId));
    expect(mine).toContain(`attach ${rolloutId}`);
    expect(mine.filter((c) => c.startsWith('acquire'))).toHaveLength(1);
    expect(mine.at(-1)).toBe(`release ${rolloutId}`);
    expect(daemon.has(rolloutId)).toBe(false);
  }, 60_000);

  it('the container was lost: a new one is created and the recorded tool calls are replayed into it', async () => {
    const rolloutId = `replay-${hostId}`;
    const result = await rolloutAcrossRestart(rolloutId, 'counter-6', 'counter', 2, () =>
      daemon.delete(rolloutId),
    );
    // Without the replay the new container's total would start again from 0 and the reward would be 0.
    expect(result).toMatchObject({ status: 'COMPLETED', reward: 1, steps: 4 });
    expect(result.containerIds).toHaveLength(2);
    const mine = calls.filter((c) => c.endsWith(rolloutId));
    expect(mine.filter((c) => c.startsWith('acquire'))).toHaveLength(2);
    expect(mine.at(-1)).toBe(`release ${rolloutId}`);
    expect(daemon.has(rolloutId)).toBe(false);
  }, 60_000);
});

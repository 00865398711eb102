// `train start --wait` through the real command: a real Temporal server, a real control worker and a
// reference engine (trainer) on a tiny model; scored samples arrive with the training workflow's
// `sampleScored` signal. Bars are drawn into a terminal double; stdout is what console.log printed.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { Worker } from '@temporalio/worker';
import { Command } from 'commander';
import { afterAll, afterEach, beforeAll, describe, expect, inject, it, vi } from 'vitest';
import { registerOperatorCommands, waitFromFlags } from '../../cli/operator-commands.js';
import { followTrainingRun } from '../../cli/train-status.js';
import { loadConfig } from '../../core/config.js';
import { sampleKey } from '../../core/turn-record.js';
import type { SampleRef, TrainingSample } from '../../core/types.js';
import {
  type EngineProcess,
  makeTinyModel,
  startReferenceEngine,
} from '../../engines/reference-engine-process.js';
import { FileSampleStore } from '../../store/sample-store.js';
import { trainingWorkflowId } from '../../temporal/workflow-ids.js';
import { trainingInputFromConfig } from '../../workers/control-worker.js';
import { sampleScoredSignal } from '../../workflows/training-signals.js';
import { engineCalls } from '../support/engine-calls.js';
import { connectTestEnvironment, uniqueTaskQueue } from '../support/temporal.js';
import { createTestControlWorker } from '../support/workflow-bundle.js';
import { BAR_CHARACTERS, lastFrame, recordingStreamDouble } from './terminal-stream-double.js';

describe('train start --wait', () => {
  let env: TestWorkflowEnvironment;
  let dir: string;
  let engine: EngineProcess;
  let worker: Worker;
  let running: Promise<void>;
  let store: FileSampleStore;
  let tokens: { prompt: number[]; response: number[]; logprobs: number[] };
  const taskQueue = uniqueTaskQueue('train-wait');
  const suffix = `${process.pid}-${Date.now().toString(36)}`;
  const runs: string[] = [];

  beforeAll(async () => {
    env = await connectTestEnvironment();
    dir = await mkdtemp(join(tmpdir(), 'train-wait-'));
    engine = await startReferenceEngine({ model: await makeTinyModel(join(dir, 'model')), trainer: true });
    const loaded = loadConfig({}, { dataDir: dir, engine: { url: engine.url }, temporal: { taskQueue } });
    if (!loaded.ok) throw new Error(loaded.error);
    store = new FileSampleStore(join(dir, 'store'));
    worker = await createTestControlWorker(loaded.config, env, { store });
    running = worker.run();
    const policy = engineCalls(engine.url);
    const sampled = await policy.generate({
      text: 'The answer is',
      sampling_params: { temperature: 1, max_new_tokens: 6, seed: 1, ignore_eos: true },
      return_logprob: true,
    });
    const prompt = (await policy.request('POST', '/tokenize', { text: 'The answer is' })) as {
      tokens: number[];
    };
    tokens = {
      prompt: prompt.tokens,
      response: sampled.output_ids,
      logprobs: (sampled.meta_info.output_token_logprobs ?? []).map((e) => e[0] ?? 0),
    };
  }, 120_000);

  afterEach(() => {
    vi.restoreAllMocks();
    vi.unstubAllEnvs();
  });

  afterAll(async () => {
    for (const runId of runs)
      await env.client.workflow
        .getHandle(trainingWorkflowId(runId))
        .terminate('test over')
        .catch(() => undefined);
    worker?.shutdown();
    await running?.catch(() => undefined);
    await engine?.stop();
    await env?.teardown();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  /** Runs `openclaw-rl train <args>` in this process against the test server; returns what it printed. */
  async function trainCommand(args: string[], queue: string) {
    vi.stubEnv('TEMPORAL_NAMESPACE', inject('temporalNamespace'));
    vi.stubEnv('OPENCLAW_CONTROL_TASK_QUEUE', queue);
    const printed: string[] = [];
    vi.spyOn(console, 'log').mockImplementation((line: unknown) => {
      printed.push(String(line));
    });
    const stderr = recordingStreamDouble(true);
    const program = new Command('openclaw-rl').exitOverride();
    registerOperatorCommands(program, program.command('train'), { progressStream: stderr.stream });
    const done = program.parseAsync(
      ['train', 'start', '--temporal-address', inject('temporalAddress'), ...args],
      { from: 'user' },
    );
    return { done, stdout: () => printed.join('\n'), stderr: stderr.text };
  }

  /** Stores a real rl sample of policy version 0 and signals it to the run once the run exists. */
  async function deliverSample(runId: string): Promise<void> {
    const sampleId = `${runId}-a:1`;
    const sample: TrainingSample = {
      sampleId,
      sessionId: `${runId}-a`,
      turn: 1,
      tokens: [...tokens.prompt, ...tokens.response],
      responseLength: tokens.response.length,
      lossMask: tokens.response.map(() => 1),
      rolloutLogProbs: tokens.logprobs,
      reward: 1,
      policyVersion: 0,
      method: 'rl',
      kind: 'rl',
    };
    await store.put(sampleKey(sampleId), sample);
    const ref: SampleRef = {
      sampleId,
      method: 'rl',
      kind: 'rl',
      policyVersion: 0,
      reward: 1,
      responseLength: 6,
    };
    const handle = env.client.workflow.getHandle(trainingWorkflowId(runId));
    const deadline = Date.now() + 20_000;
    for (;;) {
      const sent = await handle.signal(sampleScoredSignal, { ok: true, sample: ref }).then(
        () => true,
        () => false,
      );
      if (sent) return;
      if (Date.now() > deadline) throw new Error(`${runId} was not started`);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }

  it('reads --wait and --timeout', () => {
    expect(waitFromFlags({})).toEqual({});
    expect(waitFromFlags({ wait: true })).toEqual({ steps: 1 });
    expect(waitFromFlags({ wait: '3', timeout: '90' })).toEqual({ steps: 3, timeoutMs: 90_000 });
    expect(() => waitFromFlags({ wait: '0' })).toThrow(/--wait takes a positive number/);
    expect(() => waitFromFlags({ wait: true, timeout: 'soon' })).toThrow(/--timeout takes/);
    expect(() => waitFromFlags({ timeout: '5' })).toThrow(/--timeout goes with --wait/);
  });

  it('returns once the run has trained a step, with a bar on the terminal', async () => {
    const runId = `wait-${suffix}`;
    runs.push(runId);
    const command = await trainCommand(
      ['--run', runId, '--method', 'rl', '--batch-size', '1', '--wait', '--timeout', '60'],
      taskQueue,
    );
    await deliverSample(runId);
    await command.done;
    expect(command.stdout()).toContain(`started ${trainingWorkflowId(runId)} (rl, batch 1)`);
    expect(command.stdout()).toMatch(/policy version\s+1/);
    expect(command.stdout()).toMatch(/epochs done\s+1/);
    expect(command.stdout()).not.toMatch(BAR_CHARACTERS);
    expect(command.stderr()).toMatch(BAR_CHARACTERS);
    expect(lastFrame(command.stderr())).toMatch(
      new RegExp(
        `^training-${runId} \\|[█░]+\\| 0/1 samples toward the next step \\| 1/1 steps trained \\| policy v1$`,
      ),
    );
  }, 60_000);

  it('prints one JSON object and no bar with --json', async () => {
    const runId = `wait-json-${suffix}`;
    runs.push(runId);
    const command = await trainCommand(
      ['--run', runId, '--method', 'rl', '--batch-size', '1', '--wait', '1', '--json'],
      taskQueue,
    );
    await deliverSample(runId);
    await command.done;
    expect(command.stderr()).toBe('');
    expect(command.stdout()).not.toMatch(BAR_CHARACTERS);
    const printed = JSON.parse(command.stdout()) as { started: boolean; status: { policyVersion: number } };
    expect(printed).toMatchObject({ started: true, status: { policyVersion: 1, stepsCompleted: 1 } });
  }, 60_000);

  it('times out with a clear message when no worker answers', async () => {
    const runId = `wait-none-${suffix}`;
    runs.push(runId);
    const idleQueue = uniqueTaskQueue('no-worker');
    const started = Date.now();
    const command = await trainCommand(
      ['--run', runId, '--method', 'rl', '--batch-size', '1', '--wait', '--timeout', '4'],
      idleQueue,
    );
    await expect(command.done).rejects.toThrow(
      new RegExp(
        `no worker answered training-${runId}'s status query for \\d+ s: is a control worker polling task queue "${idleQueue}"`,
      ),
    );
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(lastFrame(command.stderr())).toMatch(
      /0\/1 steps trained \| policy v- \| no worker answered for \d s/,
    );
  }, 30_000);

  it('says when the run does not exist or is no longer running', async () => {
    await expect(followTrainingRun(env.client, `missing-${suffix}`, { steps: 1 })).rejects.toThrow(
      `there is no training run training-missing-${suffix}`,
    );
    const runId = `wait-ended-${suffix}`;
    runs.push(runId);
    const config = loadConfig({}, {});
    if (!config.ok) throw new Error(config.error);
    const handle = await env.client.workflow.start('trainingWorkflow', {
      workflowId: trainingWorkflowId(runId),
      taskQueue: uniqueTaskQueue('no-worker'),
      args: [trainingInputFromConfig(config.config, runId, 'rl')],
    });
    await handle.terminate('ended for the test');
    await expect(followTrainingRun(env.client, runId, { steps: 1 })).rejects.toThrow(
      `training-${runId} is TERMINATED`,
    );
  });
});

// Orchestration gap between two training steps when the next batch is already waiting.
//
//   npx tsx bench/epoch-gap.ts [--steps 24] [--batch 4] [--responseTokens 32] [--continueAsNewAfter 8]
//   npm run bench:epochs
//
// Starts a Temporal dev server and the reference engine (tiny random model, --trainer). Generates
// steps x batch real turns through the engine's chat completions (exact prompt and sampled tokens, rollout
// log-probs), assembles each into an rl sample (reward +1 / -1 alternately, as a judge vote would give) and
// stores it, starts `training-<runId>` and signals every sample to it BEFORE the control worker starts, so
// every batch is waiting when its turn comes. Then the control worker runs the loop (trainStep ->
// publishWeights -> recordLineage per step, continue-as-new every `continueAsNewAfter` steps) and the
// workflow histories give, per step boundary:
//   gap after publish   publishWeights completed -> next trainStep started (includes recordLineage);
//   gap after lineage   recordLineage completed -> next trainStep started (pure orchestration);
// against the median trainStep itself (started -> completed; the first step, which builds the optimizer,
// is left out). Boundaries that cross a continue-as-new are reported apart. Never passes or fails on time.

import { assembleSample } from '../core/sample-assembly.js';
import { turnSampleId } from '../core/sample-id.js';
import { sampleKey } from '../core/turn-record.js';
import type { SampleRef } from '../core/types.js';
import { trainingWorkflowId } from '../temporal/workflow-ids.js';
import { WORKFLOW_TYPES } from '../temporal/workflow-starts.js';
import { trainingInputFromConfig } from '../workers/control-worker.js';
import type { TrainingWorkflow } from '../workflows/training-signals.js';
import { sampleScoredSignal, trainingStatusQuery } from '../workflows/training-signals.js';
import { type ActivitySpan, activitySpans, historyChain } from './support/history.js';
import { reportLoad } from './support/machine-load.js';
import { type Stack, startStack, stopOnSignal } from './support/stack.js';
import { intOptions, median, ms, p99, printTable, ratio, runConcurrently } from './support/stats.js';

const options = intOptions(
  { steps: 24, batch: 4, responseTokens: 32, continueAsNewAfter: 8 },
  'npx tsx bench/epoch-gap.ts [options]',
);

let stack = null as Stack | null;
stopOnSignal(() => stack);

interface EngineChoice {
  prompt_token_ids: number[];
  token_ids: number[];
  logprobs: { content: { logprob: number }[] };
}

/** One real turn through the engine, assembled into a stored rl sample; returns its reference. */
async function realSample(index: number): Promise<SampleRef> {
  if (!stack) throw new Error('stack not started');
  const response = await fetch(`${stack.engine.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      model: 'tiny',
      messages: [
        { role: 'system', content: 'You are a concise assistant.' },
        { role: 'user', content: `Request ${index}: plan a short walk around the old town.` },
      ],
      max_tokens: options.responseTokens,
      ignore_eos: true,
      temperature: 1,
      seed: index,
      logprobs: true,
      return_prompt_token_ids: true,
      return_token_ids: true,
    }),
  });
  if (!response.ok) throw new Error(`engine: HTTP ${response.status}: ${await response.text()}`);
  const choice = ((await response.json()) as { choices: EngineChoice[] }).choices[0];
  if (!choice) throw new Error('engine returned no choice');
  const sessionId = `epoch-${index}`;
  const sampleId = turnSampleId(sessionId, 1);
  const assembled = assembleSample(
    'rl',
    {
      sampleId,
      sessionId,
      turn: 1,
      promptIds: choice.prompt_token_ids,
      responseIds: choice.token_ids,
      responseLogProbs: choice.logprobs.content.map((c) => c.logprob),
      policyVersion: 0,
    },
    { evalScore: index % 2 === 0 ? 1 : -1, hint: null },
  );
  if (!assembled.ok) throw new Error(`sample ${index} excluded: ${assembled.exclusion.detail}`);
  const sample = assembled.sample;
  await stack.store.put(sampleKey(sampleId), sample);
  return {
    sampleId: sample.sampleId,
    method: sample.method,
    kind: sample.kind,
    policyVersion: sample.policyVersion,
    reward: sample.reward,
    responseLength: sample.responseLength,
  };
}

interface Step {
  run: number;
  train: ActivitySpan;
  publish: ActivitySpan;
  lineage: ActivitySpan;
}

async function main(): Promise<void> {
  const started = Date.now();
  console.log(
    'starting: temporal dev server, reference engine (tiny model, --trainer); control worker later',
  );
  stack = await startStack({
    startWorker: false,
    config: {
      runId: 'bench-epochs',
      method: 'rl',
      training: {
        batchSize: options.batch,
        continueAsNewAfterSteps: options.continueAsNewAfter,
        // Every sample comes from version 0; keep all steps alike (no stale-sample handling).
        maxPolicyLag: 1_000_000,
        learningRate: 1e-4,
      },
    },
  });
  const { client, config } = stack;
  console.log(`ready in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  const total = options.steps * options.batch;
  console.log(
    `parameters: ${options.steps} steps x batch ${options.batch} = ${total} rl samples, ` +
      `${options.responseTokens} response tokens each (real engine output), continue-as-new every ` +
      `${options.continueAsNewAfter} steps`,
  );

  const generated = Date.now();
  const refs: SampleRef[] = new Array(total);
  await runConcurrently(total, 4, async (i) => {
    refs[i] = await realSample(i);
  });
  console.log(`${total} samples generated and stored in ${((Date.now() - generated) / 1000).toFixed(1)} s`);

  const input = { ...trainingInputFromConfig(config), initialPolicyVersion: 0 };
  const workflowId = trainingWorkflowId(config.runId);
  const handle = await client.workflow.start<TrainingWorkflow>(WORKFLOW_TYPES.training, {
    workflowId,
    taskQueue: config.temporal.taskQueue,
    args: [input],
  });
  for (const ref of refs) await handle.signal(sampleScoredSignal, { ok: true, sample: ref });
  console.log(`all ${total} samples signalled; starting the control worker`);

  const trainingStarted = Date.now();
  await stack.startWorker();
  const current = client.workflow.getHandle(workflowId);
  const deadline = Date.now() + 170_000;
  for (;;) {
    const status = await current.query(trainingStatusQuery).catch(() => null);
    if (status && status.stepsCompleted >= options.steps) break;
    if (Date.now() > deadline) throw new Error(`only ${status?.stepsCompleted ?? 0} steps completed in time`);
    await new Promise((r) => setTimeout(r, 250));
  }
  const wallS = (Date.now() - trainingStarted) / 1000;

  const runs = await historyChain(client, workflowId, handle.firstExecutionRunId);
  const steps: Step[] = [];
  runs.forEach((events, run) => {
    const spans = activitySpans(events);
    for (let i = 0; i < spans.length; i++) {
      const [train, publish, lineage] = spans.slice(i, i + 3);
      if (
        train?.name === 'trainStep' &&
        publish?.name === 'publishWeights' &&
        lineage?.name === 'recordLineage'
      ) {
        steps.push({ run, train, publish, lineage });
        i += 2;
      }
    }
  });
  if (steps.length < 2) throw new Error(`found ${steps.length} steps in the histories`);

  const gapsPublish: number[] = [];
  const gapsLineage: number[] = [];
  const canGaps: { publish: number; lineage: number }[] = [];
  const hops: number[] = [];
  for (let i = 0; i + 1 < steps.length; i++) {
    const step = steps[i] as Step;
    const next = steps[i + 1] as Step;
    const publish = next.train.startedMs - step.publish.completedMs;
    const lineage = next.train.startedMs - step.lineage.completedMs;
    if (next.run !== step.run) canGaps.push({ publish, lineage });
    else {
      gapsPublish.push(publish);
      gapsLineage.push(lineage);
    }
  }
  for (const step of steps) {
    hops.push(
      step.publish.startedMs - step.train.completedMs,
      step.lineage.startedMs - step.publish.completedMs,
    );
  }
  const trainMs = steps.slice(1).map((s) => s.train.completedMs - s.train.startedMs);
  const publishMs = steps.map((s) => s.publish.completedMs - s.publish.startedMs);
  const lineageMs = steps.map((s) => s.lineage.completedMs - s.lineage.startedMs);
  const cycleMs = steps.slice(1).map((s, i) => s.train.startedMs - (steps[i] as Step).train.startedMs);
  const trainMedian = median(trainMs);

  console.log(
    `\n${steps.length} steps in ${runs.length} workflow runs, ${wallS.toFixed(1)} s from worker start to the last ` +
      `step (${(steps.length / wallS).toFixed(2)} steps/s, includes the worker's start)\n`,
  );
  printTable(
    ['figure', 'p50', 'p99', 'vs trainStep p50'],
    [
      ['trainStep (started -> completed; first step left out)', ms(trainMedian), ms(p99(trainMs)), '1.00x'],
      [
        'publishWeights (export + engine weight update)',
        ms(median(publishMs)),
        ms(p99(publishMs)),
        ratio(median(publishMs) / trainMedian),
      ],
      ['recordLineage', ms(median(lineageMs)), ms(p99(lineageMs)), ratio(median(lineageMs) / trainMedian)],
      [
        `gap after publish -> next trainStep started (${gapsPublish.length})`,
        ms(median(gapsPublish)),
        ms(p99(gapsPublish)),
        ratio(median(gapsPublish) / trainMedian),
      ],
      [
        `gap after lineage -> next trainStep started (${gapsLineage.length})`,
        ms(median(gapsLineage)),
        ms(p99(gapsLineage)),
        ratio(median(gapsLineage) / trainMedian),
      ],
      [
        `activity completed -> next activity started, within a step (${hops.length})`,
        ms(median(hops)),
        ms(p99(hops)),
        ratio(median(hops) / trainMedian),
      ],
      [
        'step cycle (trainStep start -> next trainStep start)',
        ms(median(cycleMs)),
        ms(p99(cycleMs)),
        ratio(median(cycleMs) / trainMedian),
      ],
    ],
  );
  console.log(
    `\nfirst trainStep (builds the optimizer): ${ms((steps[0] as Step).train.completedMs - (steps[0] as Step).train.startedMs)}`,
  );
  const orchestration = median(cycleMs) - trainMedian - median(publishMs) - median(lineageMs);
  console.log(
    `share of a step cycle spent outside the three activities (median cycle - medians): ` +
      `${ms(orchestration)} of ${ms(median(cycleMs))} (${((100 * orchestration) / median(cycleMs)).toFixed(0)}%)`,
  );
  for (const gap of canGaps) {
    console.log(
      `across a continue-as-new: publish -> next trainStep ${ms(gap.publish)}, lineage -> next trainStep ${ms(gap.lineage)}`,
    );
  }
  console.log(`\ntotal ${((Date.now() - started) / 1000).toFixed(0)} s`);
}

const loadAtEnd = reportLoad('epoch-gap bench');
try {
  await main();
} finally {
  await stack?.close();
}
loadAtEnd();

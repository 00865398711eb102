// Container rollouts with and without a warm pool, on the real Docker engine, with the toolcall environment
// (python sandbox) driven directly, as an env host's activities drive it:
//   1. time to first step: acquire → reset done → first env step (a one-line python call), one rollout at a
//      time, the pool full before each warm sample; warm and cold samples alternate.
//   2. steady throughput: short rollouts (acquire, reset, one step, evaluate, release) at a fixed concurrency,
//      in alternating cold and warm blocks; the pool refills in the background while a warm block runs.
// Prints medians, p99s and warm/cold ratios. Needs openclaw/sandbox-python (built if missing).
//   npm run bench:warm-pool -- [--samples 20] [--concurrency 4] [--rollouts 32] [--blocks 2] [--pool 4]

import { DockerSandboxProvider } from '../environments/docker-sandbox.js';
import type { EpisodeContext, ToolCallAction } from '../environments/environment.js';
import { ToolcallEnvironment } from '../environments/toolcall/toolcall-environment.js';
import { ensureImage } from '../test/support/sandbox-fixture.js';
import { reportLoad } from './support/machine-load.js';
import { intOptions, median, ms, now, p99, printTable, ratio, runConcurrently } from './support/stats.js';

const options = intOptions(
  { samples: 20, concurrency: 4, rollouts: 32, blocks: 2, pool: 4 },
  'npx tsx bench/track2-warm-pool.ts: toolcall rollouts with a warm pool against cold container creation',
);

const LEASE_MS = 5 * 60_000;
const environment = new ToolcallEnvironment();
const task = await environment.loadTask((await environment.listTasks())[0] as string);
const spec = environment.sandboxSpec(task);
await ensureImage(spec.image);

const prefix = `bench-wp-${process.pid}-${Date.now().toString(36)}`;
let counter = 0;
const nextRolloutId = (): string => {
  counter += 1;
  return `${prefix}-${counter}`;
};
const cold = new DockerSandboxProvider();
const warm = new DockerSandboxProvider({
  warmPool: { name: prefix, sizes: { [spec.image]: options.pool } },
});
const ACTION: ToolCallAction = {
  id: 'call-1',
  name: 'code_interpreter',
  arguments: { code: 'print(6 * 7)' },
};

interface FirstStep {
  acquire: number;
  reset: number;
  firstStep: number;
}

/** One rollout up to its first step; returns the cumulative times (ms since acquire started). */
async function untilFirstStep(provider: DockerSandboxProvider, rolloutId: string): Promise<FirstStep> {
  const started = now();
  const { sandbox } = await provider.acquire(spec, rolloutId, LEASE_MS);
  const acquired = now();
  const context: EpisodeContext<typeof task.data> = { task, sandbox };
  await environment.reset(context);
  const reset = now();
  const result = await environment.step(context, ACTION);
  const stepped = now();
  if (!result.observation.includes('42')) throw new Error(`unexpected observation: ${result.observation}`);
  return { acquire: acquired - started, reset: reset - started, firstStep: stepped - started };
}

/** A whole short rollout: first step, evaluation, release. */
async function shortRollout(provider: DockerSandboxProvider): Promise<void> {
  const rolloutId = nextRolloutId();
  await untilFirstStep(provider, rolloutId);
  const evaluation = await environment.evaluate(
    { task, sandbox: await provider.attach(rolloutId) },
    '\\boxed{0}',
  );
  if (!Number.isFinite(evaluation.reward)) throw new Error('no reward');
  await provider.release(rolloutId);
}

const loadAtEnd = reportLoad('warm-pool bench');
console.log(`image ${spec.image}, pool ${options.pool}, concurrency ${options.concurrency}`);
try {
  // Warm-up: the image's layers and Docker's caches, for both paths.
  await warm.prewarm(spec);
  for (const provider of [cold, warm]) await shortRollout(provider);

  const samples: Record<'cold' | 'warm', FirstStep[]> = { cold: [], warm: [] };
  for (let i = 0; i < options.samples; i++) {
    for (const mode of ['cold', 'warm'] as const) {
      const provider = mode === 'warm' ? warm : cold;
      if (mode === 'warm') await warm.prewarm(spec);
      const rolloutId = nextRolloutId();
      samples[mode].push(await untilFirstStep(provider, rolloutId));
      await provider.release(rolloutId);
    }
  }
  const firstStepStats = warm.warmPoolStats();

  const rates: Record<'cold' | 'warm', number[]> = { cold: [], warm: [] };
  for (let block = 0; block < options.blocks; block++) {
    for (const mode of ['cold', 'warm'] as const) {
      const provider = mode === 'warm' ? warm : cold;
      if (mode === 'warm') await warm.prewarm(spec);
      const started = now();
      await runConcurrently(options.rollouts, options.concurrency, () => shortRollout(provider));
      rates[mode].push((options.rollouts / (now() - started)) * 60_000);
    }
  }
  const finalStats = warm.warmPoolStats();

  console.log(
    `\ntime to first step, ${options.samples} rollouts each, one at a time (ms from acquire start):\n`,
  );
  const rows = (['acquire', 'reset', 'firstStep'] as const).map((field) => {
    const c = samples.cold.map((s) => s[field]);
    const w = samples.warm.map((s) => s[field]);
    const label = { acquire: 'acquire done', reset: 'reset done', firstStep: 'first step done' }[field];
    return [
      label,
      `${ms(median(c))} / ${ms(p99(c))}`,
      `${ms(median(w))} / ${ms(p99(w))}`,
      `${ratio(median(w) / median(c))} / ${ratio(p99(w) / p99(c))}`,
    ];
  });
  printTable(['figure', 'cold p50 / p99', 'warm p50 / p99', 'warm/cold p50 / p99'], rows);
  console.log(
    `(pool: ${firstStepStats?.claimed ?? 0} acquires served warm, ${firstStepStats?.missed ?? 0} missed)`,
  );

  console.log(
    `\nsteady throughput: ${options.blocks} blocks of ${options.rollouts} rollouts per mode at concurrency ${options.concurrency}:\n`,
  );
  const claimedInBlocks = (finalStats?.claimed ?? 0) - (firstStepStats?.claimed ?? 0);
  const missedInBlocks = (finalStats?.missed ?? 0) - (firstStepStats?.missed ?? 0);
  printTable(
    ['figure', 'cold', 'warm', 'warm/cold'],
    [
      [
        'rollouts/min (median of blocks)',
        median(rates.cold).toFixed(1),
        median(rates.warm).toFixed(1),
        ratio(median(rates.warm) / median(rates.cold)),
      ],
      [
        'rollouts/min per block',
        rates.cold.map((r) => r.toFixed(1)).join(', '),
        rates.warm.map((r) => r.toFixed(1)).join(', '),
        '',
      ],
      [
        'warm blocks: served from the pool / cold fallbacks',
        '',
        `${claimedInBlocks} / ${missedInBlocks}`,
        '',
      ],
    ],
  );
} finally {
  await warm.close();
}
loadAtEnd();

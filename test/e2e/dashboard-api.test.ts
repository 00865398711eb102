// The dashboard's JSON API on real parts (test/support/dashboard-fixture.ts): the key is required, every answer
// has the shape the page reads, and a tenant sees the shared run, its own adapter run and its own sessions only.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { StepManifest } from '../../activities/agentic-activities.js';
import { type EvaluationRecord, rolloutKeys } from '../../activities/rollout-records.js';
import { adapterRunId } from '../../core/tenant-adapters.js';
import { agenticStepKey } from '../../workflows/agentic-signals.js';
import { untilTrainingStatus } from '../support/control-stack.js';
import {
  DASHBOARD_AGENTIC_TASKS,
  type DashboardAgenticRun,
  startDashboardAgenticRun,
} from '../support/dashboard-agentic-run.js';
import { type DashboardFixture, startDashboardFixture } from '../support/dashboard-fixture.js';

const errorSchema = z.object({ error: z.object({ message: z.string(), type: z.string() }) });
const signsSchema = z.strictObject({ positive: z.number(), zero: z.number(), negative: z.number() });
const versionSchema = z.strictObject({
  version: z.number().int(),
  publishedAt: z.string().nullable(),
  time: z.string().nullable(),
  sampleCount: z.number().int(),
  tenants: z.record(z.string(), z.number()).nullable(),
  metrics: z.record(z.string(), z.number()),
  evaluation: z
    .object({ score: z.number(), decision: z.enum(['served', 'held']) })
    .passthrough()
    .nullable(),
  rollbackOf: z.number().nullable(),
  stats: z.strictObject({
    samples: z.number(),
    found: z.number(),
    rewardMean: z.number().nullable(),
    rewards: signsSchema,
    votes: signsSchema,
    ratings: z.number(),
    corrections: z.number(),
    stalenessMean: z.number().nullable(),
    stalenessMax: z.number().nullable(),
    teacherGap: z.number().nullable(),
    teacherSamples: z.number(),
    hintsAsked: z.number(),
    hintsAccepted: z.number(),
    kinds: z.record(z.string(), z.number()),
    latestTurnAt: z.string().nullable(),
  }),
});
const runSchema = z.strictObject({
  object: z.literal('training_run'),
  runId: z.string(),
  tenant: z.string().nullable(),
  incarnation: z.string().nullable(),
  status: z
    .object({
      method: z.string(),
      policyVersion: z.number(),
      stepsCompleted: z.number(),
      samplesTrained: z.number(),
      exclusionsByReason: z.record(z.string(), z.number()),
    })
    .passthrough()
    .nullable(),
  versions: z.array(versionSchema),
});
const runsSchema = z.strictObject({
  object: z.literal('list'),
  tenant: z.string(),
  data: z.array(z.strictObject({ runId: z.string(), tenant: z.string().nullable() })),
});
const sessionsSchema = z.strictObject({
  object: z.literal('list'),
  tenant: z.string(),
  data: z.array(
    z.strictObject({
      sessionId: z.string(),
      lastTurnAt: z.string(),
      turns: z.array(
        z.strictObject({
          turn: z.number(),
          sampleId: z.string(),
          recordedAt: z.string(),
          policyVersion: z.number(),
          prompt: z.string(),
          reply: z.string(),
          outcome: z.object({ status: z.enum(['sample', 'excluded', 'pending']) }).passthrough(),
          votes: z.array(z.number().nullable()),
          hint: z.string().nullable(),
          feedback: z.array(
            z.strictObject({
              rating: z.number().nullable(),
              correction: z.string().nullable(),
              receivedAt: z.string(),
            }),
          ),
        }),
      ),
    }),
  ),
});

const statusCountsSchema = z.strictObject({
  COMPLETED: z.number().int(),
  TRUNCATED: z.number().int(),
  FAILED: z.number().int(),
  ABORTED: z.number().int(),
});
const distributionSchema = z.strictObject({
  count: z.number().int(),
  mean: z.number().nullable(),
  min: z.number().nullable(),
  q1: z.number().nullable(),
  median: z.number().nullable(),
  q3: z.number().nullable(),
  max: z.number().nullable(),
});
const agenticStepsSchema = z.strictObject({
  object: z.literal('agentic_steps'),
  runId: z.string(),
  steps: z.array(
    z.strictObject({
      step: z.number().int(),
      finished: z.boolean(),
      rollouts: z.number().int(),
      byStatus: statusCountsSchema,
      rewards: distributionSchema,
      tasks: z.array(
        z.strictObject({
          taskId: z.string(),
          rollouts: z.number().int(),
          byStatus: statusCountsSchema,
          rewards: distributionSchema,
        }),
      ),
    }),
  ),
});

/** The median of sorted values, and of each half for the quartiles (the halves share the middle value). */
function expectedDistribution(rewards: number[]) {
  const sorted = [...rewards].sort((a, b) => a - b);
  const at = (q: number) => {
    const i = (sorted.length - 1) * q;
    const lo = sorted[Math.floor(i)] as number;
    const hi = sorted[Math.ceil(i)] as number;
    return lo + (hi - lo) * (i - Math.floor(i));
  };
  return {
    count: sorted.length,
    mean: sorted.reduce((a, b) => a + b, 0) / sorted.length,
    min: sorted[0],
    q1: at(0.25),
    median: at(0.5),
    q3: at(0.75),
    max: sorted.at(-1),
  };
}

describe('the dashboard API through the real gateway', () => {
  let fixture: DashboardFixture;
  let shared: string;
  let bobsRun: string;
  // The same client session id for both tenants: each must see only its own.
  let session: string;
  let agentic: DashboardAgenticRun;

  beforeAll(async () => {
    fixture = await startDashboardFixture('dash-api', { adapters: ['bob'] });
    shared = fixture.config.runId;
    bobsRun = adapterRunId(shared, 'bob');
    session = `talk-${shared}`;
    await fixture.rateTurn('alice', session, 'Alice asks about tulips.', 1);
    await fixture.rateTurn('bob', session, 'Bob asks about trains.', -1);
    await untilTrainingStatus(fixture.env.client, shared, (s) => s.policyVersion >= 1, 90_000);
    await untilTrainingStatus(fixture.env.client, bobsRun, (s) => s.policyVersion >= 1, 90_000);
    // A Track 2 run on the same store and engine (trains nothing), paused after its first steps.
    agentic = await startDashboardAgenticRun(fixture);
  }, 300_000);

  afterAll(async () => {
    await agentic?.close();
    await fixture?.close();
  });

  it('asks for the key: the API answers 401 with an OpenAI-style error without one or with a wrong one; the page loads', async () => {
    for (const path of ['/dashboard/api/runs', '/dashboard/api/sessions', `/dashboard/api/runs/${shared}`]) {
      const answer = await fixture.get(path, 'nobody');
      expect(answer.status).toBe(401);
      expect(errorSchema.parse(answer.body).error.type).toBe('authentication_error');
    }
    const wrong = await fetch(`${fixture.stack.gateway.url}/dashboard/api/runs`, {
      headers: { authorization: 'Bearer not-a-key' },
    });
    expect(wrong.status).toBe(401);
    // The page and its scripts hold no data: anyone loads them, and the page asks for the key.
    const page = await fixture.get('/dashboard', 'nobody');
    expect(page.status).toBe(200);
    expect(String(page.body)).toContain('/dashboard/uPlot.iife.min.js');
    expect((await fixture.get('/dashboard/uPlot.iife.min.js', 'nobody')).status).toBe(200);
    expect((await fixture.get('/dashboard/app.js', 'nobody')).status).toBe(200);
  });

  it('lists the shared run for everyone and an adapter run for its own tenant only', async () => {
    const alice = runsSchema.parse((await fixture.get('/dashboard/api/runs', 'alice')).body);
    expect(alice.tenant).toBe('alice');
    expect(alice.data).toEqual([{ runId: shared, tenant: null }]);
    const bob = runsSchema.parse((await fixture.get('/dashboard/api/runs', 'bob')).body);
    expect(bob.data).toEqual([
      { runId: shared, tenant: null },
      { runId: bobsRun, tenant: 'bob' },
    ]);
    // Bob's run is, for Alice, a run that does not exist.
    const refused = await fixture.get(`/dashboard/api/runs/${encodeURIComponent(bobsRun)}`, 'alice');
    expect(refused.status).toBe(404);
    expect(errorSchema.parse(refused.body).error.message).toContain('no training run');
  });

  it("serves a run's versions with their sample statistics and the run's status", async () => {
    const run = runSchema.parse((await fixture.get(`/dashboard/api/runs/${shared}`, 'alice')).body);
    expect(run.status?.policyVersion).toBeGreaterThanOrEqual(1);
    const first = run.versions[0];
    expect(first?.version).toBe(1);
    // Its time: when the run recorded its step, or (entries without it) when its newest turn was recorded.
    expect(Date.parse(first?.time ?? '')).toBeGreaterThan(Date.now() - 10 * 60_000);
    expect(first?.sampleCount).toBe(1);
    expect(first?.stats).toMatchObject({ samples: 1, found: 1, rewardMean: 1, ratings: 1, stalenessMax: 0 });
    expect(first?.stats.rewards).toEqual({ positive: 1, zero: 0, negative: 0 });
    expect(typeof first?.metrics.loss).toBe('number');
    expect(first?.metrics).toHaveProperty('grad_norm');

    const bobs = runSchema.parse(
      (await fixture.get(`/dashboard/api/runs/${encodeURIComponent(bobsRun)}`, 'bob')).body,
    );
    expect(bobs.tenant).toBe('bob');
    expect(bobs.versions[0]?.stats).toMatchObject({ rewardMean: -1, ratings: 1 });
  });

  it("shows each tenant its own sessions, with turns and feedback, and never the other's", async () => {
    const alice = sessionsSchema.parse((await fixture.get('/dashboard/api/sessions', 'alice')).body);
    expect(alice.data.map((s) => s.sessionId)).toEqual([session]);
    const turns = alice.data[0]?.turns ?? [];
    expect(turns).toHaveLength(1);
    expect(turns[0]?.prompt).toBe('Alice asks about tulips.');
    expect(turns[0]?.feedback.map((f) => f.rating)).toEqual([1]);
    expect(turns[0]?.outcome).toMatchObject({ status: 'sample', reward: 1 });
    expect(JSON.stringify(alice)).not.toContain('Bob asks');

    const bob = sessionsSchema.parse((await fixture.get('/dashboard/api/sessions', 'bob')).body);
    expect(bob.data.map((s) => s.sessionId)).toEqual([session]);
    expect(bob.data[0]?.turns[0]?.prompt).toBe('Bob asks about trains.');
    expect(JSON.stringify(bob)).not.toContain('tulips');
  });

  it('lists agentic runs in the shape the page reads', async () => {
    // Other test files' agentic runs may be running on the shared server: only the shape is checked.
    const answer = await fixture.get('/dashboard/api/agentic', 'alice');
    expect(answer.status).toBe(200);
    const listed = z
      .strictObject({ object: z.literal('list'), data: z.array(z.unknown()) })
      .parse(answer.body);
    for (const run of listed.data)
      expect(run).toMatchObject({
        runId: expect.any(String),
        phase: expect.any(String),
        rollouts: expect.any(Object),
      });
    expect((await fixture.get('/dashboard/api/agentic', 'nobody')).status).toBe(401);
  });

  // A user training on several tasks wants to see which ones it learns: per step, each task's reward
  // distribution and the step's status counts, equal to what the rollouts recorded (not only the last step's).
  it("serves an agentic run's per-task reward distribution and status counts for every step", async () => {
    const path = `/dashboard/api/agentic/${encodeURIComponent(agentic.runId)}/steps`;
    expect((await fixture.get(path, 'nobody')).status).toBe(401);
    const view = agenticStepsSchema.parse((await fixture.get(path, 'bob')).body);
    expect(view.runId).toBe(agentic.runId);
    const finished = view.steps.filter((s) => s.finished);
    expect(finished.map((s) => s.step)).toEqual(
      Array.from({ length: agentic.status.stepsCompleted }, (_, k) => k),
    );
    for (const step of finished) {
      const manifest = await fixture.stack.store.get<StepManifest>(agenticStepKey(agentic.runId, step.step));
      if (!manifest) throw new Error(`no manifest for step ${step.step}`);
      expect(step.tasks.map((t) => t.taskId)).toEqual(DASHBOARD_AGENTIC_TASKS);
      for (const task of step.tasks) {
        const rollouts = manifest.groups.filter((g) => g.taskId === task.taskId).flatMap((g) => g.rollouts);
        expect(task.rollouts).toBe(rollouts.length);
        expect(task.rollouts).toBe(4);
        // Each reward is the one the rollout's evaluation record holds.
        const rewards: number[] = [];
        for (const rollout of rollouts) {
          const evaluation = await fixture.stack.store.get<EvaluationRecord>(
            rolloutKeys.evaluation(rollout.rolloutId),
          );
          if (rollout.reward !== null) {
            expect(evaluation?.reward).toBe(rollout.reward);
            rewards.push(evaluation?.reward as number);
          }
          expect(task.byStatus[rollout.status as keyof typeof task.byStatus]).toBeGreaterThan(0);
        }
        if (rewards.length === 0) expect(task.rewards.count).toBe(0);
        else {
          const expected = expectedDistribution(rewards);
          expect(task.rewards.count).toBe(expected.count);
          for (const field of ['mean', 'min', 'q1', 'median', 'q3', 'max'] as const)
            expect(task.rewards[field]).toBeCloseTo(expected[field] as number, 12);
        }
      }
      expect(step.rollouts).toBe(DASHBOARD_AGENTIC_TASKS.length * 4);
    }
    // The status counts of the run's last step are the ones its summary holds.
    const last = finished.at(-1);
    expect(last?.byStatus).toEqual(agentic.status.lastStep?.byStatus);
    console.log('agentic steps on the dashboard:', JSON.stringify(finished.map((s) => s.tasks)));

    // Listed among the agentic runs (paused: still running), and an unknown run is a 404.
    const listed = z
      .object({ data: z.array(z.object({ runId: z.string(), phase: z.string() }).passthrough()) })
      .parse((await fixture.get('/dashboard/api/agentic', 'alice')).body);
    expect(listed.data.find((r) => r.runId === agentic.runId)?.phase).toBe('paused');
    const missing = await fixture.get('/dashboard/api/agentic/no-such-agentic-run/steps', 'alice');
    expect(missing.status).toBe(404);
    expect(errorSchema.parse(missing.body).error.message).toContain('no agentic run');
  });

  it('refuses malformed query parameters with a 400 naming the parameter', async () => {
    const zero = await fixture.get('/dashboard/api/sessions?sessions=0', 'alice');
    expect(zero.status).toBe(400);
    expect(errorSchema.parse(zero.body).error.type).toBe('invalid_request_error');
    const unknown = await fixture.get('/dashboard/api/sessions?everyone=true', 'alice');
    expect(unknown.status).toBe(400);
  });
});

// The dashboard as a person sees it: headless Chromium (the system's, driven by puppeteer-core) opens the page of
// the real gateway, is asked for the API key, and watches a real run (reference engine, batch size 1, versions
// from ratings) publish three versions; every plot has a point for every version, the latest version shows, and
// screenshots are kept in test-artifacts/.

import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import puppeteer, { type Browser, type Page } from 'puppeteer-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { lineageKey } from '../../core/training-keys.js';
import type { LineageEntry, VersionEvaluation } from '../../workflows/training-signals.js';
import { untilTrainingStatus } from '../support/control-stack.js';
import {
  DASHBOARD_AGENTIC_TASKS,
  type DashboardAgenticRun,
  startDashboardAgenticRun,
} from '../support/dashboard-agentic-run.js';
import {
  DASHBOARD_KEYS,
  type DashboardFixture,
  startDashboardFixture,
} from '../support/dashboard-fixture.js';

const ARTIFACTS = join(process.cwd(), 'test-artifacts');
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/** What the page exposes of a run's plots (window.dashboard): per plot, its x values and each series. */
type PlotData = Record<string, (number | null)[][]>;

describe('the dashboard in a browser', () => {
  let fixture: DashboardFixture;
  let browser: Browser;
  let page: Page;
  let agentic: DashboardAgenticRun | undefined;

  beforeAll(async () => {
    await mkdir(ARTIFACTS, { recursive: true });
    fixture = await startDashboardFixture('dash-browser');
    browser = await puppeteer.launch({
      executablePath: CHROMIUM,
      headless: true,
      // Chromium's sandbox refuses to run as root (CI containers).
      args: [...(process.getuid?.() === 0 ? ['--no-sandbox'] : []), '--disable-dev-shm-usage'],
    });
    page = await browser.newPage();
    await page.setViewport({ width: 1400, height: 900 });
  }, 240_000);

  afterAll(async () => {
    await agentic?.close();
    await browser?.close();
    await fixture?.close();
  });

  const plotsOf = (runId: string): Promise<PlotData> =>
    page.evaluate((id) => {
      const run = (window as unknown as { dashboard: { runs: Record<string, { plots: object }> } }).dashboard
        .runs[id];
      const plots = (run?.plots ?? {}) as Record<string, { data: (number | null)[][] }>;
      return Object.fromEntries(Object.entries(plots).map(([name, plot]) => [name, plot.data]));
    }, runId);

  it('asks for the key, then plots every version of a run as it trains, evaluation verdicts included', async () => {
    const runId = fixture.config.runId;
    await page.goto(`${fixture.stack.gateway.url}/dashboard`);
    await page.waitForSelector('#login:not([hidden])');
    await page.screenshot({ path: join(ARTIFACTS, 'dashboard-login.png') });
    await page.type('#key', DASHBOARD_KEYS.alice);
    await page.click('#login button[type=submit]');
    await page.waitForSelector('body[data-ready=true]');

    // Three rated turns: three versions of the run, each trained on one of them.
    const session = (n: number) => `browser-${n}-${runId}`;
    await fixture.rateTurn('alice', session(1), 'What is a good name for a cat?', 1);
    await fixture.rateTurn('alice', session(2), 'Tell me a fact about the moon.', -1);
    await fixture.rateTurn('alice', session(3), 'How many legs does a spider have?', 1);
    const status = await untilTrainingStatus(fixture.env.client, runId, (s) => s.policyVersion >= 3, 90_000);

    // The publish gate's verdicts as it records them in the lineage (v2 served, v3 held below its baseline).
    const verdicts: Record<number, VersionEvaluation> = {
      2: { score: 0.62, baseline: 0.5, baselineVersion: 1, decision: 'served', items: 8, scorer: 'judge' },
      3: {
        score: 0.41,
        baseline: 0.62,
        baselineVersion: 2,
        decision: 'held',
        reason: 'below the served version',
        items: 8,
        scorer: 'judge',
      },
    };
    for (const [version, evaluation] of Object.entries(verdicts)) {
      const key = lineageKey(runId, Number(version), status.incarnation);
      const entry = await fixture.stack.store.get<LineageEntry>(key);
      expect(entry).toBeDefined();
      await fixture.stack.store.put(key, { ...entry, evaluation });
    }

    // The page polls: the newest version and the held verdict show without a reload.
    // A string: this file is type-checked without the DOM's types.
    const latest = JSON.stringify(`section[data-run-id="${runId}"] .latest-version`);
    await page.waitForFunction(`document.querySelector(${latest})?.textContent === 'v3'`, {
      timeout: 30_000,
    });
    await page.waitForFunction(
      (id) => {
        const run = (window as unknown as { dashboard: { runs: Record<string, { plots: object }> } })
          .dashboard.runs[id];
        const evaluation = (run?.plots as Record<string, { data: (number | null)[][] }> | undefined)
          ?.evaluation;
        return evaluation?.data[3]?.[2] === 0.41;
      },
      { timeout: 30_000 },
      runId,
    );

    const plots = await plotsOf(runId);
    const expected = [
      'reward',
      'votes',
      'feedback',
      'loss',
      'clip',
      'kl',
      'entropy',
      'grad',
      'samples',
      'staleness',
      'teacher',
      'hints',
      'evaluation',
    ];
    expect(Object.keys(plots).sort()).toEqual([...expected].sort());
    for (const name of expected) expect(plots[name]?.[0], name).toEqual([1, 2, 3]);
    // Series that every version has: a point at each of them.
    const everyPoint = (name: string, series = 1) =>
      expect(
        plots[name]?.[series]?.every((value) => typeof value === 'number'),
        `${name}[${series}]`,
      ).toBe(true);
    for (const name of [
      'reward',
      'votes',
      'feedback',
      'loss',
      'clip',
      'kl',
      'entropy',
      'grad',
      'samples',
      'staleness',
    ])
      everyPoint(name);
    // Scoring finishes in any order: one version per rating, whichever came first.
    expect([...(plots.reward?.[1] ?? [])].sort()).toEqual([-1, 1, 1]);
    expect(plots.feedback?.[1]).toEqual([1, 1, 1]);
    expect(plots.samples?.[1]).toEqual([1, 1, 1]);
    // Scores of the versions the gate judged; the held one marked.
    expect(plots.evaluation?.[1]).toEqual([null, 0.62, 0.41]);
    expect(plots.evaluation?.[3]).toEqual([null, null, 0.41]);

    const canvases = await page.$$eval(
      `section[data-run-id="${runId}"] .plot canvas`,
      (nodes) => nodes.length,
    );
    expect(canvases).toBeGreaterThanOrEqual(expected.length);
    await page.screenshot({ path: join(ARTIFACTS, 'dashboard-versions.png'), fullPage: true });

    // Over time: the same plots, x in seconds.
    await page.select('#axis', 'time');
    await page.waitForFunction(
      (id) => {
        const run = (window as unknown as { dashboard: { runs: Record<string, { plots: object }> } })
          .dashboard.runs[id];
        const reward = (run?.plots as Record<string, { data: number[][] }> | undefined)?.reward;
        return (reward?.data[0]?.[0] ?? 0) > 1e9;
      },
      { timeout: 10_000 },
      runId,
    );
    expect((await plotsOf(runId)).reward?.[0]).toHaveLength(3);
    await page.screenshot({ path: join(ARTIFACTS, 'dashboard-time.png'), fullPage: true });
  }, 150_000);

  it("lists the tenant's sessions with their turns and ratings", async () => {
    await page.waitForFunction("document.querySelectorAll('#sessions details').length >= 3", {
      timeout: 30_000,
    });
    await page.$$eval('#sessions details', (nodes) => {
      for (const node of nodes) node.setAttribute('open', '');
    });
    const text = await page.$eval('#sessions', (node) => node.textContent ?? '');
    expect(text).toContain('How many legs does a spider have?');
    expect(text).toContain('rating -1');
    const sessions = await page.$('#sessions');
    await sessions?.screenshot({ path: join(ARTIFACTS, 'dashboard-sessions.png') });
  }, 60_000);

  // A user training on several tasks sees, per task, its reward over the steps (mean, median, min–max band),
  // the rollouts' status counts per step, and the latest step's per-task table.
  it("plots an agentic run's reward distribution per task over its steps", async () => {
    agentic = await startDashboardAgenticRun(fixture);
    const runId = agentic.runId;
    await page.waitForFunction(
      (id, tasks) => {
        const run = (window as unknown as { dashboard: { agentic: Record<string, { plots: object }> } })
          .dashboard.agentic[id];
        return tasks.every((t) => `task:${t}` in (run?.plots ?? {}));
      },
      { timeout: 60_000 },
      runId,
      DASHBOARD_AGENTIC_TASKS,
    );
    type Steps = {
      step: number;
      byStatus: Record<string, number>;
      tasks: { taskId: string; rewards: Record<string, number | null> }[];
    }[];
    // What the page drew and what the API says; the page polls every 3 s, so it may still show a step fewer than
    // the API (the step in progress when the run was paused completes after it): compare once it has caught up.
    const read = async () => {
      const drawn = await page.evaluate((id) => {
        const run = (
          window as unknown as {
            dashboard: { agentic: Record<string, { plots: Record<string, { data: (number | null)[][] }> }> };
          }
        ).dashboard.agentic[id];
        return Object.fromEntries(Object.entries(run?.plots ?? {}).map(([name, plot]) => [name, plot.data]));
      }, runId);
      const api = (await fixture.get(`/dashboard/api/agentic/${encodeURIComponent(runId)}/steps`, 'alice'))
        .body as { steps: Steps };
      return { drawn, steps: api.steps };
    };
    let latest = await read();
    await expect
      .poll(
        async () => {
          latest = await read();
          const drawnSteps = latest.drawn.status?.[0] ?? [];
          return JSON.stringify(drawnSteps) === JSON.stringify(latest.steps.map((s) => s.step));
        },
        { timeout: 30_000, interval: 500 },
      )
      .toBe(true);
    const { drawn, steps: apiSteps } = latest;
    const steps = apiSteps.map((s) => s.step);
    for (const taskId of DASHBOARD_AGENTIC_TASKS) {
      const data = drawn[`task:${taskId}`];
      const of = (field: string) =>
        apiSteps.map((s) => s.tasks.find((t) => t.taskId === taskId)?.rewards[field] ?? null);
      // x: the steps; series: max, mean, median, min (the band between max and min).
      expect(data?.[0]).toEqual(steps);
      expect(data?.slice(1)).toEqual([of('max'), of('mean'), of('median'), of('min')]);
    }
    expect(drawn.status?.[1]).toEqual(apiSteps.map((s) => s.byStatus.COMPLETED));
    expect(drawn.status?.[2]).toEqual(apiSteps.map((s) => s.byStatus.TRUNCATED));
    const section = `#agentic [data-run-id="${runId}"]`;
    const canvases = await page.$$eval(`${section} .plot canvas`, (nodes) => nodes.length);
    expect(canvases).toBeGreaterThanOrEqual(DASHBOARD_AGENTIC_TASKS.length + 1);
    const rows = await page.$$eval(`${section} table.agentic-tasks tr[data-task-id]`, (nodes) =>
      nodes.map((n) => n.getAttribute('data-task-id')),
    );
    expect(rows).toEqual(DASHBOARD_AGENTIC_TASKS);
    const block = await page.$('#agentic-block');
    await block?.screenshot({ path: join(ARTIFACTS, 'dashboard-agentic-tasks.png') });
  }, 240_000);
});

// `openclaw-rl demo --gateway-url` against compose: the gate there reads the held-out set the app image ships
// (cli/demo-held-out.jsonl, named by docker-compose.demo.yml), which must be the embedded demo's own held-out set,
// and the scores the CLI prints are read from the dashboard API's run view the way the page plots them. What goes
// wrong otherwise: compose gates on other prompts than the embedded demo, or the CLI prints a base score the
// page never shows. The whole path runs in test/compose/compose-demo.test.ts.

import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { type DemoRunView, gateScores, runGatewayDemo } from '../../cli/gateway-demo.js';
import { demoEvalSet } from '../../cli/learning-demo.js';
import { parseEvalSet } from '../../core/eval-set.js';
import { DASHBOARD_KEYS, startDashboardFixture } from '../support/dashboard-fixture.js';

const ROOT = join(import.meta.dirname, '../..');

describe('the learning demo against a running gateway', () => {
  it('ships the embedded demo held-out set where docker-compose.demo.yml points the gate', async () => {
    const compose = await readFile(join(ROOT, 'docker-compose.demo.yml'), 'utf8');
    expect(compose).toContain('OPENCLAW_GATE_EVAL_SET: /app/cli/demo-held-out.jsonl');
    const path = join(ROOT, 'cli/demo-held-out.jsonl');
    expect(parseEvalSet(await readFile(path, 'utf8'), path)).toEqual(demoEvalSet());
  });

  it("reads one score per version from the gate's verdicts, the base from the first verdict's baseline", () => {
    const verdict = (score: number, baseline: number, baselineVersion: number, held = false) => ({
      score,
      baseline,
      baselineVersion,
      decision: held ? ('held' as const) : ('served' as const),
      items: 8,
      scorer: 'style:vowels',
    });
    const view: DemoRunView = {
      runId: 'demo',
      status: null,
      versions: [
        { version: 2, evaluation: verdict(0.41, 0.42, 1, true) },
        { version: 1, evaluation: verdict(0.42, 0.38, 0) },
        { version: 3, evaluation: verdict(0.45, 0.42, 1) },
        // A rollback's entry carries no verdict: it has no score of its own.
        { version: 4, evaluation: null },
      ],
    };
    expect(gateScores(view).map((s) => [s.version, s.score, s.decision])).toEqual([
      [0, 0.38, 'base'],
      [1, 0.42, 'served'],
      [2, 0.41, 'held'],
      [3, 0.45, 'served'],
    ]);
  });

  it("drives a running gateway (a real run with the demo's gate) and prints the scores its dashboard API shows", async () => {
    const evalSet = join(ROOT, 'cli/demo-held-out.jsonl');
    const fixture = await startDashboardFixture('gateway-demo', {
      gate: { evalSet, scorer: 'style:vowels', samples: 1, maxTokens: 8 },
    });
    try {
      const lines: string[] = [];
      const result = await runGatewayDemo(
        {
          gatewayUrl: fixture.stack.gateway.url,
          apiKey: DASHBOARD_KEYS.alice,
          versions: 1,
          scorer: 'style:vowels',
          maxTokens: 8,
          gain: 5,
          batchSize: 1,
          versionTimeoutMs: 60_000,
        },
        (line) => lines.push(line),
      );
      expect(result.runId).toBe(fixture.config.runId);
      // The base, then the one version asked for: the demo sends by the run's counts, so a slow step draws no
      // extra rating that would train a second one (cli/demo-batch-fill.ts).
      const versions = result.scores.map((s) => s.version);
      expect(versions).toEqual([0, 1]);
      expect(lines.filter((l) => l.startsWith('version ')).map((l) => Number(l.split(/\s+/)[1]))).toEqual(
        versions,
      );
      const view = await fixture.get(`/dashboard/api/runs/${fixture.config.runId}`, 'alice');
      expect(gateScores(view.body as DemoRunView)).toEqual(result.scores);
      expect(lines.at(-1)).toBe(`dashboard ${fixture.stack.gateway.url}/dashboard`);
    } finally {
      await fixture.close();
    }
  }, 120_000);
});

// The learning demo on real parts: `runDev`'s stack (the reference engine as policy, trainer and teacher, a control
// worker, the gateway) on the run's shared Temporal server. Replies rated by a style rule through
// POST /v1/feedback must train a tiny random model until its held-out score rises: the loop learns.

import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import {
  DEMO_ENV_DEFAULTS,
  DEMO_HELD_OUT_PROMPTS,
  type DemoScore,
  demoScoresKey,
  runLearningDemo,
} from '../../cli/learning-demo.js';
import { loadConfig, type OpenClawConfig } from '../../core/config.js';
import { parseEvalSet } from '../../core/eval-set.js';
import { makeTinyModel } from '../../engines/reference-engine-process.js';
import { storeFromConfig } from '../../store/store-from-config.js';
import type { LineageEntry } from '../../workflows/training-signals.js';
import { freePort } from '../support/free-port.js';
import { testPayloadKeysEnv, uniqueTaskQueue } from '../support/temporal.js';

const VERSIONS = 10;

describe('the learning demo', () => {
  let dir: string;
  let model: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'learning-demo-e2e-'));
    model = await makeTinyModel(join(dir, 'model'));
  }, 180_000);

  afterAll(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  async function demoConfig(): Promise<OpenClawConfig> {
    const taskQueue = uniqueTaskQueue('demo');
    const engineUrl = `http://127.0.0.1:${await freePort()}`;
    const loaded = loadConfig(
      { ...DEMO_ENV_DEFAULTS, ...testPayloadKeysEnv() },
      {
        runId: `demo-${taskQueue}`.slice(0, 64),
        dataDir: join(dir, 'data'),
        engine: { url: engineUrl, model },
        // The judge is never asked (ratings override it): the policy engine stands in, so no second engine starts.
        judge: { baseUrl: `${engineUrl}/v1`, model: 'tiny' },
        teacher: { url: engineUrl },
        gateway: { port: await freePort() },
        codecServer: { port: await freePort() },
        temporal: { address: inject('temporalAddress'), taskQueue },
      },
    );
    if (!loaded.ok) throw new Error(loaded.error);
    return loaded.config;
  }

  it('rates replies by the vowel rule, trains a version per batch and the held-out score rises', async () => {
    const config = await demoConfig();
    const lines: string[] = [];
    const result = await runLearningDemo({
      config,
      options: {
        versions: VERSIONS,
        scorer: 'style:vowels',
        maxTokens: 16,
        samples: 1,
        gain: 5,
        versionTimeoutMs: 120_000,
        exit: true,
      },
      stop: new Promise(() => {}),
      say: (line) => {
        lines.push(line);
        console.log(line);
      },
    });

    const scores = result.scores;
    // Served versions only: one the publish gate held is never measured (the next served one is).
    const versions = scores.map((s) => s.version);
    expect(versions[0]).toBe(0);
    expect(versions.every((v, i) => i === 0 || v > (versions[i - 1] ?? 0))).toBe(true);
    expect(versions.at(-1)).toBeGreaterThanOrEqual(VERSIONS);
    for (const s of scores) expect(s.items).toBe(DEMO_HELD_OUT_PROMPTS.length);
    const late = scores.slice(-3).reduce((sum, s) => sum + s.score, 0) / 3;
    expect(late, lines.join('\n')).toBeGreaterThan((scores[0]?.score ?? 1) + 0.03);

    expect(lines).toContain(`dashboard ${result.gatewayUrl}/dashboard`);
    expect(lines.filter((l) => l.startsWith('version '))).toHaveLength(scores.length);
    // The publish gate scored every version on the demo's held-out set with the same rule before serving it
    // (read from the lineage in the store: the demo has stopped its worker, so the run answers no query).
    const lineageStore = storeFromConfig(config);
    try {
      const keys = await lineageStore.list(`lineage/${encodeURIComponent(config.runId)}/`);
      const lineage = (await Promise.all(keys.map((key) => lineageStore.get<LineageEntry>(key)))).filter(
        (entry): entry is LineageEntry => entry !== undefined,
      );
      expect(lineage.length).toBeGreaterThanOrEqual(VERSIONS);
      for (const entry of lineage) expect(entry.evaluation?.scorer).toBe('style:vowels');
      const served = lineage.filter((e) => e.evaluation?.decision === 'served').map((e) => e.version);
      for (const v of versions.slice(1)) expect(served).toContain(v);
    } finally {
      await lineageStore.close?.();
    }
    // The held-out set is an evaluation set file, and the scores are in the store for a dashboard.
    const evalSet = parseEvalSet(await readFile(result.evalSetPath, 'utf8'), result.evalSetPath);
    expect(evalSet.map((item) => item.messages[0]?.content)).toEqual([...DEMO_HELD_OUT_PROMPTS]);
    const store = storeFromConfig(config);
    try {
      const stored = await store.get<DemoScore[]>(demoScoresKey(config.runId));
      expect(stored?.map((s) => s.version)).toEqual(scores.map((s) => s.version));
    } finally {
      await store.close?.();
    }
  }, 300_000);
});

// `eval --checkpoints`: two real model folders, each served by a reference engine in turn, scored by a style rule;
// the report files hold a mean per version and an item table. The tiny models' words are random: the structure
// is asserted, not the values.
import { cp, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import puppeteer from 'puppeteer-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCompare } from '../../cli/eval-compare-command.js';
import type { VersionsReport } from '../../cli/eval-versions.js';
import { runVersions } from '../../cli/run-versions.js';
import { loadConfig } from '../../core/config.js';
import { lineageKey, runRecordKey } from '../../core/training-keys.js';
import { makeTinyModel } from '../../engines/reference-engine-process.js';
import { storeFromConfig } from '../../store/store-from-config.js';

describe('eval --checkpoints', () => {
  let dir: string;
  let base: string;
  let other: string;
  let evalSet: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'eval-compare-'));
    base = await makeTinyModel(join(dir, 'base'));
    // A second version: the same weights in another folder (the rule, not the values, is under test).
    other = join(dir, 'other');
    await cp(base, other, { recursive: true });
    evalSet = join(dir, 'set.jsonl');
    await writeFile(
      evalSet,
      [
        { id: 'weather', messages: [{ role: 'user', content: 'What is the weather like?' }] },
        { id: 'rice', messages: [{ role: 'user', content: 'How do I cook rice?' }] },
      ]
        .map((line) => JSON.stringify(line))
        .join('\n'),
    );
  }, 180_000);

  afterAll(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('scores each checkpoint with seeded samples and writes report.json and a self-contained report.html', async () => {
    const lines: string[] = [];
    const reportDir = join(dir, 'report');
    const report = await runCompare(
      {
        checkpoints: `${base},${other}`,
        conversations: evalSet,
        scorer: 'style:vowels',
        samples: '2',
        maxTokens: '8',
        report: reportDir,
      },
      {},
      (line) => lines.push(line),
    );
    expect(report.versions.map((v) => v.label)).toEqual(['base', 'other']);
    for (const version of report.versions) {
      expect(version.items.map((i) => i.id)).toEqual(['weather', 'rice']);
      for (const item of version.items) {
        expect(item.scores).toHaveLength(2);
        for (const s of item.scores) expect(s).toBeGreaterThanOrEqual(0);
      }
      expect(version.mean).not.toBeNull();
    }
    const stored = JSON.parse(await readFile(join(reportDir, 'report.json'), 'utf8')) as VersionsReport;
    expect(stored.versions).toHaveLength(2);
    const html = await readFile(join(reportDir, 'report.html'), 'utf8');
    expect(html).toContain('uPlot');
    expect(html).not.toMatch(/<script[^>]+src=/);
    expect(html).toContain('<td>weather</td>');
    expect(lines.some((l) => l.startsWith('report '))).toBe(true);

    // As a person sees it: a real browser, offline, draws the chart and the table; the screenshot is kept.
    const browser = await puppeteer.launch({
      executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
      args: ['--no-sandbox', '--headless=new'],
    });
    try {
      const page = await browser.newPage();
      const errors: string[] = [];
      page.on('pageerror', (error) => errors.push(String(error)));
      await page.setRequestInterception(true);
      page.on('request', (request) =>
        request.url().startsWith('file:') ? request.continue() : request.abort(),
      );
      await page.goto(`file://${join(reportDir, 'report.html')}`);
      await page.waitForSelector('#chart canvas');
      expect(await page.$$eval('#items tbody tr', (rows) => rows.length)).toBe(3);
      expect(errors).toEqual([]);
      const artefacts = join(process.cwd(), 'test-artifacts');
      await mkdir(artefacts, { recursive: true });
      await page.screenshot({ path: join(artefacts, 'eval-report.png'), fullPage: true });
    } finally {
      await browser.close();
    }
  }, 300_000);

  it('says what to fix in bad flags', async () => {
    await expect(
      runCompare({ checkpoints: base, conversations: evalSet, scorer: 'style:nope' }, {}),
    ).rejects.toThrow(/style:<rule>/);
    await expect(runCompare({ checkpoints: base, conversations: evalSet }, {})).rejects.toThrow(
      /--judge-url/,
    );
    await expect(runCompare({ checkpoints: base, conversations: evalSet, samples: 'x' }, {})).rejects.toThrow(
      /--samples/,
    );
  });

  it("names a run's versions from its lineage: v0 the base model, the others their checkpoints", async () => {
    const loaded = loadConfig({}, { dataDir: join(dir, 'data'), engine: { model: base } });
    if (!loaded.ok) throw new Error(loaded.error);
    const config = loaded.config;
    const store = storeFromConfig(config);
    try {
      await store.put(runRecordKey('r1'), {
        runId: 'r1',
        incarnation: 'inc-2',
        startedAt: '2026-01-01T00:00:00Z',
      });
      for (const version of [1, 2])
        await store.put(lineageKey('r1', version, 'inc-2'), {
          version,
          stepId: `s${version}`,
          sampleIds: [],
          checkpoint: `/ckpt/v${version}`,
          metrics: {},
          incarnation: 'inc-2',
        });
      // An older incarnation's version 3 is not this run's.
      await store.put(lineageKey('r1', 3, 'inc-1'), {
        version: 3,
        checkpoint: '/old/v3',
        incarnation: 'inc-1',
      });
    } finally {
      await store.close?.();
    }
    expect(await runVersions(config, 'r1', 'all')).toEqual([
      { label: 'v0', model: base },
      { label: 'v1', model: '/ckpt/v1' },
      { label: 'v2', model: '/ckpt/v2' },
    ]);
    expect(await runVersions(config, 'r1', '2,0')).toEqual([
      { label: 'v2', model: '/ckpt/v2' },
      { label: 'v0', model: base },
    ]);
    await expect(runVersions(config, 'r1', '3')).rejects.toThrow(/no version 3 .*published: 1, 2/);
    await expect(runVersions(config, 'r1', 'last')).rejects.toThrow(/--versions/);
  });
});

// The learning demo on compose, as a compose user runs it from the README: the stack comes up with the demo
// override (docker-compose.demo.yml: rl, batch 4, learning rate 1e-2, the publish gate on the held-out set the
// app image ships, scored by style:vowels), `openclaw-rl demo --gateway-url … --api-key-file …` runs as its own
// process against the compose gateway, rates replies through its HTTP API and prints the gate's score per
// version; the served version's score must rise above the base's (a version the gate held may score lower:
// the user never gets it), the dashboard API must answer the same numbers, and the dashboard page in a
// real Chromium plots them (a screenshot is kept in test-artifacts/). What goes wrong without it: a compose user
// has no way to see the loop learn, and numbers printed by the CLI and plotted by the page could disagree.
// Only what the demo needs is started: PostgreSQL, Temporal, the engine, the gateway and the control worker.
// Runs with the compose suite (vitest.compose.config.ts, `npm run test:compose`).

import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { Browser } from 'puppeteer-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type DemoRunView, gateScores } from '../../cli/gateway-demo.js';
import { parseApiKeysFile } from '../../security/api-keys.js';
import { cliTestEnvironment, freePort, startCli } from '../support/cli-process.js';
import { launchBrowser } from '../support/temporal-ui-browser.js';
import { composeCommand, composeRunner, prepareLocalImageBase, ROOT } from './compose-command.js';

const run = promisify(execFile);
const ARTIFACTS = join(ROOT, 'test-artifacts');
const COMPOSE_FILES = [
  '-f',
  'docker-compose.yml',
  '-f',
  'docker-compose.local.yml',
  '-f',
  'docker-compose.demo.yml',
];
const VERSIONS = 3;

describe('the learning demo on compose (local images)', () => {
  let compose: string[];
  let env: NodeJS.ProcessEnv;
  let dir: string;
  let gatewayUrl: string;
  let apiKeyFile: string;
  let apiKey: string;
  let browser: Browser | undefined;
  const started = Date.now();

  const composeRun = composeRunner(
    () => compose,
    COMPOSE_FILES,
    () => env,
  );

  beforeAll(async () => {
    compose = await composeCommand();
    await prepareLocalImageBase();
    await run('bash', ['scripts/temporal-server.sh', 'build'], { cwd: ROOT, timeout: 30 * 60_000 });
    dir = await mkdtemp(join(tmpdir(), 'compose-demo-'));
    const gatewayPort = await freePort();
    gatewayUrl = `http://127.0.0.1:${gatewayPort}`;
    env = {
      ...process.env,
      COMPOSE_PROJECT_NAME: `openclaw-demo-${process.pid}`,
      GATEWAY_PORT: String(gatewayPort),
      TEMPORAL_PORT: String(await freePort()),
      ENGINE_PORT: String(await freePort()),
    };
    await composeRun(['build', 'postgresql', 'temporal', 'data-init', 'engine'], 40 * 60_000);
    // The gateway and the control worker bring what they depend on (data-init, PostgreSQL, Temporal, the engine).
    await composeRun(['up', '-d', 'gateway', 'control-worker'], 10 * 60_000);
    console.log(`[compose-demo] up after ${((Date.now() - started) / 1000).toFixed(0)} s`);
    // What the README says a user does: the key the first start made, in a file for --api-key-file.
    const keys = (await composeRun(['exec', '-T', 'gateway', 'cat', '/keys/api-keys'])).stdout;
    apiKeyFile = join(dir, 'api-key');
    await writeFile(apiKeyFile, keys);
    apiKey = parseApiKeysFile(keys)[0]?.key ?? '';
  }, 60 * 60_000);

  afterAll(async () => {
    await browser?.close();
    if (compose && env) {
      const logs = await composeRun(['logs', '--no-color', '--tail', '30']).catch((e: Error) => ({
        stdout: e.message,
      }));
      console.log(logs.stdout);
      await composeRun(['down', '-v', '--remove-orphans'], 5 * 60_000).catch((error: Error) =>
        console.error(`compose down failed: ${error.message}`),
      );
    }
    if (dir) await rm(dir, { recursive: true, force: true });
    console.log(`[compose-demo] file ran ${((Date.now() - started) / 1000).toFixed(0)} s`);
  }, 6 * 60_000);

  it(
    'the demo CLI drives the compose gateway; the gate scores rise, and the dashboard API and page show the same',
    async () => {
      const cli = startCli(
        'demo',
        [
          'demo',
          '--gateway-url',
          gatewayUrl,
          '--api-key-file',
          apiKeyFile,
          '--versions',
          String(VERSIONS),
          '--exit',
        ],
        cliTestEnvironment(),
        join(dir, 'demo.log'),
      );
      const exited = new Promise<number | null>((resolve) => cli.child.once('exit', (code) => resolve(code)));
      const lines: string[] = [];
      cli.child.stdout?.on('data', (chunk: Buffer) =>
        lines.push(...chunk.toString().split('\n').filter(Boolean)),
      );
      await cli.waitForLine(/^dashboard /, 8 * 60_000).catch((error: Error) => {
        throw new Error(`${error.message}\n${cli.tail(40)}`);
      });
      expect(await exited, cli.tail(40)).toBe(0);
      console.log(lines.join('\n'));

      // `version N  score X  (publish gate, …, decision)` per version, the base included.
      const printed = new Map<number, string>();
      const decisions = new Map<number, string>();
      for (const line of lines) {
        const match =
          /^version (\d+) {2}score (\d+\.\d{3}) {2}\(publish gate, style:vowels, .*, (\w+)\)$/.exec(line);
        if (!match) continue;
        printed.set(Number(match[1]), match[2] as string);
        decisions.set(Number(match[1]), match[3] as string);
      }
      expect([...printed.keys()].slice(0, VERSIONS + 1)).toEqual([0, 1, 2, 3]);
      // What the user is promised: the gate serves a version only if it scores at least what is served (the
      // demo's threshold is 0) and holds the others, and the model served at the end scores above the base. A
      // version it held may score below the base: that is the gate at work, and the user never gets it.
      const base = Number(printed.get(0));
      let served = base;
      for (let version = 1; version <= VERSIONS; version++) {
        const score = Number(printed.get(version));
        const decision = decisions.get(version);
        if (decision === 'served') {
          expect(score, `v${version} served\n${lines.join('\n')}`).toBeGreaterThanOrEqual(served);
          served = score;
        } else {
          expect(decision, lines.join('\n')).toBe('held');
          // Below the served one's score; printed to 3 decimals, the two may round to the same.
          expect(score, `v${version} held\n${lines.join('\n')}`).toBeLessThanOrEqual(served);
        }
      }
      expect(served, lines.join('\n')).toBeGreaterThan(base);

      // The dashboard API answers the same numbers: they come from the gate's verdicts in the run's lineage.
      const response = await fetch(`${gatewayUrl}/dashboard/api/runs/demo`, {
        headers: { authorization: `Bearer ${apiKey}` },
      });
      expect(response.status).toBe(200);
      const view = (await response.json()) as DemoRunView;
      const fromApi = new Map(gateScores(view).map((s) => [s.version, s.score.toFixed(3)]));
      for (const [version, score] of printed) expect(fromApi.get(version), `v${version}`).toBe(score);
      expect((await fetch(`${gatewayUrl}/dashboard/api/runs/demo`)).status).toBe(401);

      // The page, as the user opens it: asks for the key, then plots the gate's scores per version.
      browser = await launchBrowser();
      const page = await browser.newPage();
      await page.setViewport({ width: 1400, height: 900 });
      await page.goto(`${gatewayUrl}/dashboard`);
      await page.waitForSelector('#login:not([hidden])');
      await page.type('#key', apiKey);
      await page.click('#login button[type=submit]');
      await page.waitForSelector('body[data-ready=true]');
      const plotted = await page.waitForFunction(
        (count) => {
          const run = (window as unknown as { dashboard: { runs: Record<string, { plots: object }> } })
            .dashboard.runs.demo;
          const data = (run?.plots as Record<string, { data: (number | null)[][] }> | undefined)?.evaluation
            ?.data;
          return data && (data[1]?.filter((v) => typeof v === 'number').length ?? 0) >= count ? data : null;
        },
        { timeout: 60_000 },
        VERSIONS,
      );
      const [xs, scores] = (await plotted.jsonValue()) as (number | null)[][];
      for (const [i, version] of (xs ?? []).entries()) {
        const score = scores?.[i];
        if (typeof version === 'number' && printed.has(version) && typeof score === 'number')
          expect(score.toFixed(3), `plotted v${version}`).toBe(printed.get(version));
      }
      await mkdir(ARTIFACTS, { recursive: true });
      const evaluation = await page.$('[data-plot="evaluation"]');
      await (evaluation ?? page).screenshot({ path: join(ARTIFACTS, 'compose-demo-evaluation.png') });
      await page.screenshot({ path: join(ARTIFACTS, 'compose-demo-dashboard.png'), fullPage: true });
    },
    10 * 60_000,
  );
});

// `eval --simulate`: real OpenAI-compatible processes (two reference engines: one the policy, one the user model
// and the judge) talk persona by persona. The tiny models' words are random and the judge's votes rarely parse:
// the flow and the report's structure are asserted, not the values.
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runSimulateCommand } from '../../cli/eval-simulate-command.js';
import type { VersionsReport } from '../../cli/eval-versions.js';
import {
  type EngineProcess,
  makeTinyModel,
  startReferenceEngine,
} from '../../engines/reference-engine-process.js';

describe('eval --simulate', () => {
  let dir: string;
  let policy: EngineProcess;
  let other: EngineProcess;
  let personas: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'eval-simulate-'));
    const model = await makeTinyModel(join(dir, 'model'));
    [policy, other] = await Promise.all([startReferenceEngine({ model }), startReferenceEngine({ model })]);
    personas = join(dir, 'personas.jsonl');
    await writeFile(
      personas,
      [
        { id: 'cook', persona: 'a hurried cook who wants a recipe', opening: 'Quick dinner idea?' },
        { persona: 'a student revising for a physics exam' },
      ]
        .map((line) => JSON.stringify(line))
        .join('\n'),
    );
  }, 180_000);

  afterAll(async () => {
    await Promise.all([policy?.stop(), other?.stop()]);
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('plays each persona for K turns, the judge scoring every policy reply, and writes the report', async () => {
    const lines: string[] = [];
    const reportDir = join(dir, 'report');
    const report = await runSimulateCommand(
      {
        simulate: personas,
        userUrl: `${other.url}/v1`,
        userModel: 'tiny',
        engineUrl: policy.url,
        judgeUrl: `${other.url}/v1`,
        judgeModel: 'tiny',
        votes: '1',
        turns: '2',
        maxTokens: '6',
        report: reportDir,
      },
      { OPENCLAW_JUDGE_MAX_TOKENS: '8' },
      (line) => lines.push(line),
    );
    expect(report.versions).toHaveLength(1);
    const items = report.versions[0]?.items ?? [];
    expect(items.map((i) => i.id)).toEqual(['cook', 'persona-2']);
    for (const item of items) {
      expect(item.scores).toHaveLength(2);
      for (const s of item.scores) expect(s === null || [1, 0, -1].includes(s)).toBe(true);
    }
    const stored = JSON.parse(await readFile(join(reportDir, 'report.json'), 'utf8')) as VersionsReport;
    expect(stored.versions[0]?.items).toHaveLength(2);
    expect(await readFile(join(reportDir, 'report.html'), 'utf8')).toContain('<td>cook</td>');
    expect(lines.filter((l) => l.startsWith('cook '))).toHaveLength(1);
  }, 300_000);

  it('says what to fix in bad flags', async () => {
    await expect(
      runSimulateCommand({ simulate: personas, userUrl: 'nope', userModel: 'm' }, {}),
    ).rejects.toThrow(/--user-url/);
    await expect(
      runSimulateCommand({ simulate: personas, userUrl: `${other.url}/v1`, userModel: 'm' }, {}),
    ).rejects.toThrow(/--policy-url/);
  });
});

// The reference engine listening beyond loopback with a token and its checkpoints confined to one folder, as
// the project's processes reach it: the trainer, the policy adapter and the gateway built from the config send
// the token; a caller without it is refused (a permanent failure, never retried); a checkpoint outside the
// folder is a 403 that names the field, and nothing outside is touched.
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { trainerFromConfig } from '../../activities/trainer-backends/trainer-from-config.js';
import { runEval } from '../../cli/eval-command.js';
import { loadConfig, type OpenClawConfig } from '../../core/config.js';
import { buildBinaryJudgeMessages } from '../../core/judge-prompts.js';
import { createEngineAdapter, policyEngineFromConfig } from '../../engines/engine-adapters.js';
import { EngineHttpError } from '../../engines/engine-http.js';
import {
  type EngineProcess,
  makeTinyModel,
  startReferenceEngine,
} from '../../engines/reference-engine-process.js';
import { startGateway } from '../../gateway/main.js';
import { engineAccessEnv, judgeApiKey } from '../../security/engine-token.js';
import { FileSampleStore } from '../../store/sample-store.js';
import { stepJudge } from '../../workers/env-worker.js';
import { connectTestEnvironment, uniqueTaskQueue } from '../support/temporal.js';

const TOKEN = `engine-token-${process.pid}`;

describe('the engine behind a token, its paths confined', () => {
  let dir: string;
  let engine: EngineProcess;
  let config: OpenClawConfig;
  let env: TestWorkflowEnvironment;
  let tokenFile: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'engine-access-'));
    env = await connectTestEnvironment();
    tokenFile = join(dir, 'engine-token');
    await writeFile(tokenFile, `${TOKEN}\n`, { mode: 0o600 });
    const loaded = loadConfig(
      {},
      {
        dataDir: join(dir, 'data'),
        engine: { tokenFile },
        gateway: { port: 0 },
        temporal: { taskQueue: uniqueTaskQueue('engine-access') },
      },
    );
    if (!loaded.ok) throw new Error(loaded.error);
    const model = await makeTinyModel(join(dir, 'model'));
    engine = await startReferenceEngine({
      model,
      host: '0.0.0.0',
      trainer: true,
      checkpointRoots: [join(dir, 'data', 'checkpoints')],
      env: engineAccessEnv(loaded.config),
    });
    const url = engine.url.replace('0.0.0.0', '127.0.0.1');
    config = { ...loaded.config, engine: { ...loaded.config.engine, url } };
    await mkdir(join(dir, 'precious'));
    await writeFile(join(dir, 'precious', 'keep.txt'), 'not the engine');
  }, 180_000);

  afterAll(async () => {
    await engine?.stop();
    await env?.teardown();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('trains, checkpoints and publishes for the processes that send the config token', async () => {
    const trainer = trainerFromConfig(config);
    const checkpoint = join(config.dataDir, 'checkpoints', 'run', 'v1');
    await trainer.saveCheckpoint(checkpoint);
    await policyEngineFromConfig(config).publishWeights({ path: checkpoint, version: '1' });
    expect(await policyEngineFromConfig(config).weightVersion()).toBe('1');
  });

  it('refuses a caller without the token, as a failure a retry cannot fix', async () => {
    const open = createEngineAdapter('reference', config.engine.url);
    const refused = await open.weightVersion().catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(EngineHttpError);
    expect((refused as EngineHttpError).status).toBe(401);
    expect((refused as EngineHttpError).permanent).toBe(true);
  });

  it('refuses a checkpoint outside its folder with a 403 naming the field, touching nothing', async () => {
    const trainer = trainerFromConfig(config);
    for (const path of [join(dir, 'precious'), join(config.dataDir, 'checkpoints', '..', '..', 'precious')]) {
      const refused = await trainer.saveCheckpoint(path).catch((error: unknown) => error);
      expect(refused).toBeInstanceOf(EngineHttpError);
      expect((refused as EngineHttpError).status).toBe(403);
      expect((refused as EngineHttpError).permanent).toBe(true);
      expect((refused as EngineHttpError).message).toMatch(/path: .* is outside every checkpoint root/);
    }
    expect(await readFile(join(dir, 'precious', 'keep.txt'), 'utf8')).toBe('not the engine');
    const published = await policyEngineFromConfig(config)
      .publishWeights({ path: join(dir, 'precious'), version: '9' })
      .catch((error: unknown) => error);
    expect((published as EngineHttpError).status).toBe(403);
    expect((published as EngineHttpError).message).toContain('model_path');
  });

  it('serves chats through a gateway started from the same config', async () => {
    const gateway = await startGateway(config, {
      temporal: env.client,
      store: new FileSampleStore(join(dir, 'store')),
      logger: false,
    });
    try {
      const client = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: 'none', maxRetries: 0 });
      const completion = await client.chat.completions.create({
        model: 'tiny',
        messages: [{ role: 'user', content: 'hello' }],
        max_tokens: 4,
      });
      expect(completion.choices[0]?.message.role).toBe('assistant');
    } finally {
      await gateway.close();
    }
  }, 60_000);

  it('eval sends the token to the engine it evaluates and to that engine judging itself', async () => {
    const file = join(dir, 'heldout.jsonl');
    const line = { id: 'hi', messages: [{ role: 'user', content: 'hello' }], next_user: 'thanks!' };
    await writeFile(file, `${JSON.stringify(line)}\n`);
    const flags = {
      engineUrl: config.engine.url,
      conversations: file,
      votes: '2',
      maxTokens: '4',
      progress: false,
    };
    // The tiny model's judge replies are kept short: nothing here reads them.
    const guarded = { OPENCLAW_ENGINE_TOKEN_FILE: tokenFile, OPENCLAW_JUDGE_MAX_TOKENS: '4' };
    const report = await runEval(flags, guarded);
    expect(report.items.map((item) => item.id)).toEqual(['hi']);
    // Without the token the engine refuses the answer; with a wrong judge key the judge refuses every vote.
    await expect(runEval(flags, { OPENCLAW_JUDGE_MAX_TOKENS: '4' })).rejects.toThrow(/401/);
    await expect(runEval(flags, { ...guarded, OPENCLAW_JUDGE_API_KEY: 'not-the-token' })).rejects.toThrow(
      /the judge refused its key \(401\)/,
    );
  }, 60_000);

  it("the env worker's step judge at a guarded judge engine's URL sends the token, and only there", async () => {
    const prompt = buildBinaryJudgeMessages({
      responseText: 'hi',
      nextStateText: 'thanks',
      nextStateRole: 'user',
    });
    const judgeUrl = `${config.engine.url}/v1`;
    const short = { ...config, judge: { ...config.judge, maxTokens: 4 } };
    expect(typeof (await stepJudge(short, judgeUrl).complete(prompt, { seed: 1 }))).toBe('string');
    const open = { ...short, engine: { ...config.engine, token: '', tokenFile: '' } };
    await expect(stepJudge(open, judgeUrl).complete(prompt, {})).rejects.toMatchObject({ status: 401 });
    expect(judgeApiKey(config, judgeUrl)).toBe(TOKEN);
    expect(judgeApiKey(config, `${config.judgeEngine.url}/v1`)).toBe(TOKEN);
    expect(judgeApiKey(config, 'https://api.example.com/v1')).toBe('');
  }, 60_000);
});

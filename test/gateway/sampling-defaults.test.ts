// Where the gateway's sampling defaults come from: the configuration, over the served model's
// generation_config.json (what SGLang and vLLM would fall back to), over the neutral values.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig, type OpenClawConfigInput } from '../../core/config.js';
import { checkTeacherTemperature, loadSamplingDefaults, NEUTRAL_SAMPLING } from '../../gateway/sampling.js';

describe('loadSamplingDefaults', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'sampling-defaults-'));
    // As a Qwen3 checkpoint ships it.
    await writeFile(
      join(dir, 'generation_config.json'),
      JSON.stringify({ do_sample: true, temperature: 0.6, top_k: 20, top_p: 0.95, eos_token_id: [1, 2] }),
    );
  });
  afterAll(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  const config = (overrides: OpenClawConfigInput) => {
    const loaded = loadConfig({}, overrides);
    if (!loaded.ok) throw new Error(loaded.error);
    return loaded.config;
  };

  it("uses the model's generation_config.json, under the sampling settings", async () => {
    expect((await loadSamplingDefaults(config({ engine: { model: dir } }))).defaults).toEqual({
      temperature: 0.6,
      topP: 0.95,
      topK: 20,
      minP: 0,
    });
    const set = config({ engine: { model: dir }, sampling: { temperature: 1, minP: 0.05 } });
    expect((await loadSamplingDefaults(set)).defaults).toEqual({
      temperature: 1,
      topP: 0.95,
      topK: 20,
      minP: 0.05,
    });
  });

  it('falls back to the neutral values when the model folder is not readable here', async () => {
    const remote = config({ engine: { model: 'Qwen/Qwen3-4B' } });
    expect((await loadSamplingDefaults(remote)).defaults).toEqual(NEUTRAL_SAMPLING);
    expect((await loadSamplingDefaults(config({}))).defaults).toEqual(NEUTRAL_SAMPLING);
  });

  it("refuses to serve opd or combine at the model's default temperature when the teacher scores at 1 only", async () => {
    // A Qwen3 folder (default T = 0.6) served for combine with an SGLang teacher and no sampling.temperature:
    // every turn sent without a temperature is drawn at 0.6, and the teacher would score it at 1.
    const sglangTeacher = { engine: { model: dir }, judgeEngine: { kind: 'sglang' as const } };
    const refused = config(sglangTeacher);
    const served = await loadSamplingDefaults(refused);
    expect(() => checkTeacherTemperature(refused, served)).toThrow(
      `the default sampling temperature is 0.6 (from ${join(dir, 'generation_config.json')} under the ` +
        "sampling.* settings), and combine needs the teacher's log-probs at the sample's temperature 0.6",
    );
    // Served at 1, with a reference teacher, or for rl, the same folder starts.
    for (const ok of [
      config({ ...sglangTeacher, sampling: { temperature: 1 } }),
      config({ engine: { model: dir }, teacher: { kind: 'reference' } }),
      config({ ...sglangTeacher, method: 'rl' }),
    ])
      checkTeacherTemperature(ok, await loadSamplingDefaults(ok));
  });

  it('refuses a generation_config.json whose sampling fields are out of range', async () => {
    const bad = await mkdtemp(join(tmpdir(), 'sampling-bad-'));
    await writeFile(join(bad, 'generation_config.json'), JSON.stringify({ top_p: 3 }));
    await expect(loadSamplingDefaults(config({ engine: { model: bad } }))).rejects.toThrow(/top_p/);
    await rm(bad, { recursive: true, force: true });
  });
});

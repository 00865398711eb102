// slime's command line (activities/trainer-backends/slime-arguments.ts) parsed with slime's own option
// definitions at the commits docs/slime.md names, read from their sources into manifests
// (scripts/slime-argument-manifest.py → test/fixtures/slime-arguments-*.json; slime itself cannot be
// installed or fetched here):
// - OpenClaw-RL's vendored slime with its FSDP backend and vendored Megatron-LM (0d034dd5, what OpenClaw-RL
//   runs, spec 1): every method's command line, LoRA included, parses;
// - THUDM/slime (624b824a): what it lacks is exactly Megatron-LM's optimizer options (Megatron is not in that
//   repository), the FSDP backend's LoRA options (removed there) and `--distill-topk` (the fork's).

import { describe, expect, it } from 'vitest';
import { defaultLossConfig, defaultOptimizerConfig } from '../../activities/trainer-backend.js';
import { SPEC_LORA, slimeArguments } from '../../activities/trainer-backends/slime-arguments.js';
import type { LossMethod } from '../../core/loss-settings.js';
import { ROOT, runPythonJson } from './python-check.js';

interface SlimeVerdict {
  argv: string[];
  ok: boolean;
  error: string | null;
  undefined: string[];
}

async function parseWith(manifest: string, commands: string[][]): Promise<SlimeVerdict[]> {
  const input = { manifest: `${ROOT}test/fixtures/${manifest}`, commands };
  const result = (await runPythonJson(
    `${ROOT}.venv/bin/python`,
    `${ROOT}test/conformance/slime_check.py`,
    input,
  )) as {
    commands: SlimeVerdict[];
  };
  return result.commands;
}

function commandLines(): string[][] {
  const methods: LossMethod[] = ['grpo', 'opd', 'combine', 'topk_distill'];
  const base = {
    hfCheckpoint: '/models/Qwen3-4B',
    load: '/ckpt/checkpoints/step-1/slime',
    save: '/ckpt/checkpoints/step-2',
    optimizer: defaultOptimizerConfig,
  };
  return [
    ...methods.map((method) =>
      slimeArguments({ ...base, method, loss: { ...defaultLossConfig, method, useRolloutLogprobs: true } }),
    ),
    slimeArguments({
      ...base,
      method: 'combine',
      loss: { ...defaultLossConfig, method: 'combine' },
      lora: SPEC_LORA,
    }),
  ];
}

describe("slime's command line, parsed with slime's own option definitions", () => {
  it("OpenClaw-RL's slime (0d034dd5, FSDP backend, vendored Megatron-LM) takes every method's command line", async () => {
    const verdicts = await parseWith('slime-arguments-openclaw-rl.json', commandLines());
    for (const verdict of verdicts) {
      expect(verdict.undefined, verdict.argv.join(' ')).toEqual([]);
      expect(verdict.error, verdict.argv.join(' ')).toBeNull();
    }
  });

  it("THUDM/slime (624b824a) lacks exactly Megatron-LM's optimizer options, the FSDP LoRA options and --distill-topk", async () => {
    const verdicts = await parseWith('slime-arguments-thudm.json', commandLines());
    const missing = new Set(verdicts.flatMap((v) => v.undefined));
    expect([...missing].sort()).toEqual(
      [
        // Megatron-LM's (slime extends Megatron's parser; Megatron is not in THUDM/slime's tree).
        '--adam-beta1',
        '--adam-beta2',
        '--lr-decay-style',
        '--optimizer',
        '--weight-decay',
        // The fork's: its top-K loss option and the FSDP backend (THUDM/slime removed FSDP in e4faf633).
        '--distill-topk',
        '--gradient-checkpointing',
        '--lora-alpha',
        '--lora-rank',
        '--lora-target-modules',
        '--use-lora',
      ].sort(),
    );
  });
});

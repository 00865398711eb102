"""LoRA adapters served beside the base in the reference engine: memory per adapter and batched throughput.

    PYTHONPATH=engine .venv/bin/python bench/engine_lora_serving.py [--rank 16] [--new-tokens 64] [--rounds 3]
        [--device cpu|cuda]

In process (no HTTP), on the tiny model built in a temporary folder: four PEFT adapters on every linear layer
of the decoder (q/k/v/o/gate/up/down_proj, as the trainer writes them). Prints
- the bytes of one loaded adapter's tensors, and the formula r·(in+out) elements per target module (A and B;
  2·r·(in+out) bytes in bfloat16) with its value for a Qwen3-8B-shaped model;
- throughput (sampled tokens / wall time) of 8 concurrent requests, all on the base vs spread over 4 adapters
  (2 each; every forward pass carries all of them), median of --rounds, and the ratio.
Prints figures only; never passes or fails on time.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import tempfile
import time
from pathlib import Path

import torch
from machine_load import report_load  # bench/machine_load.py: this script's own folder
from openclaw_engine.generation_result import collect
from openclaw_engine.model_runner import GenerationRequest, ModelRunner
from openclaw_engine.sampling import SamplingParams
from openclaw_engine.tiny_model import make_tiny_model
from peft import LoraConfig, get_peft_model
from transformers import AutoModelForCausalLM

TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
# Qwen3-8B's shape: hidden 4096, intermediate 12288, 32 query heads and 8 KV heads of 128, 36 layers.
QWEN3_8B = {"hidden": 4096, "intermediate": 12288, "heads": 32, "kv_heads": 8, "head_dim": 128, "layers": 36}


def lora_elements(shape: dict[str, int], rank: int) -> int:
    """Σ over target modules of r·(in + out) for A and B, over all layers."""
    h, i = shape["hidden"], shape["intermediate"]
    q, kv = shape["heads"] * shape["head_dim"], shape["kv_heads"] * shape["head_dim"]
    per_layer = (h + q) + (h + kv) + (h + kv) + (q + h) + (h + i) + (h + i) + (i + h)
    return rank * per_layer * shape["layers"]


def make_adapter(base: Path, out: Path, seed: int, rank: int) -> Path:
    model = AutoModelForCausalLM.from_pretrained(base, dtype=torch.float32)
    config = LoraConfig(r=rank, lora_alpha=2 * rank, lora_dropout=0.0, target_modules=TARGETS, bias="none")
    peft_model = get_peft_model(model, config)
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, param in peft_model.named_parameters():
            if "lora_" in name:
                param.copy_(torch.randn(param.shape, generator=gen) * 0.05)
    peft_model.save_pretrained(out)
    return out


def throughput(runner: ModelRunner, names: list[str | None], prompt_tokens: int, new_tokens: int) -> float:
    rng = random.Random(0)
    requests = [
        GenerationRequest(
            [rng.randrange(256, 8000) for _ in range(prompt_tokens)],
            SamplingParams(max_new_tokens=new_tokens, temperature=1.0, seed=i, ignore_eos=True),
            return_logprob=True,
            lora_name=name,
        )
        for i, name in enumerate(names)
    ]

    async def go() -> int:
        results = await asyncio.gather(*(collect(runner.generate(r), r.input_ids) for r in requests))
        return sum(len(r.output_ids) for r in results)

    runner.flush_cache()
    start = time.perf_counter()
    tokens = asyncio.run(go())
    return tokens / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rank", type=int, default=16)
    parser.add_argument("--prompt-tokens", type=int, default=64)
    parser.add_argument("--new-tokens", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--device", default="cpu", help="cpu | cuda")
    args = parser.parse_args()
    load_at_end = report_load("LoRA serving bench")
    with tempfile.TemporaryDirectory() as tmp:
        base = make_tiny_model(Path(tmp) / "base")
        runner = ModelRunner(str(base), device=args.device)
        names = [f"lora{i}" for i in range(4)]
        for i, name in enumerate(names):
            ok, message = runner.load_lora_adapter(
                name, str(make_adapter(base, Path(tmp) / name, i, args.rank)), None
            )
            assert ok, message
        adapter = runner.lora.adapters[names[0]]
        config = runner.model.config
        tiny = {
            "hidden": config.hidden_size,
            "intermediate": config.intermediate_size,
            "heads": config.num_attention_heads,
            "kv_heads": config.num_key_value_heads,
            "head_dim": config.head_dim,
            "layers": config.num_hidden_layers,
        }
        print(f"rank {args.rank}, targets {'/'.join(TARGETS)}")
        print(f"tiny model: one adapter = {adapter.nbytes} bytes ({adapter.nbytes / 2**20:.2f} MiB, float32)")
        print(
            f"  formula: r*(in+out) elements per target module -> {lora_elements(tiny, args.rank) * 4} bytes"
        )
        big = lora_elements(QWEN3_8B, args.rank) * 2
        print(
            f"Qwen3-8B shape, bfloat16: {big} bytes ({big / 2**20:.1f} MiB) per adapter at rank {args.rank}"
        )

        batches: dict[str, list[str | None]] = {"all base": [None] * 8, "4 adapters": names * 2}
        throughput(runner, batches["all base"], args.prompt_tokens, 4)  # warm-up
        samples: dict[str, list[float]] = {label: [] for label in batches}
        for _ in range(args.rounds):  # interleaved, so a change in the machine's load hits both alike
            for label, batch in batches.items():
                samples[label].append(throughput(runner, batch, args.prompt_tokens, args.new_tokens))
        figures = {label: statistics.median(values) for label, values in samples.items()}
        for label, value in figures.items():
            print(f"8 concurrent, {label}: {value:.1f} tokens/s (median of {args.rounds})")
        print(f"ratio 4 adapters / all base: {figures['4 adapters'] / figures['all base']:.2f}x")
    load_at_end()


if __name__ == "__main__":
    main()

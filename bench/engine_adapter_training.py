"""Memory and step time of per-tenant LoRA adapters over one shared base (openclaw_engine/adapter_trainer.py).

    PYTHONPATH=engine .venv/bin/python bench/engine_adapter_training.py [--model DIR] [--counts 1,4,16]
        [--rank 8] [--tokens 256] [--threads 2]

For each count N a fresh process loads the base once and trains one step (a GRPO batch of 4 samples of
--tokens tokens, half prompt, half response) on each of N adapters, then prints: parameter bytes and AdamW
state bytes of one adapter (torch tensors), the process RSS before the base was loaded, after the first
adapter's step and after the N-th, and the step times (the first adapter's step, which includes loading the
base, apart). The default model is the engine's tiny model (`make-tiny-model`). Prints figures, never passes
or fails on them.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from machine_load import report_load  # bench/machine_load.py: this script's own folder

ROOT = Path(__file__).resolve().parent.parent


def rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def tensor_bytes(tensors) -> int:  # noqa: ANN001 - any iterable of tensors
    return sum(t.numel() * t.element_size() for t in tensors)


def measure(model: str, count: int, rank: int, tokens: int) -> dict:
    """In this process: N adapters, one step each."""
    import random

    import torch
    from openclaw_engine.adapter_trainer import SharedLoraBase

    rng = random.Random(0)
    rss_start = rss_mib()
    shared = SharedLoraBase(model, lora_rank=rank)
    prompt = tokens // 2
    times: list[float] = []
    rss_first = 0.0
    for i in range(count):
        samples = []
        for j in range(4):
            ids = [rng.randrange(10, shared.vocab_size) for _ in range(tokens)]
            r = tokens - prompt
            samples.append(
                {
                    "tokens": ids,
                    "response_length": r,
                    "loss_mask": [1] * r,
                    "rollout_log_probs": [-5.0] * r,
                    "reward": 1.0 if j % 2 else -1.0,
                }
            )
        start = time.perf_counter()
        shared.trainer(f"tenant-{i}").train_step({"step_id": "s0", "samples": samples})
        times.append(time.perf_counter() - start)
        if i == 0:
            rss_first = rss_mib()
    trainer = shared.trainer("tenant-0")
    optimizer = trainer._optimizer
    assert optimizer is not None
    opt_bytes = tensor_bytes(
        v for state in optimizer.state.values() for v in state.values() if torch.is_tensor(v)
    )
    assert shared.model is not None
    base_bytes = tensor_bytes(p for n, p in shared.model.named_parameters() if "lora_" not in n)
    return {
        "adapters": count,
        "base_param_mib": base_bytes / 2**20,
        "adapter_param_kib": tensor_bytes(trainer._trainable_parameters()) / 1024,
        "adapter_adam_state_kib": opt_bytes / 1024,
        "rss_start_mib": rss_start,
        "rss_after_first_mib": rss_first,
        "rss_after_all_mib": rss_mib(),
        "first_step_s": times[0],
        "later_step_median_s": statistics.median(times[1:]) if count > 1 else None,
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--model", default=None, help="model folder (default: a fresh engine tiny model)")
    parser.add_argument("--counts", default="1,4,16")
    parser.add_argument("--rank", type=int, default=8)
    parser.add_argument("--tokens", type=int, default=256)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--one", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one is not None:
        import torch

        torch.set_num_threads(args.threads)
        print(json.dumps(measure(args.model, args.one, args.rank, args.tokens)))
        return
    with tempfile.TemporaryDirectory() as tmp:
        model = args.model
        if model is None:
            from openclaw_engine.tiny_model import make_tiny_model

            model = str(make_tiny_model(Path(tmp) / "tiny"))
        load_at_end = report_load("adapter training bench")
        print(f"rank {args.rank}, {args.tokens} tokens x 4 samples per step")
        header = (
            "adapters  adapter params  Adam state  base params  RSS start  +1st step  +all steps"
            "  RSS/adapter  1st step  later step (median)"
        )
        print(header)
        for count in (int(c) for c in args.counts.split(",")):
            out = subprocess.run(
                [
                    sys.executable,
                    __file__,
                    "--one",
                    str(count),
                    "--model",
                    model,
                    "--rank",
                    str(args.rank),
                    "--tokens",
                    str(args.tokens),
                    "--threads",
                    str(args.threads),
                ],
                check=True,
                capture_output=True,
                text=True,
                env={**os.environ, "PYTHONPATH": str(ROOT / "engine")},
            )
            m = json.loads(out.stdout.strip().splitlines()[-1])
            per = (
                (m["rss_after_all_mib"] - m["rss_after_first_mib"]) / (count - 1)
                if count > 1
                else float("nan")
            )
            later = f"{m['later_step_median_s']:.3f} s" if m["later_step_median_s"] is not None else "-"
            print(
                f"{count:8d}  {m['adapter_param_kib']:10.1f} KiB  {m['adapter_adam_state_kib']:6.1f} KiB"
                f"  {m['base_param_mib']:7.1f} MiB  {m['rss_start_mib']:6.0f} MiB"
                f"  {m['rss_after_first_mib'] - m['rss_start_mib']:+6.0f} MiB"
                f"  {m['rss_after_all_mib'] - m['rss_start_mib']:+7.0f} MiB  {per:8.2f} MiB"
                f"  {m['first_step_s']:6.3f} s  {later}"
            )
        load_at_end()


if __name__ == "__main__":
    main()

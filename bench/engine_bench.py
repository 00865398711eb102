"""Reference-engine figures: generate tokens/s and train-step time for a 16 x 256-token batch.

Starts a real engine process (`python -m openclaw_engine serve --trainer`) on a tiny model (or --model
DIR) and talks to it over HTTP. Prints medians and p99s, plus ratios against baselines measured in the
same run (concurrency 4 vs 1 for generation; a train step vs a prefill of the same batch). Never passes or
fails on time.

    .venv/bin/python bench/engine_bench.py [--model DIR] [--device cpu|cuda] [--steps 5]
"""

from __future__ import annotations

import argparse
import random
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return ordered[index]


def start_engine(model: str, device: str) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "openclaw_engine",
            "serve",
            "--model",
            model,
            "--port",
            "0",
            "--trainer",
            "--device",
            device,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert proc.stdout is not None
    deadline = time.time() + 300
    while time.time() < deadline:
        line = proc.stdout.readline()
        if not line:
            raise RuntimeError("engine exited before it was ready")
        if line.startswith("ready "):
            return proc, line.split()[1]
    raise RuntimeError("engine was not ready within 300 s")


def generate_once(
    client: httpx.Client, url: str, prompt_ids: list[int], new_tokens: int
) -> tuple[float, int]:
    started = time.perf_counter()
    response = client.post(
        f"{url}/generate",
        json={
            "input_ids": prompt_ids,
            "sampling_params": {"temperature": 1.0, "max_new_tokens": new_tokens, "ignore_eos": True},
            "return_logprob": True,
        },
        timeout=600,
    )
    response.raise_for_status()
    return time.perf_counter() - started, int(response.json()["meta_info"]["completion_tokens"])


def bench_generate(url: str, vocab: int, concurrency: int, requests: int, new_tokens: int) -> dict:
    rng = random.Random(concurrency)
    prompts = [[rng.randrange(10, vocab) for _ in range(64)] for _ in range(requests)]
    with httpx.Client() as client, ThreadPoolExecutor(concurrency) as pool:
        started = time.perf_counter()
        results = list(pool.map(lambda p: generate_once(client, url, p, new_tokens), prompts))
        wall = time.perf_counter() - started
    latencies = [r[0] for r in results]
    tokens = sum(r[1] for r in results)
    return {
        "tokens_per_s": tokens / wall,
        "p50_s": statistics.median(latencies),
        "p99_s": percentile(latencies, 0.99),
    }


def train_batch(vocab: int, step: int, samples: int = 16, length: int = 256, response: int = 128) -> dict:
    rng = random.Random(step)
    batch = []
    for i in range(samples):
        tokens = [rng.randrange(10, vocab) for _ in range(length)]
        batch.append(
            {
                "tokens": tokens,
                "response_length": response,
                "loss_mask": [1] * response,
                "rollout_log_probs": [-5.0] * response,
                "reward": 1.0 if i % 2 == 0 else -1.0,
            }
        )
    return {
        "step_id": f"bench-{step}",
        "samples": batch,
        "loss": {"method": "grpo"},
        "optimizer": {"lr": 1e-5},
    }


def bench_train(url: str, vocab: int, steps: int) -> dict:
    times = []
    prefill_times = []
    with httpx.Client(timeout=1800) as client:
        for step in range(steps + 1):
            body = train_batch(vocab, step)
            started = time.perf_counter()
            client.post(f"{url}/train_step", json=body).raise_for_status()
            elapsed = time.perf_counter() - started
            if step > 0:  # the first step builds the optimizer: warm-up
                times.append(elapsed)
            # Baseline: a forward-only prefill of the same 16 sequences through the serving side.
            started = time.perf_counter()
            for sample in body["samples"]:
                client.post(
                    f"{url}/generate",
                    json={
                        "input_ids": sample["tokens"],
                        "sampling_params": {"max_new_tokens": 0},
                        "return_logprob": True,
                        "logprob_start_len": 128,
                    },
                ).raise_for_status()
            if step > 0:
                prefill_times.append(time.perf_counter() - started)
    median = statistics.median(times)
    return {
        "median_s": median,
        "p99_s": percentile(times, 0.99),
        "prefill_median_s": statistics.median(prefill_times),
        "ratio_vs_prefill": median / statistics.median(prefill_times),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--model", help="a Hugging Face model folder (default: a tiny random model)")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--requests", type=int, default=8)
    parser.add_argument("--new-tokens", type=int, default=128)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        model = args.model
        if model is None:
            model = str(Path(tmp) / "tiny-model")
            subprocess.run([sys.executable, "-m", "openclaw_engine", "make-tiny-model", model], check=True)
        proc, url = start_engine(model, args.device)
        try:
            info = httpx.get(f"{url}/get_model_info").json()
            vocab = int(info.get("vocab_size") or 256)
            print(f"engine {url} model={model} device={args.device} vocab={vocab}")
            one = bench_generate(url, vocab, 1, args.requests, args.new_tokens)
            four = bench_generate(url, vocab, 4, args.requests, args.new_tokens)
            print(
                f"generate c=1: {one['tokens_per_s']:.1f} tok/s,"
                f" p50 {one['p50_s']:.2f} s, p99 {one['p99_s']:.2f} s"
                f" ({args.requests} requests x {args.new_tokens} tokens)"
            )
            print(
                f"generate c=4: {four['tokens_per_s']:.1f} tok/s,"
                f" p50 {four['p50_s']:.2f} s, p99 {four['p99_s']:.2f} s"
                f"; throughput ratio c4/c1 = {four['tokens_per_s'] / one['tokens_per_s']:.2f}"
            )
            train = bench_train(url, vocab, args.steps)
            print(
                f"train_step 16 x 256 tokens (128 response): median {train['median_s']:.2f} s,"
                f" p99 {train['p99_s']:.2f} s"
                f" over {args.steps} steps; prefill of the same batch {train['prefill_median_s']:.2f} s;"
                f" ratio train/prefill = {train['ratio_vs_prefill']:.1f}"
            )
        finally:
            proc.terminate()
            proc.wait(timeout=30)


if __name__ == "__main__":
    main()

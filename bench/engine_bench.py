"""Engine figures, the reference engine and vLLM side by side on the same model folder.

    .venv/bin/python bench/engine_bench.py [--model DIR] [--engines reference,vllm] [--concurrency 1,8,32]
        [--new-tokens 128] [--prompt-tokens 64] [--prefix-tokens 17000] [--rounds 1] [--turns 5]
        [--train-steps 5] [--device cpu|cuda] [--seeded] [--threads 0]

Each engine runs alone (started, measured, stopped; never two at once) on the tiny default model unless
--model names a folder: the reference engine (`python -m openclaw_engine serve --trainer`) and vLLM
(`.venv-vllm`, its OpenAI server, float32, eager). Both are driven over HTTP with token ids (no tokenising):
- generation: at each concurrency, max(16, 2c) requests of --prompt-tokens random ids + --new-tokens sampled
  tokens (temperature 1, ignore_eos, the sampled tokens' log-probs returned, no seed: vLLM 0.32's CPU build
  cannot take one; --seeded seeds the reference engine's): throughput (sampled tokens / wall time) and
  per-request latency p50 / p99; with --rounds N, measured N times and the median round
  reported with the range (one short run at c32 varies by 20 % or more on a 2-core machine);
- turns over a shared prefix (OpenClaw's system prompt and tools are ~17k tokens with the tiny model's
  tokenizer, the same every turn): the first request prefills --prefix-tokens; each later turn appends 200 new
  tokens to the previous prompt and samples 32: latency of the first turn and of the later ones;
- (reference only) `/train_step` for a GRPO batch of 16 x 256 tokens against 16 prefills of the same batch.
Prints medians, p99s and ratios against vLLM measured in the same run; never passes or fails on time.
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

import httpx
from machine_load import report_load  # bench/machine_load.py: this script's own folder

ROOT = Path(__file__).resolve().parent.parent
VLLM_PYTHON = ROOT / ".venv-vllm" / "bin" / "python"
READY_TIMEOUT_S = 600


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return ordered[index]


# ------------------------------------------------------------------------------------------ engines
class Engine:
    """One engine process and how to send it a token-id request."""

    name: str
    url: str

    def generate(self, client: httpx.Client, ids: list[int], new_tokens: int, seed: int) -> int:
        raise NotImplementedError


class ReferenceEngine(Engine):
    name = "reference"

    def __init__(self, url: str, seeded: bool) -> None:
        self.url = url
        self.seeded = seeded

    def generate(self, client: httpx.Client, ids: list[int], new_tokens: int, seed: int) -> int:
        response = client.post(
            f"{self.url}/generate",
            json={
                "input_ids": ids,
                "sampling_params": {
                    "temperature": 1.0,
                    "max_new_tokens": new_tokens,
                    "ignore_eos": True,
                    **({"seed": seed} if self.seeded else {}),
                },
                "return_logprob": True,
            },
            timeout=1800,
        )
        response.raise_for_status()
        return int(response.json()["meta_info"]["completion_tokens"])


class VllmEngine(Engine):
    name = "vllm"

    def __init__(self, url: str) -> None:
        self.url = url

    def generate(self, client: httpx.Client, ids: list[int], new_tokens: int, seed: int) -> int:
        response = client.post(
            f"{self.url}/v1/completions",
            json={
                "model": "bench",
                "prompt": ids,
                "max_tokens": new_tokens,
                "temperature": 1.0,
                "ignore_eos": True,
                # No per-request seed: vLLM 0.32's CPU build kills its engine core on a seeded request whose
                # prompt needs chunked prefill ("CPU Generator does not use offset").
                "logprobs": 0,
            },
            timeout=1800,
        )
        response.raise_for_status()
        return int(response.json()["usage"]["completion_tokens"])


def _wait_ready(proc: subprocess.Popen, ready: Callable[[], bool], what: str) -> None:
    deadline = time.time() + READY_TIMEOUT_S
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited with {proc.returncode} before it was ready")
        if ready():
            return
        time.sleep(0.5)
    raise RuntimeError(f"{what} was not ready within {READY_TIMEOUT_S} s")


@contextmanager
def reference_engine(model: str, device: str, seeded: bool, threads: int) -> Iterator[Engine]:
    cmd = [sys.executable, "-m", "openclaw_engine", "serve", "--model", model, "--port", "0"]
    cmd += ["--threads", str(threads)]
    proc = subprocess.Popen(
        [*cmd, "--trainer", "--device", device, "--log-level", "warning"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        if not line.startswith("ready "):
            raise RuntimeError(f"engine exited before it was ready ({line!r})")
        yield ReferenceEngine(line.split()[1], seeded)
    finally:
        proc.terminate()
        proc.wait(timeout=60)


@contextmanager
def vllm_engine(model: str, port: int) -> Iterator[Engine]:
    if not VLLM_PYTHON.exists():
        raise SystemExit(f"{VLLM_PYTHON} is missing: run `bash scripts/vllm-setup.sh`")
    cmd = [str(VLLM_PYTHON), "-m", "vllm.entrypoints.openai.api_server", "--model", model]
    cmd += ["--served-model-name", "bench", "--dtype", "float32", "--enforce-eager"]
    cmd += ["--port", str(port), "--host", "127.0.0.1", "--seed", "0"]
    env = {**os.environ, "VLLM_CPU_KVCACHE_SPACE": os.environ.get("VLLM_CPU_KVCACHE_SPACE", "4")}
    log = tempfile.TemporaryFile(mode="w+")
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env)
    url = f"http://127.0.0.1:{port}"

    def ready() -> bool:
        try:
            return httpx.get(f"{url}/health", timeout=2).status_code == 200
        except httpx.HTTPError:
            return False

    try:
        try:
            _wait_ready(proc, ready, "vLLM")
        except RuntimeError:
            log.seek(0)
            sys.stderr.write(log.read()[-4000:])
            raise
        yield VllmEngine(url)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


# ------------------------------------------------------------------------------------------ measurements
def bench_generate(engine: Engine, vocab: int, concurrency: int, prompt_tokens: int, new_tokens: int) -> dict:
    rng = random.Random(concurrency)
    requests = max(16, 2 * concurrency)
    prompts = [[rng.randrange(10, vocab - 16) for _ in range(prompt_tokens)] for _ in range(requests)]
    with httpx.Client(limits=httpx.Limits(max_connections=concurrency + 4)) as client:
        engine.generate(client, prompts[0], 4, 0)  # warm-up outside the timing

        def one(i: int) -> tuple[float, int]:
            started = time.perf_counter()
            tokens = engine.generate(client, prompts[i], new_tokens, i)
            return time.perf_counter() - started, tokens

        with ThreadPoolExecutor(concurrency) as pool:
            started = time.perf_counter()
            results = list(pool.map(one, range(requests)))
            wall = time.perf_counter() - started
    latencies = [r[0] for r in results]
    return {
        "requests": requests,
        "tokens_per_s": sum(r[1] for r in results) / wall,
        "p50_s": statistics.median(latencies),
        "p99_s": percentile(latencies, 0.99),
    }


def median_round(rounds: list[dict]) -> dict:
    """The round with the median throughput (the lower middle one of an even count), with the range of all."""
    ordered = sorted(rounds, key=lambda r: r["tokens_per_s"])
    chosen = dict(ordered[(len(ordered) - 1) // 2])
    chosen["min_tokens_per_s"] = ordered[0]["tokens_per_s"]
    chosen["max_tokens_per_s"] = ordered[-1]["tokens_per_s"]
    return chosen


def bench_turns(engine: Engine, vocab: int, prefix_tokens: int, turns: int) -> dict:
    rng = random.Random(7)
    prompt = [rng.randrange(10, vocab - 16) for _ in range(prefix_tokens)]
    times: list[float] = []
    with httpx.Client() as client:
        for turn in range(turns + 1):
            started = time.perf_counter()
            engine.generate(client, prompt, 32, turn)
            times.append(time.perf_counter() - started)
            prompt = prompt + [rng.randrange(10, vocab - 16) for _ in range(200)]
    later = times[1:]
    return {"first_s": times[0], "later_p50_s": statistics.median(later), "later_max_s": max(later)}


def train_batch(vocab: int, step: int, samples: int = 16, length: int = 256, response: int = 128) -> dict:
    rng = random.Random(step)
    batch = []
    for i in range(samples):
        tokens = [rng.randrange(10, vocab - 16) for _ in range(length)]
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


# ------------------------------------------------------------------------------------------ main
def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--model", help="a Hugging Face model folder (default: the tiny default model)")
    parser.add_argument("--device", default="cpu", help="the reference engine's device")
    parser.add_argument("--engines", default="reference,vllm")
    parser.add_argument("--concurrency", default="1,8,32")
    parser.add_argument("--prompt-tokens", type=int, default=64)
    parser.add_argument("--new-tokens", type=int, default=128)
    parser.add_argument("--prefix-tokens", type=int, default=17000)
    parser.add_argument(
        "--rounds", type=int, default=1, help="generation runs per concurrency; the median one is reported"
    )
    parser.add_argument("--turns", type=int, default=5)
    parser.add_argument("--train-steps", type=int, default=5)
    parser.add_argument(
        "--threads", type=int, default=0, help="the reference engine's torch CPU threads (0: torch's default)"
    )
    parser.add_argument(
        "--seeded",
        action="store_true",
        help="seed every reference engine request (a seed's exact reply costs one uniform per vocabulary"
        " entry per token); vLLM's requests are never seeded",
    )
    args = parser.parse_args()
    # Stopped from outside: unwind, so the engine processes are stopped too.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    levels = [int(c) for c in args.concurrency.split(",")]
    engines = [e.strip() for e in args.engines.split(",") if e.strip()]
    load_at_end = report_load("engine bench")

    with tempfile.TemporaryDirectory() as tmp:
        model = args.model
        if model is None:
            model = str(Path(tmp) / "tiny-model")
            subprocess.run(
                [sys.executable, "-m", "openclaw_engine", "make-tiny-model", model],
                check=True,
                stdout=subprocess.DEVNULL,
            )
        from transformers import AutoConfig

        vocab = int(AutoConfig.from_pretrained(model).vocab_size)
        seeds = "seeded reference requests, unseeded vLLM ones" if args.seeded else "no request seeded"
        print(f"model={model} vocab={vocab} engines={engines} cpus={os.cpu_count()} ({seeds})")
        results: dict[str, dict] = {}
        for name in engines:
            started = (
                reference_engine(model, args.device, args.seeded, args.threads)
                if name == "reference"
                else vllm_engine(model, _free_port())
            )
            with started as engine:
                gen = {
                    c: median_round(
                        [
                            bench_generate(engine, vocab, c, args.prompt_tokens, args.new_tokens)
                            for _ in range(args.rounds)
                        ]
                    )
                    for c in levels
                }
                turns = bench_turns(engine, vocab, args.prefix_tokens, args.turns) if args.turns > 0 else None
                train = (
                    bench_train(engine.url, vocab, args.train_steps)
                    if name == "reference" and args.train_steps
                    else None
                )
            results[name] = {"generate": gen, "turns": turns, "train": train}

        shape = f"{args.prompt_tokens} prompt + {args.new_tokens} sampled tokens"
        rounds = f"; the median of {args.rounds} rounds (their range)" if args.rounds > 1 else ""
        print(f"\ngeneration: max(16, 2c) requests of {shape}{rounds}")
        print("| concurrency | " + " | ".join(f"{n} tok/s | {n} p50 / p99 s" for n in engines) + " | ratio |")
        for c in levels:
            cells = []
            for n in engines:
                g = results[n]["generate"][c]
                spread = (
                    f" ({g['min_tokens_per_s']:.0f}-{g['max_tokens_per_s']:.0f})" if args.rounds > 1 else ""
                )
                cells.append(f"{g['tokens_per_s']:.0f}{spread} | {g['p50_s']:.2f} / {g['p99_s']:.2f}")
            ratio = "-"
            if "reference" in results and "vllm" in results:
                ours, theirs = (results[n]["generate"][c]["tokens_per_s"] for n in ("reference", "vllm"))
                ratio = f"{ours / theirs:.2f}x"
            print(f"| c{c} | " + " | ".join(cells) + f" | {ratio} |")
        if args.turns > 0:
            print(
                f"\nturns over a shared {args.prefix_tokens}-token prefix (+200 new tokens, 32 sampled each):"
            )
            for n in engines:
                t = results[n]["turns"]
                later = f"later p50 {t['later_p50_s']:.2f} s, max {t['later_max_s']:.2f} s"
                print(f"  {n}: first {t['first_s']:.2f} s; {later}")
        train = results.get("reference", {}).get("train")
        if train:
            print(
                f"\ntrain_step 16 x 256 tokens (128 response): median {train['median_s']:.2f} s,"
                f" p99 {train['p99_s']:.2f} s over {args.train_steps} steps;"
                f" 16 prefills of the same batch {train['prefill_median_s']:.2f} s;"
                f" ratio train/prefill = {train['ratio_vs_prefill']:.1f}"
            )
    print()
    load_at_end()


if __name__ == "__main__":
    main()

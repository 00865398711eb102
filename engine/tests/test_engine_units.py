"""In-process units: incremental detokenisation, stop strings, sampling, the step gate."""

from __future__ import annotations

import random
import threading
import time
from pathlib import Path

import pytest
import torch
from transformers import AutoTokenizer, PreTrainedTokenizerBase

from openclaw_engine.detokenizer import IncrementalDetokenizer, StopStringFilter
from openclaw_engine.sampling import SamplingParams, make_generator, sample_token, top_logprobs
from openclaw_engine.step_gate import StepCancelled, StepGate


@pytest.fixture(scope="module")
def tokenizer(tiny_model_dir: Path) -> PreTrainedTokenizerBase:
    return AutoTokenizer.from_pretrained(tiny_model_dir)


# ------------------------------------------------------------------------------------ detokeniser
def test_incremental_detokenizer_matches_full_decode(tokenizer: PreTrainedTokenizerBase) -> None:
    rng = random.Random(0)
    text_ids = tokenizer.encode("héllo wörld — 🙂 <think>ok</think>", add_special_tokens=False)
    sequences = [text_ids] + [[rng.randrange(len(tokenizer)) for _ in range(40)] for _ in range(30)]
    for ids in sequences:
        for skip in (True, False):

            def decode(x: list[int], skip: bool = skip) -> str:
                return tokenizer.decode(x, skip_special_tokens=skip)

            detok = IncrementalDetokenizer(decode)
            pieces = [detok.add(t) for t in ids]
            pieces.append(detok.flush())
            assert "".join(pieces) == decode(ids)


def test_multibyte_character_is_held_until_complete(tokenizer: PreTrainedTokenizerBase) -> None:
    ids = tokenizer.encode("🙂", add_special_tokens=False)
    assert len(ids) > 1  # four bytes in several byte-level tokens
    detok = IncrementalDetokenizer(lambda x: tokenizer.decode(x))
    assert [detok.add(t) for t in ids] == [""] * (len(ids) - 1) + ["🙂"]


def test_stop_string_filter() -> None:
    stop = StopStringFilter(("END", "\n\n"), no_stop_trim=False)
    assert stop.feed("hello E").text == "hello "  # "E" might start "END"
    assert stop.feed("x").text == "Ex"
    match = stop.feed("yz\n\nmore")
    assert (match.text, match.matched) == ("yz", "\n\n")
    keep = StopStringFilter(("END",), no_stop_trim=True)
    match = keep.feed("abEN")
    assert match.text == "ab" and match.matched is None
    match = keep.feed("D tail")
    assert (match.text, match.matched) == ("END", "END")
    assert StopStringFilter((), no_stop_trim=False).feed("anything").text == "anything"


# ------------------------------------------------------------------------------------ sampling
def test_greedy_and_degenerate_filters_pick_argmax() -> None:
    logits = torch.randn(50, generator=torch.Generator().manual_seed(0))
    best = int(torch.argmax(logits))
    gen = make_generator(1, torch.device("cpu"))
    for params in (
        SamplingParams(temperature=0.0),
        SamplingParams(top_k=1),
        SamplingParams(top_p=1e-6),
        SamplingParams(min_p=0.999),
    ):
        token, _ = sample_token(logits, params, gen, original_logprobs=False)
        assert token == best, params


def test_reported_logprobs_are_temperature_scaled_and_unfiltered() -> None:
    logits = torch.randn(30, generator=torch.Generator().manual_seed(1))
    gen = make_generator(2, torch.device("cpu"))
    _, lp = sample_token(logits, SamplingParams(temperature=0.5, top_k=3), gen, original_logprobs=False)
    assert torch.allclose(lp, torch.log_softmax(logits / 0.5, dim=-1))
    _, lp = sample_token(logits, SamplingParams(temperature=0.5), gen, original_logprobs=True)
    assert torch.allclose(lp, torch.log_softmax(logits, dim=-1))
    _, lp = sample_token(logits, SamplingParams(temperature=0.0), gen, original_logprobs=False)
    assert torch.allclose(lp, torch.log_softmax(logits, dim=-1))  # greedy reports T = 1


def test_top_k_restricts_draws_and_seed_is_reproducible() -> None:
    logits = torch.zeros(20)
    logits[:3] = 1.0
    params = SamplingParams(top_k=3, seed=7)
    draws = [sample_token(logits, params, make_generator(7, torch.device("cpu")), original_logprobs=False)[0]]
    gen = make_generator(7, torch.device("cpu"))
    many = [sample_token(logits, params, gen, original_logprobs=False)[0] for _ in range(200)]
    assert set(many) <= {0, 1, 2} and len(set(many)) == 3
    assert many[0] == draws[0]
    gen2 = make_generator(7, torch.device("cpu"))
    assert [sample_token(logits, params, gen2, original_logprobs=False)[0] for _ in range(200)] == many


def test_top_logprobs_sorted() -> None:
    lp = torch.log_softmax(torch.tensor([0.1, 3.0, 2.0, -1.0]), dim=-1)
    top = top_logprobs(lp, 2)
    assert [t for _, t in top] == [1, 2]
    assert top[0][0] == pytest.approx(float(lp[1]))


# ------------------------------------------------------------------------------------ step gate
def _worker(
    gate: StepGate, name: str, steps: int, log: list[str], cancel: threading.Event | None = None
) -> None:
    try:
        for _ in range(steps):
            with gate.step(cancel):
                log.append(name)
                time.sleep(0.002)
    except StepCancelled:
        log.append(f"{name}-cancelled")


def test_gate_interleaves_requests_fairly() -> None:
    gate = StepGate()
    log: list[str] = []
    threads = [threading.Thread(target=_worker, args=(gate, n, 30, log)) for n in "ab"]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert sorted(log) == ["a"] * 30 + ["b"] * 30
    # FIFO grants: once both are queued, neither runs more than a couple of steps in a row. Only the span
    # where both run counts: on a loaded machine the second thread may start late, and the first ends early.
    order = "".join(log)
    first, last = order[0], order[-1]
    other = "b" if first == "a" else "a"
    both = order[order.index(other) : order.rindex(first) + 1] if first != last else order
    longest = max((len(run) for run in both.replace("ab", "a b").replace("ba", "b a").split()), default=0)
    assert longest <= 3, order


def test_gate_pause_holds_steps_and_exclusive_still_runs() -> None:
    gate = StepGate()
    log: list[str] = []
    assert gate.pause() == 0
    t = threading.Thread(target=_worker, args=(gate, "a", 2, log))
    t.start()
    time.sleep(0.3)
    assert log == []
    with gate.exclusive():  # weight swaps are allowed while paused
        log.append("swap")
    gate.resume()
    t.join(5)
    assert log == ["swap", "a", "a"]


def test_gate_cancel_while_waiting() -> None:
    gate = StepGate()
    gate.pause()
    cancel = threading.Event()
    log: list[str] = []
    t = threading.Thread(target=_worker, args=(gate, "a", 1, log, cancel))
    t.start()
    cancel.set()
    t.join(5)
    assert log == ["a-cancelled"]
    gate.resume()
    with gate.step():  # the cancelled ticket left the queue: the gate still works
        pass

"""Continuous batching: one thread runs every forward pass, over all running requests at once.

Each iteration (vLLM V1's policy) gives every running request its next step inside one token budget: decoding
requests first (one token each), then prompt chunks of the requests still prefilling, in arrival order
(chunked prefill, so a 17k-token prompt never stalls the others' streams for more than one chunk). The tokens
are packed into one forward pass (`packed_attention.py`); the logits rows each request needs come back and the
request samples from its own row with its own RNG. A request's numbers therefore depend only on its own
tokens, seed and the weights (batching changes them by float rounding only: about 1e-6 in float32, see
engine/README.md).

A new request first takes the KV of its longest cached prefix (`prefix_cache.py`) and prefills only the rest;
a prompt is cached once it is prefilled, and the whole sequence when it finishes.

Pause, retract, abort and weight swaps keep the contract of the token-by-token engine this replaced: the loop
takes the `StepGate` for each step (a pause holds it between steps; a swap happens between two steps), and a
request whose KV was built under an older `cache_epoch` (new weights, or a retract) is prefilled again —
prompt and tokens so far — before its next token, so each token's log-prob is from the weights that sampled
it.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections import deque
from dataclasses import dataclass, field
from typing import Any

import torch

from .detokenizer import IncrementalDetokenizer, StopStringFilter
from .generation_events import (
    Event,
    Finished,
    GenerationRequest,
    LogprobEntry,
    PromptLogprobs,
    TokenStep,
    TopEntry,
)
from .lora_serving import LoraAdapter
from .packed_attention import PackedBatch, PackedSegment, SequenceKV
from .prefix_cache import PrefixCache
from .sampling import make_generator, sample_tokens, top_logprobs
from .step_gate import StepCancelled
from .step_model import StepModel

log = logging.getLogger(__name__)

Item = Event | BaseException | None  # None ends a request's stream
ABORTED = {"type": "abort", "message": "request aborted"}


@dataclass(frozen=True)
class EventChannel:
    """Where a request's events go: an asyncio queue, filled on its event loop's thread."""

    loop: asyncio.AbstractEventLoop
    queue: asyncio.Queue[Item]


@dataclass
class _Sequence:
    req: GenerationRequest
    channel: EventChannel
    cancel: threading.Event
    ids: list[int]
    temperature: float
    generator: torch.Generator
    detok: IncrementalDetokenizer
    stops: StopStringFilter
    stop_ids: frozenset[int]
    want_prompt_logprobs: bool
    first_needed: int  # first prompt position whose logits row is needed (row p predicts token p + 1)
    output: list[int] = field(default_factory=list)
    kv: SequenceKV | None = None
    prompt_done: bool = False  # the prompt was prefilled once (prompt log-probs reported, prompt cached)
    prompt_entries: list[LogprobEntry] = field(default_factory=list)
    prompt_tops: list[TopEntry | None] = field(default_factory=list)
    cached_tokens: int = 0
    weight_version: str = ""
    adapter: LoraAdapter | None = None  # the load of req.lora_name its KV is built under

    @property
    def cache_key(self) -> tuple[str, int] | None:
        return self.adapter.cache_key if self.adapter is not None else None

    @property
    def prompt_len(self) -> int:
        return len(self.req.input_ids)

    @property
    def collecting_prompt_logprobs(self) -> bool:
        return self.want_prompt_logprobs and not self.prompt_done


@dataclass
class _Slot:
    """One request's share of a step: ids[start:start + count], and which of its rows' logits come back."""

    seq: _Sequence
    start: int
    count: int
    first_kept: int  # position of the first kept row; rows first_kept .. start + count - 1 are kept
    ends_sequence: bool  # the chunk reaches the last token: the last kept row is for sampling


@dataclass
class _Step:
    slots: list[_Slot]
    input_ids: list[int]
    positions: list[int]
    keep: list[int]
    batch: PackedBatch


class BatchScheduler:
    def __init__(
        self, runner: StepModel, *, max_batch_tokens: int, max_running: int, prefix_cache: PrefixCache
    ) -> None:
        self._runner = runner
        self.max_batch_tokens = max_batch_tokens
        self.max_running = max_running
        self.prefix_cache = prefix_cache
        self._cond = threading.Condition()
        self._submitted: deque[_Sequence] = deque()
        self._running: list[_Sequence] = []
        self._wake = threading.Event()  # interrupts a step wait (pause) so aborts and arrivals are handled
        self._epoch = runner.cache_epoch
        # Events of one iteration, handed to each event loop in one call (one wake-up, not one per token).
        self._outbox: dict[asyncio.AbstractEventLoop, list[tuple[_Sequence, Item]]] = {}
        self._thread = threading.Thread(target=self._loop, name="engine-scheduler", daemon=True)
        self._thread.start()

    # ------------------------------------------------------------------ requests
    def submit(self, req: GenerationRequest, channel: EventChannel, cancel: threading.Event) -> None:
        runner = self._runner
        params = req.sampling
        want_prompt = req.return_logprob and req.logprob_start_len >= 0
        seq = _Sequence(
            req=req,
            channel=channel,
            cancel=cancel,
            ids=list(req.input_ids),
            temperature=params.logprob_temperature(runner.original_logprobs),
            generator=make_generator(params.seed, runner.device),
            detok=IncrementalDetokenizer(
                lambda ids: runner.decode(ids, skip_special_tokens=params.skip_special_tokens)
            ),
            stops=StopStringFilter(params.stop, no_stop_trim=params.no_stop_trim),
            stop_ids=params.stop_token_ids | (frozenset() if params.ignore_eos else runner.eos_token_ids),
            want_prompt_logprobs=want_prompt,
            first_needed=max(req.logprob_start_len - 1, 0) if want_prompt else len(req.input_ids) - 1,
            weight_version=runner.weight_version,
        )
        runner.gate.begin_request()
        with self._cond:
            self._submitted.append(seq)
            self._cond.notify()
        self._wake.set()

    def wake(self) -> None:
        """Make the loop look at cancel flags now (also while paused)."""
        self._wake.set()
        with self._cond:
            self._cond.notify()

    # ------------------------------------------------------------------ the loop
    def _loop(self) -> None:
        while True:
            with self._cond:
                while not self._submitted and not self._running:
                    self._cond.wait()
                while self._submitted and len(self._running) < self.max_running:
                    self._running.append(self._submitted.popleft())
            self._wake.clear()
            try:
                self._iterate()
            except Exception as exc:  # a bug must fail the requests it touched, never hang them all
                log.exception("scheduler iteration failed")
                for seq in list(self._running):
                    self._fail(seq, exc)
            finally:
                self._flush()

    def _emit(self, seq: _Sequence, item: Item) -> None:
        self._outbox.setdefault(seq.channel.loop, []).append((seq, item))

    def _flush(self) -> None:
        outbox, self._outbox = self._outbox, {}
        for loop, items in outbox.items():
            try:
                loop.call_soon_threadsafe(_deliver, items)
            except RuntimeError:  # that event loop is closed (server shutting down): nobody is listening
                for seq, _ in items:
                    seq.cancel.set()

    def _iterate(self) -> None:
        for seq in list(self._running):
            if seq.cancel.is_set():
                self._finish(seq, Finished(dict(ABORTED), "", self._runner.weight_version, seq.cached_tokens))
        if not self._running:
            return
        step: _Step | None = None
        try:
            with self._runner.gate.step(self._wake):  # waits while paused; a weight swap runs between steps
                self._sync_epoch()
                step = self._plan()
                logits = self._runner.forward_step(step.input_ids, step.positions, step.batch, step.keep)
                version = self._runner.weight_version
        except StepCancelled:
            return
        except Exception as exc:  # e.g. a device failure: the requests in this step fail, the rest go on
            log.exception("forward pass failed")
            for slot in step.slots if step is not None else list(map(_whole, self._running)):
                self._fail(slot.seq, exc)
            return
        self._advance(step, logits, version)

    def _sync_epoch(self) -> None:
        """New weights or a retract: cached KV is stale; running requests prefill again first."""
        self._sync_adapters()
        epoch = self._runner.cache_epoch
        if epoch == self._epoch:
            return
        self._epoch = epoch
        self.prefix_cache.clear()
        for seq in self._running:
            _forget_kv(seq)

    def _sync_adapters(self) -> None:
        """Each request takes its adapter's current load; a replaced adapter's requests prefill again."""
        adapters = self._runner.lora.adapters
        for seq in list(self._running):
            name = seq.req.lora_name
            if name is None:
                continue
            current = adapters.get(name)
            if current is None:
                reason = {"type": "abort", "message": f"LoRA adapter {name!r} is not loaded"}
                self._finish(seq, Finished(reason, "", seq.weight_version, seq.cached_tokens))
            elif current is not seq.adapter:
                if seq.adapter is not None:
                    _forget_kv(seq)  # built under the adapter's previous weights
                seq.adapter = current
                seq.weight_version = current.weight_version

    def _plan(self) -> _Step:
        step = _Step([], [], [], [], PackedBatch([]))
        budget = self.max_batch_tokens
        waiting: list[_Sequence] = []
        for seq in self._running:  # decoding requests first: one token each
            if seq.kv is not None and seq.prompt_done and seq.kv.length == len(seq.ids) - 1:
                self._add(step, seq, 1)
                budget -= 1
            else:
                waiting.append(seq)
        for seq in waiting:  # then prompt chunks, in arrival order, within what is left of the budget
            if budget <= 0:
                break
            if seq.kv is None:
                self._start_prefill(seq)
            assert seq.kv is not None
            count = min(len(seq.ids) - seq.kv.length, budget)
            self._add(step, seq, count)
            budget -= count
        return step

    def _start_prefill(self, seq: _Sequence) -> None:
        """A fresh KV cache holding the longest cached prefix (never the rows whose logits are needed)."""
        seq.kv = SequenceKV(self._runner.num_layers)
        limit = (
            min(seq.first_needed, len(seq.ids) - 1) if seq.collecting_prompt_logprobs else len(seq.ids) - 1
        )
        matched, segments = self.prefix_cache.match(seq.ids, limit, seq.cache_key)
        if matched > 0:
            seq.kv.load(segments)
            if not seq.prompt_done:
                seq.cached_tokens = matched

    def _add(self, step: _Step, seq: _Sequence, count: int) -> None:
        assert seq.kv is not None
        start = seq.kv.length
        end = start + count
        ends = end == len(seq.ids)
        first_kept = max(start, seq.first_needed) if seq.collecting_prompt_logprobs else end - 1
        if not ends and not (seq.collecting_prompt_logprobs and first_kept < end):
            first_kept = end  # nothing needed from this chunk
        offset = len(step.input_ids)
        step.batch.segments.append(PackedSegment(seq.kv, offset, count))
        if seq.adapter is not None:
            step.batch.lora.append((offset, offset + count, seq.adapter))
        step.input_ids.extend(seq.ids[start:end])
        step.positions.extend(range(start, end))
        step.keep.extend(range(offset + first_kept - start, offset + count))
        step.slots.append(_Slot(seq, start, count, first_kept, ends))

    # ------------------------------------------------------------------ after the forward pass
    def _advance(self, step: _Step, logits: torch.Tensor, version: str) -> None:
        row = 0
        sampling: list[tuple[_Sequence, int]] = []  # (request, row of its next-token logits)
        for slot in step.slots:
            seq = slot.seq
            kept = slot.start + slot.count - slot.first_kept
            rows = logits[row : row + kept]
            row += kept
            if seq.kv is None:  # failed or cancelled meanwhile
                continue
            seq.kv.length = slot.start + slot.count
            if seq.collecting_prompt_logprobs:
                self._collect_prompt_logprobs(seq, slot, rows)
            if not slot.ends_sequence:
                continue
            if not seq.prompt_done:
                seq.prompt_done = True
                if seq.want_prompt_logprobs:
                    self._emit(
                        seq, PromptLogprobs(seq.req.logprob_start_len, seq.prompt_entries, seq.prompt_tops)
                    )
                self.prefix_cache.insert(seq.ids, seq.kv, seq.kv.length, seq.cache_key)
            seq.weight_version = version if seq.adapter is None else seq.adapter.weight_version
            if len(seq.output) >= seq.req.sampling.max_new_tokens:  # prefill only (max_new_tokens 0)
                self._finish_length(seq)
            else:
                sampling.append((seq, row - 1))
        if not sampling:
            return
        drawn = sample_tokens(
            logits[[r for _, r in sampling]],
            [seq.req.sampling for seq, _ in sampling],
            [seq.generator for seq, _ in sampling],
            original_logprobs=self._runner.original_logprobs,
        )
        for (seq, _), (token, logprobs) in zip(sampling, drawn, strict=True):
            forced = seq.req.forced_output
            if len(seq.output) < len(forced):
                token = forced[len(seq.output)]
            self._take_token(seq, token, logprobs, seq.weight_version)

    def _collect_prompt_logprobs(self, seq: _Sequence, slot: _Slot, rows: torch.Tensor) -> None:
        """Row for position p is log p(ids[p + 1] | ids[:p + 1]); prompt positions only."""
        if not seq.prompt_entries and seq.req.logprob_start_len == 0:
            seq.prompt_entries.append((None, seq.ids[0]))  # position 0 has no context
            seq.prompt_tops.append(None)
        last_position = min(slot.start + slot.count, seq.prompt_len - 1)  # rows p < last_position
        n = last_position - slot.first_kept
        if n <= 0:
            return
        logprobs = torch.log_softmax(rows[:n] / seq.temperature, dim=-1)
        logprobs = logprobs.clamp(min=torch.finfo(logprobs.dtype).min)
        targets = seq.ids[slot.first_kept + 1 : last_position + 1]
        picked = logprobs[torch.arange(n), torch.tensor(targets)].tolist()
        seq.prompt_entries.extend(zip(picked, targets, strict=True))
        k = seq.req.top_logprobs_num
        for i in range(n):
            seq.prompt_tops.append(top_logprobs(logprobs[i], k) if k > 0 else [])

    def _take_token(self, seq: _Sequence, token: int, logprobs: torch.Tensor, version: str) -> None:
        params = seq.req.sampling
        seq.output.append(token)
        seq.ids.append(token)
        top = top_logprobs(logprobs, seq.req.top_logprobs_num) if seq.req.return_logprob else []
        lp = float(logprobs[token].item())
        if token in seq.stop_ids:
            # The matched token stays in output_ids but not in the text (SGLang trims it).
            text = seq.detok.add(token) if params.no_stop_trim else ""
            tail = seq.stops.feed(text + seq.detok.flush())
            self._emit(seq, TokenStep(token, lp, top, ""))
            stop = {"type": "stop", "matched": token}
            self._finish(seq, Finished(stop, tail.text + seq.stops.flush(), version, seq.cached_tokens))
            return
        released = seq.stops.feed(seq.detok.add(token))
        if released.matched is not None:
            self._emit(seq, TokenStep(token, lp, top, ""))
            stop = {"type": "stop", "matched": released.matched}
            self._finish(seq, Finished(stop, released.text, version, seq.cached_tokens))
            return
        self._emit(seq, TokenStep(token, lp, top, released.text))
        if len(seq.output) >= params.max_new_tokens:
            self._finish_length(seq)  # no pointless forward pass for a token nobody will sample

    def _finish_length(self, seq: _Sequence) -> None:
        tail = seq.stops.feed(seq.detok.flush())  # held-back bytes may still complete a stop string
        reason: dict[str, Any] = (
            {"type": "stop", "matched": tail.matched}
            if tail.matched is not None
            else {"type": "length", "length": seq.req.sampling.max_new_tokens}
        )
        self._finish(
            seq, Finished(reason, tail.text + seq.stops.flush(), seq.weight_version, seq.cached_tokens)
        )

    # ------------------------------------------------------------------ leaving
    def _finish(self, seq: _Sequence, event: Finished) -> None:
        if seq.kv is not None and seq.prompt_done and self._epoch == self._runner.cache_epoch:
            self.prefix_cache.insert(seq.ids, seq.kv, seq.kv.length, seq.cache_key)
        self._emit(seq, event)
        self._release(seq)

    def _fail(self, seq: _Sequence, exc: BaseException) -> None:
        self._emit(seq, exc)
        self._release(seq)

    def _release(self, seq: _Sequence) -> None:
        seq.kv = None
        if seq in self._running:
            self._running.remove(seq)
            self._runner.gate.end_request()  # before the end marker: a caller that sees the end sees 0
        self._emit(seq, None)


def _deliver(items: list[tuple[_Sequence, Item]]) -> None:
    for seq, item in items:
        seq.channel.queue.put_nowait(item)


def _forget_kv(seq: _Sequence) -> None:
    seq.kv = None
    if not seq.prompt_done:
        seq.prompt_entries.clear()
        seq.prompt_tops.clear()


def _whole(seq: _Sequence) -> _Slot:
    return _Slot(seq, 0, 0, 0, False)

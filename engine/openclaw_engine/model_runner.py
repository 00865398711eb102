"""The served policy: model + tokenizer on a device, token-by-token generation, weight swaps.

Each request decodes in its own worker thread with its own KV cache and RNG, taking the
`StepGate` for every forward pass, so concurrent requests interleave token by token and a
request's tokens depend only on its own inputs and seed (no batching, hence no batch-dependent
numerics). Weight updates swap the model between two steps and bump `cache_epoch`; a running
request whose KV cache was built under an older epoch re-prefills its whole sequence
(prompt + tokens so far) under the new weights before its next step.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import threading
import time
import uuid
from collections.abc import AsyncGenerator, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer, PreTrainedModel
from transformers.utils import logging as hf_logging

from .detokenizer import IncrementalDetokenizer, StopStringFilter
from .sampling import SamplingParams, make_generator, sample_token, top_logprobs
from .step_gate import StepCancelled, StepGate
from .tokenizer_methods import TokenizerMethods

log = logging.getLogger(__name__)

DTYPES: dict[str, torch.dtype] = {
    "float32": torch.float32,
    "bfloat16": torch.bfloat16,
    "float16": torch.float16,
}

LogprobEntry = tuple[float | None, int]  # (logprob, token_id); logprob None only for prompt position 0
TopEntry = list[tuple[float, int]]


@dataclass(frozen=True)
class GenerationRequest:
    input_ids: list[int]
    sampling: SamplingParams
    return_logprob: bool = False
    logprob_start_len: int = -1  # -1: output tokens only; k >= 0: prompt positions k.. too
    top_logprobs_num: int = 0
    rid: str = field(default_factory=lambda: uuid.uuid4().hex)


@dataclass
class PromptLogprobs:
    """One entry per prompt position from logprob_start_len (position 0 has logprob None)."""

    start: int
    token_logprobs: list[LogprobEntry]
    top: list[TopEntry | None]


@dataclass
class TokenStep:
    token_id: int
    logprob: float
    top: TopEntry
    text: str  # text released by this step (after UTF-8 completion and stop-string hold-back)


@dataclass
class Finished:
    reason: dict[str, Any]  # SGLang finish_reason: {"type": stop|length|abort, "matched"/"length"/"message"}
    text: str  # text released at the end (held-back bytes, stop-string trimming)
    weight_version: str


Event = PromptLogprobs | TokenStep | Finished


class RequestError(ValueError):
    """A request the model cannot serve (e.g. longer than the context); becomes a 400."""

    def __init__(self, message: str, param: str) -> None:
        super().__init__(message)
        self.param = param


def fit_to_context(req: GenerationRequest, context_length: int) -> GenerationRequest:
    """The context checks of every runner; clamps max_new_tokens to the room left, as SGLang does."""
    n = len(req.input_ids)
    if n == 0:
        raise RequestError("the prompt is empty", "input_ids")
    if n >= context_length:
        raise RequestError(f"the prompt has {n} tokens; the context length is {context_length}", "input_ids")
    if req.logprob_start_len >= n:
        raise RequestError(
            f"logprob_start_len ({req.logprob_start_len}) must be < the prompt length ({n})",
            "logprob_start_len",
        )
    room = context_length - n
    if req.sampling.max_new_tokens > room:
        return replace(req, sampling=replace(req.sampling, max_new_tokens=room))
    return req


def _bump_version(previous: str) -> str:
    return str(int(previous) + 1) if previous.isdigit() else f"{previous}+1"


class ModelRunner(TokenizerMethods):
    def __init__(
        self,
        model_path: str,
        *,
        device: str = "cpu",
        dtype: str = "float32",
        weight_version: str = "0",
        original_logprobs: bool = False,
        served_model_name: str | None = None,
    ) -> None:
        hf_logging.disable_progress_bar()
        self.device = torch.device(device)
        if self.device.type == "cuda" and not torch.cuda.is_available():
            raise RuntimeError("--device cuda requested but CUDA is not available")
        self.dtype = DTYPES[dtype]
        self.model_path = str(model_path)
        self.tokenizer_path = str(model_path)
        self.served_model_name = served_model_name or str(model_path)
        self.original_logprobs = original_logprobs
        self._init_tokenizer(AutoTokenizer.from_pretrained(model_path))
        self.model: PreTrainedModel = self._load(model_path)
        self.vocab_size: int = int(self.model.config.vocab_size)
        if len(self.tokenizer) > self.vocab_size:
            raise RuntimeError(
                f"tokenizer has {len(self.tokenizer)} tokens but the model only {self.vocab_size}"
            )
        self.context_length: int = int(getattr(self.model.config, "max_position_embeddings", 0) or 32768)
        self.eos_token_ids: frozenset[int] = self._eos_ids()
        self.weight_version = weight_version
        self.cache_epoch = 0  # bumped when KV caches built so far become invalid
        self.gate = StepGate()
        self._cancels: dict[str, threading.Event] = {}  # rid -> cancel flag, for /abort_request
        self._control_lock = threading.Lock()  # serialises weight updates

    # ------------------------------------------------------------------ loading
    def _load(self, path: str) -> PreTrainedModel:
        model = AutoModelForCausalLM.from_pretrained(path, dtype=self.dtype)
        model.to(self.device)
        model.eval()
        return model

    def _eos_ids(self) -> frozenset[int]:
        ids: set[int] = set()
        if self.tokenizer.eos_token_id is not None:
            ids.add(int(self.tokenizer.eos_token_id))
        gen_eos = getattr(self.model.generation_config, "eos_token_id", None)
        if isinstance(gen_eos, int):
            ids.add(gen_eos)
        elif isinstance(gen_eos, list):
            ids.update(int(i) for i in gen_eos)
        return frozenset(ids)

    # ------------------------------------------------------------------ control
    def pause(self, mode: str) -> int:
        if mode == "abort":
            self.abort(None)  # running requests end now with finish_reason "abort"
        elif mode == "retract":
            self.cache_epoch += 1  # held requests recompute their KV when they continue
        return self.gate.pause()

    def resume(self) -> None:
        self.gate.resume()

    def abort(self, rid: str | None) -> int:
        """Cancel one request (by rid) or all (rid None); they finish with finish_reason abort."""
        targets = list(self._cancels.items()) if rid is None else [(rid, self._cancels.get(rid))]
        hit = 0
        for _, flag in targets:
            if flag is not None:
                flag.set()
                hit += 1
        return hit

    def flush_cache(self) -> None:
        # Per-request KV caches die with their request; there is no shared prefix cache to drop.
        gc.collect()
        if self.device.type == "cuda":
            torch.cuda.empty_cache()

    def update_weights_from_disk(self, model_path: str, weight_version: str | None) -> tuple[bool, str, int]:
        """Load a same-architecture checkpoint and swap it in between two decode steps."""
        with self._control_lock:
            num_paused = self.gate.active_requests if self.gate.paused else 0
            if not Path(model_path).is_dir():
                return False, f"model_path {model_path!r} is not a directory", num_paused
            try:
                new_model = self._load(model_path)
            except Exception as exc:  # a bad folder must not take the server down
                return False, f"failed to load {model_path!r}: {exc}", num_paused
            problem = _architecture_mismatch(self.model, new_model)
            if problem is not None:
                del new_model
                self.flush_cache()
                return False, f"architecture mismatch: {problem}", num_paused
            with self.gate.exclusive():
                old, self.model = self.model, new_model
                self.model_path = str(model_path)
                self.weight_version = weight_version or _bump_version(self.weight_version)
                self.cache_epoch += 1
            del old
            self.flush_cache()
            return True, "Succeeded to update model weights.", num_paused

    # ------------------------------------------------------------------ generation
    def validate(self, req: GenerationRequest) -> GenerationRequest:
        """Context checks that need the model (`fit_to_context`)."""
        return fit_to_context(req, self.context_length)

    async def generate(self, req: GenerationRequest) -> AsyncGenerator[Event, None]:
        """Run `req` in a worker thread; yield its events as they happen. Closing the iterator cancels it."""
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[Event | BaseException | None] = asyncio.Queue()
        cancel = threading.Event()

        def put(item: Event | BaseException | None) -> None:
            try:
                loop.call_soon_threadsafe(queue.put_nowait, item)
            except RuntimeError:  # event loop already closed (server shutting down)
                cancel.set()

        def worker() -> None:
            try:
                for event in self._run(req, cancel):
                    put(event)
            except BaseException as exc:  # surfaced to the caller as a 500, never swallowed
                put(exc)
            finally:
                put(None)

        self._cancels[req.rid] = cancel
        threading.Thread(target=worker, name=f"gen-{req.rid[:8]}", daemon=True).start()
        try:
            while True:
                item = await queue.get()
                if item is None:
                    return
                if isinstance(item, BaseException):
                    raise item
                yield item
        finally:
            cancel.set()
            if self._cancels.get(req.rid) is cancel:
                del self._cancels[req.rid]

    def _forward(self, feed: list[int], cache: Any, keep: int) -> tuple[torch.Tensor, Any]:
        ids = torch.tensor([feed], dtype=torch.long, device=self.device)
        with torch.inference_mode():
            out = self.model(input_ids=ids, cache=cache, use_cache=True, logits_to_keep=keep)
        return out.logits[0].float(), out.cache

    def _run(self, req: GenerationRequest, cancel: threading.Event) -> Iterator[Event]:
        params = req.sampling
        temperature = params.logprob_temperature(self.original_logprobs)
        generator = make_generator(params.seed, self.device)
        detok = IncrementalDetokenizer(
            lambda ids: self.decode(ids, skip_special_tokens=params.skip_special_tokens)
        )
        stops = StopStringFilter(params.stop, no_stop_trim=params.no_stop_trim)
        stop_ids = params.stop_token_ids | (frozenset() if params.ignore_eos else self.eos_token_ids)
        ids = list(req.input_ids)
        prompt_len = len(ids)
        want_prompt_lp = req.return_logprob and req.logprob_start_len >= 0

        self.gate.begin_request()
        try:
            # ---- prefill (with prompt log-probs if asked) ----
            first_needed = max(req.logprob_start_len - 1, 0) if want_prompt_lp else prompt_len - 1
            with self.gate.step(cancel):
                cache_epoch, weight_version = self.cache_epoch, self.weight_version
                logits, cache = self._forward(ids, None, prompt_len - first_needed)
            cached_len = prompt_len
            if want_prompt_lp:
                yield self._prompt_logprobs(ids, logits, first_needed, req, temperature)
            next_logits = logits[-1]

            output: list[int] = []
            while True:
                if len(output) >= params.max_new_tokens:
                    tail = stops.feed(detok.flush())  # held-back bytes may still complete a stop string
                    reason: dict[str, Any] = (
                        {"type": "stop", "matched": tail.matched}
                        if tail.matched is not None
                        else {"type": "length", "length": params.max_new_tokens}
                    )
                    yield Finished(reason, tail.text + stops.flush(), weight_version)
                    return
                token, logprobs = sample_token(
                    next_logits, params, generator, original_logprobs=self.original_logprobs
                )
                output.append(token)
                ids.append(token)
                top = top_logprobs(logprobs, req.top_logprobs_num) if req.return_logprob else []
                lp = float(logprobs[token].item())

                if token in stop_ids:
                    # The matched token stays in output_ids but not in the text (SGLang trims it).
                    text = detok.add(token) if params.no_stop_trim else ""
                    tail = stops.feed(text + detok.flush())
                    yield TokenStep(token, lp, top, "")
                    yield Finished(
                        {"type": "stop", "matched": token}, tail.text + stops.flush(), weight_version
                    )
                    return
                released = stops.feed(detok.add(token))
                if released.matched is not None:
                    yield TokenStep(token, lp, top, "")
                    yield Finished(
                        {"type": "stop", "matched": released.matched}, released.text, weight_version
                    )
                    return
                yield TokenStep(token, lp, top, released.text)
                if len(output) >= params.max_new_tokens:
                    continue  # finish as "length" without a pointless forward pass

                with self.gate.step(cancel):
                    if self.cache_epoch != cache_epoch:  # weights swapped or retracted: rebuild KV
                        cache, cached_len = None, 0
                        cache_epoch = self.cache_epoch
                    weight_version = self.weight_version
                    logits, cache = self._forward(ids[cached_len:], cache, 1)
                cached_len = len(ids)
                next_logits = logits[-1]
        except StepCancelled:
            yield Finished({"type": "abort", "message": "request aborted"}, "", self.weight_version)
        finally:
            self.gate.end_request()

    def _prompt_logprobs(
        self,
        ids: list[int],
        logits: torch.Tensor,
        first_row_pos: int,
        req: GenerationRequest,
        temperature: float,
    ) -> PromptLogprobs:
        """Entry i is position start+i: log p(ids[start+i] | ids[:start+i]); position 0 has no context."""
        # Row r predicts position first_row_pos + r + 1; clamped so -inf never reaches JSON.
        logprobs = torch.log_softmax(logits / temperature, dim=-1)
        logprobs = logprobs.clamp(min=torch.finfo(logprobs.dtype).min)
        entries: list[LogprobEntry] = []
        tops: list[TopEntry | None] = []
        for pos in range(req.logprob_start_len, len(ids)):
            if pos == 0:
                entries.append((None, ids[0]))
                tops.append(None)
                continue
            row = logprobs[pos - 1 - first_row_pos]
            entries.append((float(row[ids[pos]].item()), ids[pos]))
            tops.append(top_logprobs(row, req.top_logprobs_num) if req.top_logprobs_num > 0 else [])
        return PromptLogprobs(req.logprob_start_len, entries, tops)

    # ------------------------------------------------------------------ health
    def info(self) -> dict[str, Any]:
        return {
            "model_path": self.model_path,
            "tokenizer_path": self.tokenizer_path,
            "served_model_name": self.served_model_name,
            "is_generation": True,
            "weight_version": self.weight_version,
            "vocab_size": self.vocab_size,
            "max_context_length": self.context_length,
            "eos_token_ids": sorted(self.eos_token_ids),
            "device": str(self.device),
            "dtype": str(self.dtype).removeprefix("torch."),
            "architectures": list(getattr(self.model.config, "architectures", None) or []),
            "paused": self.gate.paused,
            "logprob_semantics": "original" if self.original_logprobs else "temperature_scaled",
            # As SGLang's /model_info names them: the parsers chat.py follows (always on here).
            "tool_call_parser": "qwen25",
            "reasoning_parser": "qwen3",
            "started_at": _STARTED_AT,
        }


_STARTED_AT = time.time()


def _architecture_mismatch(current: PreTrainedModel, new: PreTrainedModel) -> str | None:
    if type(current) is not type(new):
        return f"{type(new).__name__} != {type(current).__name__}"
    have = {k: tuple(v.shape) for k, v in current.state_dict().items()}
    got = {k: tuple(v.shape) for k, v in new.state_dict().items()}
    if have.keys() != got.keys():
        missing = sorted(have.keys() - got.keys())[:3]
        extra = sorted(got.keys() - have.keys())[:3]
        return f"parameter names differ (missing {missing}, unexpected {extra})"
    for name, shape in have.items():
        if got[name] != shape:
            return f"{name} has shape {got[name]}, expected {shape}"
    return None

"""The served policy for a vision-language model (Qwen2.5-VL): requests one step at a time, each with its
own KV cache, through the model's own forward.

What the text runner (`model_runner.py`) does and this one does not: no continuous batching (requests take
turns step by step through the `StepGate`, none is packed with another), no prefix cache (every request
prefills its whole prompt, images included), no LoRA adapters beside the base. Prompt log-probs
(`logprob_start_len`, a teacher scoring an image turn) come from one forward pass over the whole prompt
before generation starts. What it keeps: the same events, sampling, log-prob semantics, stop handling and
weight swaps (a request whose KV was built under older weights prefills again, prompt and tokens so far,
before its next token), so a response reports prompt ids, token ids and log-probs exactly as text
responses do. Positions and the forward pass are `vision_forward.py`'s, shared with the trainer.
"""

from __future__ import annotations

import asyncio
import gc
import threading
import time
from collections.abc import AsyncGenerator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
from transformers import AutoModelForImageTextToText, DynamicCache, PreTrainedModel
from transformers.utils import logging as hf_logging

from .detokenizer import IncrementalDetokenizer, StopStringFilter
from .generation_events import (
    Event,
    Finished,
    GenerationRequest,
    LogprobEntry,
    PromptLogprobs,
    RequestError,
    TokenStep,
    TopEntry,
    fit_to_context,
)
from .model_runner import DTYPES, _architecture_mismatch, _bump_version
from .sampling import make_generator, sample_tokens, top_logprobs
from .step_gate import StepCancelled, StepGate
from .tokenizer_methods import TokenizerMethods
from .vision_forward import mrope_positions, vision_logits
from .vision_processor import VisionInputs, inputs_for_ids, load_processor, process

if TYPE_CHECKING:
    from PIL import Image

ABORTED = {"type": "abort", "message": "request aborted"}


@dataclass
class _Sequence:
    req: GenerationRequest
    vision: VisionInputs | None
    ids: list[int]
    generator: torch.Generator
    detok: IncrementalDetokenizer
    stops: StopStringFilter
    stop_ids: frozenset[int]
    output: list[int] = field(default_factory=list)
    cache: Any = None
    cache_len: int = 0
    epoch: int = -1
    positions: torch.Tensor | None = None  # [3, 1, n] of the prompt; output tokens continue its last + 1


class VisionRunner(TokenizerMethods):
    """ServedPolicy for a Qwen2.5-VL folder (see the module docstring for what it does not do)."""

    accepts_images = True

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
        self.processor = load_processor(model_path)
        self._init_tokenizer(self.processor.tokenizer)
        self._processor_lock = threading.Lock()
        self.model: PreTrainedModel = self._load(model_path)
        text_config = self.model.config.get_text_config()
        self.vocab_size = int(text_config.vocab_size)
        self.context_length = int(getattr(text_config, "max_position_embeddings", 0) or 32768)
        self.image_token_id = int(self.model.config.image_token_id)
        self.eos_token_ids = self._eos_ids()
        self.weight_version = weight_version
        self.cache_epoch = 0
        self.gate = StepGate()
        self._cancels: dict[str, threading.Event] = {}
        self._control_lock = threading.Lock()

    def _load(self, path: str) -> PreTrainedModel:
        model = AutoModelForImageTextToText.from_pretrained(path, dtype=self.dtype)
        return model.to(self.device).eval()

    def _eos_ids(self) -> frozenset[int]:
        ids: set[int] = set()
        if self.tokenizer.eos_token_id is not None:
            ids.add(int(self.tokenizer.eos_token_id))
        gen_eos = getattr(self.model.generation_config, "eos_token_id", None)
        ids.update([gen_eos] if isinstance(gen_eos, int) else [int(i) for i in gen_eos or []])
        return frozenset(ids)

    # ------------------------------------------------------------------ images
    def prepare(self, prompt: str, images: list[Image.Image]) -> VisionInputs:
        """The prompt's ids with each image's pads expanded, and the images' pixel values (ImageError)."""
        with self._processor_lock:
            return process(self.processor, prompt, images)

    def prepare_ids(self, ids: list[int], images: list[Image.Image]) -> VisionInputs:
        """Exact ids (pads already expanded) with their images' pixel values (ImageError if they disagree)."""
        with self._processor_lock:
            return inputs_for_ids(self.processor, ids, images)

    # ------------------------------------------------------------------ control
    def pause(self, mode: str) -> int:
        if mode == "abort":
            self.abort(None)
        elif mode == "retract":
            self.cache_epoch += 1
        return self.gate.pause()

    def resume(self) -> None:
        self.gate.resume()

    def abort(self, rid: str | None) -> int:
        targets = list(self._cancels.values()) if rid is None else [self._cancels.get(rid)]
        hit = 0
        for flag in targets:
            if flag is not None:
                flag.set()
                hit += 1
        return hit

    def flush_cache(self) -> None:
        gc.collect()  # no prefix cache: each request's KV is its own

    def update_weights_from_disk(self, model_path: str, weight_version: str | None) -> tuple[bool, str, int]:
        with self._control_lock:
            num_paused = self.gate.active_requests if self.gate.paused else 0
            if not Path(model_path).is_dir():
                return False, f"model_path {model_path!r} is not a directory", num_paused
            try:
                new_model = self._load(model_path)
            except Exception as exc:
                return False, f"failed to load {model_path!r}: {exc}", num_paused
            problem = _architecture_mismatch(self.model, new_model)
            if problem is not None:
                return False, f"architecture mismatch: {problem}", num_paused
            with self.gate.exclusive():
                self.model = new_model
                self.model_path = str(model_path)
                self.weight_version = weight_version or _bump_version(self.weight_version)
                self.cache_epoch += 1  # running requests prefill again under the new weights
            gc.collect()
            return True, "Succeeded to update model weights.", num_paused

    @property
    def lora_adapters(self) -> dict[str, dict[str, str]]:
        return {}

    @property
    def lora_used(self) -> bool:
        return False

    def load_lora_adapter(self, name: str, path: str, weight_version: str | None) -> tuple[bool, str]:
        return False, "LoRA adapters are not served beside a vision-language model by this engine"

    def unload_lora_adapter(self, name: str) -> tuple[bool, str]:
        return False, f"LoRA adapter {name!r} is not loaded"

    # ------------------------------------------------------------------ generation
    def validate(self, req: GenerationRequest) -> GenerationRequest:
        if req.vision is None and self.image_token_id in req.input_ids:
            raise RequestError("the prompt has image tokens but no images", "input_ids")
        return fit_to_context(req, self.context_length)

    async def generate(self, req: GenerationRequest) -> AsyncGenerator[Event, None]:
        params = req.sampling
        seq = _Sequence(
            req=req,
            vision=req.vision,
            ids=list(req.input_ids),
            generator=make_generator(params.seed, self.device),
            detok=IncrementalDetokenizer(
                lambda ids: self.decode(ids, skip_special_tokens=params.skip_special_tokens)
            ),
            stops=StopStringFilter(params.stop, no_stop_trim=params.no_stop_trim),
            stop_ids=params.stop_token_ids | (frozenset() if params.ignore_eos else self.eos_token_ids),
        )
        cancel = threading.Event()
        self._cancels[req.rid] = cancel
        self.gate.begin_request()
        try:
            version = self.weight_version
            if req.return_logprob and req.logprob_start_len >= 0:
                scored = None
                while scored is None:
                    if cancel.is_set():
                        yield Finished(dict(ABORTED), "", self.weight_version)
                        return
                    try:
                        scored, version = await asyncio.to_thread(self._prompt_logprobs, seq, cancel)
                    except StepCancelled:
                        continue
                yield scored
            if params.max_new_tokens == 0:
                yield Finished({"type": "length", "length": 0}, "", version)
                return
            while True:
                if cancel.is_set():
                    yield Finished(dict(ABORTED), "", self.weight_version)
                    return
                try:
                    token, logprobs, version = await asyncio.to_thread(self._step, seq, cancel)
                except StepCancelled:
                    continue
                events = self._take_token(seq, token, logprobs, version)
                for event in events:
                    yield event
                if isinstance(events[-1], Finished):
                    return
        finally:
            self.gate.end_request()
            if self._cancels.get(req.rid) is cancel:
                del self._cancels[req.rid]

    def _prompt_logprobs(self, seq: _Sequence, cancel: threading.Event) -> tuple[PromptLogprobs, str]:
        """Log-probs of the prompt's tokens from `logprob_start_len` on, each given the ones before it (images
        included), at the temperature sampled log-probs are reported at; position 0 has none."""
        req = seq.req
        ids = torch.tensor([req.input_ids], dtype=torch.long, device=self.device)
        vision = seq.vision
        with self.gate.step(cancel), torch.inference_mode():
            grid = vision.image_grid_thw.to(self.device) if vision is not None else None
            logits = vision_logits(
                self.model,
                ids,
                pixel_values=vision.pixel_values.to(self.device, self.dtype) if vision is not None else None,
                image_grid_thw=grid,
                positions=mrope_positions(self.model, ids, grid),
            )
            version = self.weight_version
        temperature = req.sampling.logprob_temperature(self.original_logprobs)
        first = max(req.logprob_start_len - 1, 0)  # row p scores ids[p + 1]
        rows = torch.log_softmax(logits[first:-1] / temperature, dim=-1)
        rows = rows.clamp(min=torch.finfo(rows.dtype).min)
        targets = req.input_ids[first + 1 :]
        picked = rows[torch.arange(len(targets)), torch.tensor(targets, dtype=torch.long)].tolist()
        entries: list[LogprobEntry] = [(None, req.input_ids[0])] if req.logprob_start_len == 0 else []
        tops: list[TopEntry | None] = [None] if req.logprob_start_len == 0 else []
        entries.extend(zip(picked, targets, strict=True))
        k = req.top_logprobs_num
        tops.extend(top_logprobs(rows[i], k) if k > 0 else [] for i in range(len(targets)))
        return PromptLogprobs(req.logprob_start_len, entries, tops), version

    def _step(self, seq: _Sequence, cancel: threading.Event) -> tuple[int, torch.Tensor, str]:
        """One forward pass (the prefill, or one decode step) and the next token."""
        with self.gate.step(cancel), torch.inference_mode():
            if seq.epoch != self.cache_epoch:  # first step, or new weights: prefill everything so far
                seq.epoch = self.cache_epoch
                seq.cache = DynamicCache(config=self.model.config)
                seq.cache_len = 0
            vision = seq.vision
            new = seq.ids[seq.cache_len :]
            ids = torch.tensor([new], dtype=torch.long, device=self.device)
            if seq.positions is None:
                prompt = torch.tensor([seq.req.input_ids], dtype=torch.long, device=self.device)
                grid = vision.image_grid_thw.to(self.device) if vision is not None else None
                seq.positions = mrope_positions(self.model, prompt, grid)
            positions = _positions(seq.positions, seq.cache_len, len(seq.ids))
            prefill = seq.cache_len == 0 and vision is not None
            logits = vision_logits(
                self.model,
                ids,
                pixel_values=vision.pixel_values.to(self.device, self.dtype) if prefill else None,
                image_grid_thw=vision.image_grid_thw.to(self.device) if prefill else None,
                logits_to_keep=1,
                cache=seq.cache,
                positions=positions,
            )
            seq.cache_len = len(seq.ids)
            version = self.weight_version
        [(token, logprobs)] = sample_tokens(
            logits[-1:], [seq.req.sampling], [seq.generator], original_logprobs=self.original_logprobs
        )
        forced = seq.req.forced_output
        if len(seq.output) < len(forced):
            token = forced[len(seq.output)]
        return token, logprobs, version

    def _take_token(self, seq: _Sequence, token: int, logprobs: torch.Tensor, version: str) -> list[Event]:
        """The events of one sampled token (as the batch scheduler reports them)."""
        params = seq.req.sampling
        seq.output.append(token)
        seq.ids.append(token)
        top = top_logprobs(logprobs, seq.req.top_logprobs_num) if seq.req.return_logprob else []
        lp = float(logprobs[token].item())
        if token in seq.stop_ids:
            text = seq.detok.add(token) if params.no_stop_trim else ""
            tail = seq.stops.feed(text + seq.detok.flush())
            stop = {"type": "stop", "matched": token}
            return [TokenStep(token, lp, top, ""), Finished(stop, tail.text + seq.stops.flush(), version)]
        released = seq.stops.feed(seq.detok.add(token))
        if released.matched is not None:
            stop = {"type": "stop", "matched": released.matched}
            return [TokenStep(token, lp, top, ""), Finished(stop, released.text, version)]
        step = TokenStep(token, lp, top, released.text)
        if len(seq.output) < params.max_new_tokens:
            return [step]
        tail = seq.stops.feed(seq.detok.flush())
        reason: dict[str, Any] = (
            {"type": "stop", "matched": tail.matched}
            if tail.matched is not None
            else {"type": "length", "length": params.max_new_tokens}
        )
        return [step, Finished(reason, tail.text + seq.stops.flush(), version)]

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
            "tool_call_parser": "qwen25",
            "reasoning_parser": "qwen3",
            "accepts_images": True,
            # No batching, no prefix cache on this path (one request per step).
            "max_running_requests": 1,
            "prefix_cache_tokens": 0,
            "lora_adapters": {},
            "started_at": _STARTED_AT,
        }


_STARTED_AT = time.time()


def _positions(prompt_positions: torch.Tensor, start: int, end: int) -> torch.Tensor:
    """[3, 1, end - start] positions of ids[start:end]: the prompt's, then text positions after its last."""
    n_prompt = prompt_positions.shape[-1]
    parts = []
    if start < n_prompt:
        parts.append(prompt_positions[..., start : min(end, n_prompt)])
    if end > n_prompt:
        first = int(prompt_positions.max()) + 1 + max(start - n_prompt, 0)
        count = end - max(start, n_prompt)
        extra = torch.arange(first, first + count, device=prompt_positions.device)
        parts.append(extra.view(1, 1, -1).expand(3, 1, count))
    return torch.cat(parts, dim=-1)

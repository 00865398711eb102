"""The served policy: model + tokenizer on a device, continuous batching with a prefix cache, weight swaps.

Requests are handed to a `BatchScheduler`, whose one thread runs each forward pass over every running request
(packed, `packed_attention.py`) and reuses cached prompt prefixes (`prefix_cache.py`); `generate()` bridges
its events to the asyncio side. Weight updates swap the model between two steps and bump `cache_epoch`; a
running request whose KV cache was built under an older epoch re-prefills its whole sequence (prompt + tokens
so far) under the new weights before its next step.
"""

from __future__ import annotations

import asyncio
import gc
import threading
import time
from collections.abc import AsyncGenerator
from pathlib import Path
from typing import Any

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer, PreTrainedModel
from transformers.utils import logging as hf_logging

from .batch_scheduler import BatchScheduler, EventChannel
from .cpu_threads import StepThreads
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
from .lora_serving import ADAPTER_NAME, DEFAULT_MAX_LORAS, AdapterError, LoraSet, read_adapter
from .packed_attention import PACKED_ATTENTION, PackedBatch
from .prefix_cache import PrefixCache
from .step_gate import StepGate
from .tokenizer_methods import TokenizerMethods
from .vocab_head import install_vocab_head

# Re-exported: the HTTP layers and the Tinker runner import the request and event types from here.
__all__ = [
    "Event",
    "Finished",
    "GenerationRequest",
    "LogprobEntry",
    "ModelRunner",
    "PromptLogprobs",
    "RequestError",
    "TokenStep",
    "TopEntry",
    "fit_to_context",
]

DTYPES: dict[str, torch.dtype] = {
    "float32": torch.float32,
    "bfloat16": torch.bfloat16,
    "float16": torch.float16,
}
DEFAULT_MAX_BATCH_TOKENS = 1024
DEFAULT_MAX_RUNNING = 256
DEFAULT_PREFIX_CACHE_MB = 1024


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
        max_batch_tokens: int = DEFAULT_MAX_BATCH_TOKENS,
        max_running: int = DEFAULT_MAX_RUNNING,
        prefix_cache_mb: float = DEFAULT_PREFIX_CACHE_MB,
        max_loras: int = DEFAULT_MAX_LORAS,
    ) -> None:
        hf_logging.disable_progress_bar()
        self.device = torch.device(device)
        if self.device.type == "cuda" and not torch.cuda.is_available():
            raise RuntimeError("--device cuda requested but CUDA is not available")
        if max_batch_tokens <= max_running:
            raise ValueError("max_batch_tokens must exceed max_running, or prompts could wait behind decodes")
        self.dtype = DTYPES[dtype]
        self.model_path = str(model_path)
        self.tokenizer_path = str(model_path)
        self.served_model_name = served_model_name or str(model_path)
        self.original_logprobs = original_logprobs
        self._init_tokenizer(AutoTokenizer.from_pretrained(model_path))
        self.threads = StepThreads(self.device)
        self.model: PreTrainedModel = self._load(model_path)
        self.vocab_size: int = int(self.model.config.vocab_size)
        if len(self.tokenizer) > self.vocab_size:
            raise RuntimeError(
                f"tokenizer has {len(self.tokenizer)} tokens but the model only {self.vocab_size}"
            )
        self.context_length: int = int(getattr(self.model.config, "max_position_embeddings", 0) or 32768)
        self.num_layers: int = int(self.model.config.num_hidden_layers)
        self.eos_token_ids: frozenset[int] = self._eos_ids()
        self.weight_version = weight_version
        self.cache_epoch = 0  # bumped when KV caches built so far become invalid
        self.gate = StepGate()
        self._cancels: dict[str, threading.Event] = {}  # rid -> cancel flag, for /abort_request
        self._control_lock = threading.Lock()  # serialises weight updates and adapter loads
        self.lora = LoraSet(max_loras)
        self.prefix_cache = PrefixCache(int(prefix_cache_mb * 1024 * 1024) // self._kv_bytes_per_token())
        self.scheduler = BatchScheduler(
            self, max_batch_tokens=max_batch_tokens, max_running=max_running, prefix_cache=self.prefix_cache
        )

    # ------------------------------------------------------------------ loading
    def _load(self, path: str) -> PreTrainedModel:
        model = AutoModelForCausalLM.from_pretrained(
            path, dtype=self.dtype, attn_implementation=PACKED_ATTENTION
        )
        model.to(self.device)
        model.eval()
        install_vocab_head(model, self.threads)
        return model

    def _kv_bytes_per_token(self) -> int:
        config = self.model.config
        heads = int(getattr(config, "num_key_value_heads", None) or config.num_attention_heads)
        head_dim = int(getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads)
        element = torch.tensor([], dtype=self.dtype).element_size()
        return max(1, 2 * self.num_layers * heads * head_dim * element)

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
        if hit:
            self.scheduler.wake()
        return hit

    def flush_cache(self) -> None:
        """Drop the prefix cache; running requests keep their own KV."""
        self.prefix_cache.clear()
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
                gc.collect()
                return False, f"architecture mismatch: {problem}", num_paused
            with self.gate.exclusive():
                old, self.model = self.model, new_model
                self.model_path = str(model_path)
                self.weight_version = weight_version or _bump_version(self.weight_version)
                self.cache_epoch += 1  # the scheduler drops the prefix cache and re-prefills running requests
                self.lora.rehook(new_model)  # loaded adapters apply to the new base
            del old
            self.flush_cache()
            return True, "Succeeded to update model weights.", num_paused

    # ------------------------------------------------------------------ LoRA adapters
    @property
    def lora_adapters(self) -> dict[str, dict[str, str]]:
        return {
            a.name: {"path": a.path, "weight_version": a.weight_version} for a in self.lora.adapters.values()
        }

    @property
    def lora_used(self) -> bool:
        return self.lora.used

    def load_lora_adapter(self, name: str, path: str, weight_version: str | None) -> tuple[bool, str]:
        """Load (or replace) adapter `name`; swapped in between two steps. (success, message)."""
        if not ADAPTER_NAME.match(name):
            return False, f"lora_name {name!r} must match {ADAPTER_NAME.pattern}"
        with self._control_lock:
            previous = self.lora.adapters.get(name)
            if previous is None and len(self.lora.adapters) >= self.lora.max_loras:
                return False, (
                    f"cannot load {name!r}: {len(self.lora.adapters)} adapters are loaded, the limit "
                    f"(--max-loras) is {self.lora.max_loras}; unload one first"
                )
            version = weight_version or ("1" if previous is None else _bump_version(previous.weight_version))
            try:
                adapter = read_adapter(name, path, version, self.model, self.dtype)
            except AdapterError as exc:
                return False, f"failed to load LoRA adapter {name!r} from {path!r}: {exc}"
            with self.gate.exclusive():  # requests of a replaced adapter prefill again under the new one
                self.lora.hook(self.model, set(adapter.weights))
                self.lora.add(adapter)
            if previous is not None:
                self.prefix_cache.drop(previous.cache_key)
            verb = "Replaced" if previous is not None else "Loaded"
            return True, f"{verb} LoRA adapter {name!r} (weight_version {version})."

    def unload_lora_adapter(self, name: str) -> tuple[bool, str]:
        with self._control_lock:
            adapter = self.lora.adapters.get(name)
            if adapter is None:
                return False, f"LoRA adapter {name!r} is not loaded"
            with self.gate.exclusive():  # its running requests end with finish_reason abort
                self.lora.adapters = {k: v for k, v in self.lora.adapters.items() if k != name}
            self.prefix_cache.drop(adapter.cache_key)
            return True, f"Unloaded LoRA adapter {name!r}."

    # ------------------------------------------------------------------ generation
    def validate(self, req: GenerationRequest) -> GenerationRequest:
        """Context checks that need the model (`fit_to_context`)."""
        return fit_to_context(req, self.context_length)

    async def generate(self, req: GenerationRequest) -> AsyncGenerator[Event, None]:
        """Submit `req` to the scheduler; yield its events as they happen. Closing the iterator cancels it."""
        queue: asyncio.Queue[Event | BaseException | None] = asyncio.Queue()
        cancel = threading.Event()
        self._cancels[req.rid] = cancel
        self.scheduler.submit(req, EventChannel(asyncio.get_running_loop(), queue), cancel)
        try:
            while True:
                item = await queue.get()
                if item is None:
                    return
                if isinstance(item, BaseException):
                    raise item
                yield item
        finally:
            if not cancel.is_set():
                cancel.set()
                self.scheduler.wake()
            if self._cancels.get(req.rid) is cancel:
                del self._cancels[req.rid]

    def forward_step(
        self, input_ids: list[int], positions: list[int], batch: PackedBatch, keep: list[int]
    ) -> torch.Tensor:
        """One packed forward pass; the float32 logits of the rows in `keep` (indices into the packed row)."""
        ids = torch.tensor([input_ids], dtype=torch.long, device=self.device)
        pos = torch.tensor([positions], dtype=torch.long, device=self.device)
        rows = torch.tensor(keep, dtype=torch.long, device=self.device)
        with (
            torch.inference_mode(),
            self.lora.applied(batch.lora, self.device),
            self.threads.step(len(input_ids)),
        ):
            out = self.model(
                input_ids=ids, position_ids=pos, use_cache=False, logits_to_keep=rows, packed_batch=batch
            )
        return out.logits[0].float()

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
            "max_batch_tokens": self.scheduler.max_batch_tokens,
            "max_running_requests": self.scheduler.max_running,
            "prefix_cache_tokens": self.prefix_cache.tokens,
            "prefix_cache_budget_tokens": self.prefix_cache.budget_tokens,
            "lora_adapters": self.lora_adapters,
            "max_loras": self.lora.max_loras,
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

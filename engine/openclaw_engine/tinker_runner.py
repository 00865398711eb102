"""A served policy whose tokens come from a Tinker `SamplingClient` instead of a local model.

The tokenizer, chat template, stop handling and HTTP rendering are the reference engine's; only the
sampling is remote. Tinker samples a whole sequence in one call, so a request's `TokenStep`s arrive
together at the end (a stream still streams, in one burst). The returned tokens are replayed through the
reference engine's detokeniser and stop-string filter, so text, `finish_reason` and `matched_stop` follow
the same rules as `ModelRunner`.

Weight swaps: `update_weights_from_disk(<folder>)` reads `<folder>/tinker-sampler.json` (written by the
sidecar's `/export_for_serving`) and opens a sampling client on its `tinker://` path. A request uses the
client current when it starts; its `weight_version` is that client's.

Every SDK call goes through `sdk` (the `tinker` module or a stand-in with its surface), synchronously in a
thread of the request's own, so a paused request never holds a shared worker thread.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import threading
import time
from collections.abc import AsyncGenerator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from transformers import PreTrainedTokenizerBase

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
from .model_runner import _bump_version
from .sampling import SamplingParams
from .step_gate import StepCancelled, StepGate
from .tokenizer_methods import TokenizerMethods

log = logging.getLogger(__name__)

SAMPLER_FILE = "tinker-sampler.json"
DEFAULT_CONTEXT_LENGTH = 32768
# How often a request waiting on Tinker checks whether it was aborted.
_ABORT_POLL_S = 0.05


@dataclass(frozen=True)
class RemoteSample:
    """What one Tinker call returned, in the engine's terms."""

    tokens: list[int]
    logprobs: list[float]
    tops: list[TopEntry]
    stopped: bool  # Tinker's stop_reason == "stop" (a stop token or string), else "length"
    prompt_logprobs: list[float | None] | None = None
    prompt_tops: list[TopEntry | None] | None = None


def sdk_sampling_params(sdk: Any, params: SamplingParams, eos_ids: frozenset[int], max_tokens: int) -> Any:
    """`tinker.types.SamplingParams` for a request.

    Tinker's `stop` is either strings or token ids, not both; `None` keeps its implicit EOS and a list of ids
    replaces it. Stop strings alone go to Tinker as strings (it stops early); token ids (and `ignore_eos`)
    go as the full id list, and any stop strings are then applied locally when the tokens are replayed.
    """
    stop: list[str] | list[int] | None
    if params.stop_token_ids or params.ignore_eos:
        stop = sorted(params.stop_token_ids | (frozenset() if params.ignore_eos else eos_ids))
    elif params.stop:
        stop = list(params.stop)
    else:
        stop = None
    return sdk.types.SamplingParams(
        max_tokens=max_tokens,
        temperature=params.temperature,
        top_p=params.top_p,
        top_k=params.top_k if params.top_k > 0 else -1,
        seed=params.seed,
        stop=stop,
    )


def _tops(rows: Sequence[Sequence[tuple[int, float]] | None] | None, n: int) -> list[TopEntry]:
    """Tinker's `(token_id, logprob)` rows as the engine's `(logprob, token_id)` rows."""
    rows = list(rows or [])
    return [[(float(lp), int(t)) for t, lp in (rows[i] or [])] if i < len(rows) else [] for i in range(n)]


class TinkerRunner(TokenizerMethods):
    def __init__(
        self,
        sdk: Any,
        *,
        service: Any,
        base_model: str,
        tokenizer: PreTrainedTokenizerBase,
        tokenizer_path: str,
        served_model_name: str | None = None,
        context_length: int | None = None,
        weight_version: str = "0",
    ) -> None:
        self.sdk = sdk
        self.service = service
        self.base_model = base_model
        self._init_tokenizer(tokenizer)
        self.tokenizer_path = tokenizer_path
        self.served_model_name = served_model_name or base_model
        self.model_path = base_model  # the folder last loaded, or the base model's name before that
        self.sampler_path: str | None = None  # the `tinker://` path served; None: the base model
        self.vocab_size = len(tokenizer)
        limit = int(getattr(tokenizer, "model_max_length", 0) or 0)
        self.context_length = context_length or (limit if 0 < limit < 10**7 else DEFAULT_CONTEXT_LENGTH)
        self.eos_token_ids = _eos_ids(tokenizer, tokenizer_path)
        self.weight_version = weight_version
        self.gate = StepGate()
        self._cancels: dict[str, threading.Event] = {}
        self._control_lock = threading.Lock()  # serialises weight updates
        # Before the first export the base model serves.
        self._client = service.create_sampling_client(base_model=base_model).result()

    # ------------------------------------------------------------------ control
    def pause(self, mode: str) -> int:
        if mode == "abort":
            self.abort(None)
        # "retract" and "in_place" alike: requests not yet sent wait; results that arrive are held back.
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
        """Nothing is cached here; Tinker manages its own prefix cache."""

    @property
    def lora_adapters(self) -> dict[str, dict[str, str]]:
        return {}

    @property
    def lora_used(self) -> bool:
        return False

    def load_lora_adapter(self, name: str, path: str, weight_version: str | None) -> tuple[bool, str]:
        return False, "this engine serves through Tinker, which does not load LoRA adapters per request"

    def unload_lora_adapter(self, name: str) -> tuple[bool, str]:
        return False, f"LoRA adapter {name!r} is not loaded (the Tinker runner serves none)"

    def update_weights_from_disk(self, model_path: str, weight_version: str | None) -> tuple[bool, str, int]:
        """Serve the export in `model_path` (its `tinker-sampler.json`) from now on."""
        with self._control_lock:
            num_paused = self.gate.active_requests if self.gate.paused else 0
            folder = Path(model_path)
            if not folder.is_dir():
                return False, f"model_path {model_path!r} is not a directory", num_paused
            file = folder / SAMPLER_FILE
            if not file.is_file():
                return (
                    False,
                    f"{model_path!r} has no {SAMPLER_FILE}: the Tinker sidecar serves only its own exports "
                    "(POST /export_for_serving), not Hugging Face checkpoints",
                    num_paused,
                )
            try:
                record = json.loads(file.read_text())
                sampler_path = record["model_path"]
            except (ValueError, KeyError, TypeError) as exc:
                return False, f"{file} is not a Tinker export record: {exc!r}", num_paused
            if not isinstance(sampler_path, str) or not sampler_path.startswith("tinker://"):
                return False, f"{file}: model_path {sampler_path!r} is not a tinker:// path", num_paused
            exported_base = record.get("base_model")
            if exported_base is not None and exported_base != self.base_model:
                return (
                    False,
                    f"{file} was trained from {exported_base!r}; this sidecar serves {self.base_model!r}",
                    num_paused,
                )
            try:
                client = self.service.create_sampling_client(model_path=sampler_path).result()
            except Exception as exc:  # Tinker refused or is unreachable: keep serving the current weights
                return False, f"Tinker could not open a sampling client for {sampler_path}: {exc}", num_paused
            with self.gate.exclusive():
                self._client = client
                self.sampler_path = sampler_path
                self.model_path = str(model_path)
                self.weight_version = weight_version or _bump_version(self.weight_version)
            return True, "Succeeded to update model weights.", num_paused

    # ------------------------------------------------------------------ generation
    def validate(self, req: GenerationRequest) -> GenerationRequest:
        if req.sampling.min_p > 0.0:
            raise RequestError("min_p is not available when sampling on Tinker", "min_p")
        return fit_to_context(req, self.context_length)

    async def generate(self, req: GenerationRequest) -> AsyncGenerator[Event, None]:
        """Sample `req` on Tinker in a thread of its own; yield its events once the sequence is back."""
        loop = asyncio.get_running_loop()
        outcome: asyncio.Future[list[Event]] = loop.create_future()
        cancel = threading.Event()

        def settle(events: list[Event] | None, error: BaseException | None) -> None:
            if outcome.done():
                return
            if error is not None:
                outcome.set_exception(error)
            else:
                outcome.set_result(events or [])

        def worker() -> None:
            events: list[Event] | None = None
            error: BaseException | None = None
            try:
                events = self._run(req, cancel)
            except BaseException as exc:  # surfaced to the caller as a 500, never swallowed
                error = exc
            try:
                loop.call_soon_threadsafe(settle, events, error)
            except RuntimeError:  # event loop already closed (server shutting down)
                pass

        self._cancels[req.rid] = cancel
        threading.Thread(target=worker, name=f"tinker-{req.rid[:8]}", daemon=True).start()
        try:
            # Tinker's call cannot be recalled; an aborted request stops waiting for it.
            while not outcome.done() and not cancel.is_set():
                await asyncio.wait({outcome}, timeout=_ABORT_POLL_S)
            if outcome.done():
                events = outcome.result()
            else:
                outcome.add_done_callback(lambda f: f.exception())  # a late failure is not "never retrieved"
                events = [Finished({"type": "abort", "message": "request aborted"}, "", self.weight_version)]
            for event in events:
                yield event
        finally:
            cancel.set()
            if self._cancels.get(req.rid) is cancel:
                del self._cancels[req.rid]

    def _run(self, req: GenerationRequest, cancel: threading.Event) -> list[Event]:
        self.gate.begin_request()
        try:
            with self.gate.step(cancel):  # waits while generation is paused
                client, weight_version = self._client, self.weight_version
            sample = self._sample(client, req)
            with self.gate.step(cancel):  # a pause taken meanwhile holds the result until resumed
                pass
            events: list[Event] = []
            if sample.prompt_logprobs is not None:
                events.append(self._prompt_logprobs(req, sample))
            events.extend(self._replay(req, sample, weight_version))
            return events
        except StepCancelled:
            return [Finished({"type": "abort", "message": "request aborted"}, "", self.weight_version)]
        finally:
            self.gate.end_request()

    def _sample(self, client: Any, req: GenerationRequest) -> RemoteSample:
        types = self.sdk.types
        prompt = types.ModelInput.from_ints(list(req.input_ids))
        want_prompt = req.return_logprob and req.logprob_start_len >= 0
        k = req.top_logprobs_num if req.return_logprob else 0
        n = len(req.input_ids)
        # Positions before logprob_start_len are not needed; position 0 never has a log-prob.
        last_n = n - req.logprob_start_len if want_prompt and req.logprob_start_len > 0 else None
        if req.sampling.max_new_tokens <= 0:  # scoring only
            if not want_prompt:
                return RemoteSample([], [], [], stopped=False)
            if k == 0 and n > 1:
                scored = client.compute_logprobs(prompt, prompt_logprobs_last_n=last_n).result()
                return RemoteSample([], [], [], stopped=False, prompt_logprobs=list(scored))
            # Top-k needs `sample`: one generated token, thrown away.
            response = client.sample(
                prompt=prompt,
                num_samples=1,
                sampling_params=types.SamplingParams(max_tokens=1),
                include_prompt_logprobs=True,
                topk_prompt_logprobs=k,
                prompt_logprobs_last_n=last_n if n > 1 else None,
            ).result()
            return RemoteSample([], [], [], False, *self._prompt_parts(response, k, n))
        response = client.sample(
            prompt=prompt,
            num_samples=1,
            sampling_params=sdk_sampling_params(
                self.sdk, req.sampling, self.eos_token_ids, req.sampling.max_new_tokens
            ),
            include_prompt_logprobs=want_prompt,
            topk_prompt_logprobs=k if want_prompt else 0,
            topk_sample_logprobs=k,
            prompt_logprobs_last_n=last_n if want_prompt and n > 1 else None,
        ).result()
        sequence = response.sequences[0]
        tokens = [int(t) for t in sequence.tokens]
        logprobs = sequence.logprobs
        if logprobs is None:
            if req.return_logprob:
                raise RuntimeError("Tinker returned no log-probs for the sampled tokens")
            logprobs = [0.0] * len(tokens)  # never rendered: the request did not ask for them
        prompt_lps, prompt_tops = self._prompt_parts(response, k, n) if want_prompt else (None, None)
        return RemoteSample(
            tokens=tokens,
            logprobs=[_finite(lp) for lp in logprobs],
            tops=_tops(sequence.topk_logprobs, len(tokens)) if k > 0 else [[] for _ in tokens],
            stopped=sequence.stop_reason == "stop",
            prompt_logprobs=prompt_lps,
            prompt_tops=prompt_tops,
        )

    @staticmethod
    def _prompt_parts(response: Any, k: int, n: int) -> tuple[list[float | None], list[TopEntry | None]]:
        lps = list(response.prompt_logprobs or [])
        rows = response.topk_prompt_logprobs if k > 0 else None
        tops: list[TopEntry | None] = []
        for i in range(n):
            row = rows[i] if rows is not None and i < len(rows) else None
            tops.append(None if row is None else [(float(lp), int(t)) for t, lp in row])
        return lps, tops

    def _prompt_logprobs(self, req: GenerationRequest, sample: RemoteSample) -> PromptLogprobs:
        """Entry i is position start+i, as `ModelRunner` reports them (position 0 has logprob None)."""
        lps = sample.prompt_logprobs or []
        rows = sample.prompt_tops or []
        entries: list[LogprobEntry] = []
        tops: list[TopEntry | None] = []
        for pos in range(req.logprob_start_len, len(req.input_ids)):
            lp = lps[pos] if pos < len(lps) else None
            entries.append((None if pos == 0 or lp is None else _finite(lp), req.input_ids[pos]))
            if pos == 0:
                tops.append(None)
            elif req.top_logprobs_num > 0:
                row = rows[pos] if pos < len(rows) else None
                tops.append(row or [])
            else:
                tops.append([])
        return PromptLogprobs(req.logprob_start_len, entries, tops)

    def _replay(self, req: GenerationRequest, sample: RemoteSample, weight_version: str) -> list[Event]:
        """The returned tokens as `ModelRunner._run` would have emitted them (same stop rules)."""
        params = req.sampling
        detok = IncrementalDetokenizer(
            lambda ids: self.decode(ids, skip_special_tokens=params.skip_special_tokens)
        )
        stops = StopStringFilter(params.stop, no_stop_trim=params.no_stop_trim)
        stop_ids = params.stop_token_ids | (frozenset() if params.ignore_eos else self.eos_token_ids)
        events: list[Event] = []
        tokens = sample.tokens[: params.max_new_tokens]
        for i, token in enumerate(tokens):
            lp, top = sample.logprobs[i], sample.tops[i]
            # Tinker ended on a control token it stops on (its implicit EOS) that is not in our list.
            remote_stop_token = (
                sample.stopped and i == len(tokens) - 1 and not params.stop and token in self._added_ids
            )
            if token in stop_ids or remote_stop_token:
                text = detok.add(token) if params.no_stop_trim else ""
                tail = stops.feed(text + detok.flush())
                events.append(TokenStep(token, lp, top, ""))
                events.append(
                    Finished({"type": "stop", "matched": token}, tail.text + stops.flush(), weight_version)
                )
                return events
            released = stops.feed(detok.add(token))
            if released.matched is not None:
                events.append(TokenStep(token, lp, top, ""))
                events.append(
                    Finished({"type": "stop", "matched": released.matched}, released.text, weight_version)
                )
                return events
            events.append(TokenStep(token, lp, top, released.text))
        tail = stops.feed(detok.flush())
        if tail.matched is not None:
            reason: dict[str, Any] = {"type": "stop", "matched": tail.matched}
        elif sample.stopped:  # Tinker stopped on something the replay did not see (not in the tokens)
            reason = {"type": "stop", "matched": None}
        else:
            reason = {"type": "length", "length": params.max_new_tokens}
        events.append(Finished(reason, tail.text + stops.flush(), weight_version))
        return events

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
            "device": "tinker",
            "backend": "tinker",
            "base_model": self.base_model,
            "sampler_path": self.sampler_path,
            "architectures": [],
            "paused": self.gate.paused,
            "logprob_semantics": "tinker",
            "started_at": _STARTED_AT,
        }


_STARTED_AT = time.time()


def _finite(value: float) -> float:
    """-inf (a token the sampler ruled out) is not valid JSON; report the float minimum like the engine."""
    value = float(value)
    return value if math.isfinite(value) else -3.4028234663852886e38


def _eos_ids(tokenizer: PreTrainedTokenizerBase, tokenizer_path: str) -> frozenset[int]:
    """The tokenizer's EOS plus a local folder's `generation_config.json` ones (as the engine reads them)."""
    ids: set[int] = set()
    if tokenizer.eos_token_id is not None:
        ids.add(int(tokenizer.eos_token_id))
    config = Path(tokenizer_path) / "generation_config.json"
    if config.is_file():
        gen_eos = json.loads(config.read_text()).get("eos_token_id")
        if isinstance(gen_eos, int):
            ids.add(gen_eos)
        elif isinstance(gen_eos, list):
            ids.update(int(i) for i in gen_eos)
    return frozenset(ids)

"""A served policy whose tokens come from a Fireworks deployment's completions endpoint.

Token in, token out: the chat template is rendered locally with the base model's tokenizer (the reference
engine's rendering), the prompt **ids** go to `/inference/v1/completions` through the SDK's own
`DeploymentSampler` (`raw_output=True`), and the sampled ids come back in `raw_output.completion_token_ids`
with one log-prob each (`logprobs.content[]`: `sampling_logprob`, the behaviour policy's). Those ids and
log-probs are served as they came: the response is never re-tokenised. Only the text is derived here
(decoding the ids), and stop strings and extra stop ids are applied to the returned ids as `TinkerRunner`
does (`_replay`).

The deployment is the one the sidecar hot-loads: `update_weights_from_disk(<export folder>)` hot-loads the
folder's snapshot (`FireworksTrainer.hot_load`) and, once the deployment has it, serves it as the new weight
version. Everything else (pausing, aborting, the replay of stop rules, prompt log-probs) is `TinkerRunner`'s.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from transformers import PreTrainedTokenizerBase

from .errors import EngineError
from .generation_events import GenerationRequest, RequestError, TopEntry, fit_to_context
from .model_runner import _bump_version
from .step_gate import StepGate
from .tinker_runner import DEFAULT_CONTEXT_LENGTH, RemoteSample, TinkerRunner, _eos_ids, _finite


class FireworksRunner(TinkerRunner):
    def __init__(
        self,
        sdk: Any,
        *,
        inference_url: str,
        model: str,
        api_key: str,
        base_model: str,
        tokenizer: PreTrainedTokenizerBase,
        tokenizer_path: str,
        hot_load: Callable[[str, str], dict[str, Any]],
        served_model_name: str | None = None,
        context_length: int | None = None,
        weight_version: str = "0",
    ) -> None:
        import threading

        self.sdk = sdk
        self.inference_url = inference_url
        self.deployment_model = model  # accounts/<account>/deployments/<id>
        self._api_key = api_key
        self._hot_load = hot_load
        self.base_model = base_model
        self._init_tokenizer(tokenizer)
        self.tokenizer_path = tokenizer_path
        self.served_model_name = served_model_name or base_model
        self.model_path = base_model
        self.sampler_path: str | None = None  # the snapshot hot-loaded; None: what the deployment had
        self.vocab_size = len(tokenizer)
        limit = int(getattr(tokenizer, "model_max_length", 0) or 0)
        self.context_length = context_length or (limit if 0 < limit < 10**7 else DEFAULT_CONTEXT_LENGTH)
        self.eos_token_ids = _eos_ids(tokenizer, tokenizer_path)
        self.weight_version = weight_version
        self.gate = StepGate()
        self._cancels: dict[str, threading.Event] = {}
        self._control_lock = threading.Lock()
        self._client = None  # one DeploymentSampler per request (each runs its own event loop)

    def load_lora_adapter(self, name: str, path: str, weight_version: str | None) -> tuple[bool, str]:
        return False, "this engine serves a Fireworks deployment, which hot-loads whole snapshots only"

    def unload_lora_adapter(self, name: str) -> tuple[bool, str]:
        return False, f"LoRA adapter {name!r} is not loaded (the Fireworks runner serves none)"

    def update_weights_from_disk(self, model_path: str, weight_version: str | None) -> tuple[bool, str, int]:
        """Hot-load the export in `model_path` into the deployment, then serve it as the new version."""
        with self._control_lock:
            num_paused = self.gate.active_requests if self.gate.paused else 0
            version = weight_version or _bump_version(self.weight_version)
            try:
                loaded = self._hot_load(model_path, version)
            except EngineError as exc:
                return False, exc.message, num_paused
            # Requests already sent finish on what the deployment served them; new ones get the new version.
            with self.gate.exclusive():
                self.sampler_path = str(loaded.get("snapshot_name"))
                self.model_path = str(model_path)
                self.weight_version = version
            return True, "Succeeded to update model weights.", num_paused

    def validate(self, req: GenerationRequest) -> GenerationRequest:
        if req.sampling.min_p > 0.0:
            raise RequestError("min_p is not available when sampling on a Fireworks deployment", "min_p")
        return fit_to_context(req, self.context_length)

    def _sample(self, client: Any, req: GenerationRequest) -> RemoteSample:
        params = req.sampling
        want_prompt = req.return_logprob and req.logprob_start_len >= 0
        k = req.top_logprobs_num if req.return_logprob else 0
        n = len(req.input_ids)
        if params.max_new_tokens <= 0 and not want_prompt:
            return RemoteSample([], [], [], stopped=False)
        kwargs: dict[str, Any] = {"logprobs": True, "top_p": params.top_p, "top_k": max(params.top_k, 0)}
        if k > 0:
            kwargs["top_logprobs"] = k
        if want_prompt:
            kwargs["echo"] = True  # the prompt's log-probs come back before the completion's
        if params.seed is not None:
            kwargs["seed"] = params.seed
        if params.ignore_eos:
            kwargs["ignore_eos"] = True
        sampler = self.sdk.DeploymentSampler(
            inference_url=self.inference_url, model=self.deployment_model, api_key=self._api_key
        )

        async def sample() -> list[Any]:
            try:
                return await sampler.sample_with_prompt_tokens(
                    list(req.input_ids),
                    n=1,
                    max_tokens=max(params.max_new_tokens, 0),
                    temperature=params.temperature,
                    # Strings only: extra stop ids are applied to the returned ids (the API takes no ids).
                    stop=list(params.stop) or None,
                    **kwargs,
                )
            finally:
                # The sampler's connections belong to this request's event loop: closed on it, not leaked.
                await sampler._get_async_client().aclose()

        try:
            completions = asyncio.run(sample())
        finally:
            sampler._async_client = None
            sampler.close()
        if not completions:
            raise RuntimeError("the Fireworks deployment returned no completion")
        c = completions[0]
        if c.full_tokens[: c.prompt_len] != list(req.input_ids):
            raise RuntimeError("the Fireworks deployment answered for another prompt than the one sent")
        tokens = [int(t) for t in c.full_tokens[c.prompt_len :]]
        lps = list(c.inference_logprobs or [])
        top_ids = list(c.inference_topk_token_ids or [])
        top_lps = list(c.inference_topk_logprobs or [])
        # With echo the lists are training-aligned: entry j is position j+1 of prompt ++ completion.
        offset = n - 1 if c.logprobs_echoed else 0
        if len(lps) != offset + len(tokens):
            raise RuntimeError(
                f"the Fireworks deployment returned {len(lps)} log-probs for {len(tokens)} sampled ids"
                + (f" and a {n}-token prompt" if offset else "")
            )

        def row(j: int) -> TopEntry:
            if k == 0 or j >= len(top_ids):
                return []
            return [(float(lp), int(t)) for t, lp in zip(top_ids[j], top_lps[j], strict=True)]

        # The behaviour policy's log-prob of each sampled id (`sampling_logprob`: after temperature, top-p,
        # top-k), as the reference engine reports them; a deployment that omits it gives the raw log-prob,
        # which is the same only under full-distribution sampling (as the SDK's own fallback).
        sampled = list(c.sampling_logprobs or [])[offset:]
        if len(sampled) == len(tokens) and all(lp is not None for lp in sampled):
            response_lps = [float(lp) for lp in sampled if lp is not None]
        elif params.temperature == 1.0 and params.top_p == 1.0 and params.top_k <= 0:
            response_lps = [float(lp) for lp in lps[offset:]]
        else:
            raise RuntimeError(
                "the Fireworks deployment returned no sampling_logprob, and at this temperature/top_p/top_k "
                "the raw log-probs are not the sampled distribution's"
            )
        prompt_lps: list[float | None] | None = None
        prompt_tops: list[TopEntry | None] | None = None
        if want_prompt:
            prompt_lps = [None] + [float(lp) for lp in lps[:offset]]
            prompt_tops = [None] + [row(j) for j in range(offset)]
        return RemoteSample(
            tokens=tokens,
            logprobs=[_finite(lp) for lp in response_lps],
            tops=[row(offset + i) for i in range(len(tokens))],
            stopped=c.finish_reason == "stop",
            prompt_logprobs=prompt_lps,
            prompt_tops=prompt_tops,
        )

    def info(self) -> dict[str, Any]:
        return {
            **super().info(),
            "device": "fireworks",
            "backend": "fireworks",
            "deployment": self.deployment_model,
            "logprob_semantics": "fireworks",
        }

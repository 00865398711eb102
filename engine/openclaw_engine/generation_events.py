"""What a generation request is and what it yields, shared by every runner and both HTTP APIs."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field, replace
from typing import Any

from .sampling import SamplingParams

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
    # Tokens the reply must begin with (a forced tool call): fed, not sampled; log-probs are the model's.
    forced_output: tuple[int, ...] = ()
    # A loaded LoRA adapter's name (lora_serving.py); None: the base model.
    lora_name: str | None = None
    # A vision-language model's image inputs (`vision_processor.VisionInputs`); input_ids already hold
    # each image's pad tokens. None: a text prompt.
    vision: Any = None


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
    cached_tokens: int = 0  # prompt tokens whose KV came from the prefix cache


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

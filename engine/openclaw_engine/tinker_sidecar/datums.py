"""Samples -> Tinker datums (spec 8.2 layout, advantages as `openclaw_engine.losses`).

Layout (spec 8.2 `data_formatter.py`): with `all = prompt + response` (P prompt tokens), the model reads
`all[:-1]` and is scored on `target_tokens = all[1:]`; `logprobs` and `advantages` are `[0]*(P-1)` followed
by one value per response token, so position t of every array refers to the same next token. All arrays are
fitted to T = len(all) - 1.

Advantages deliberately do not copy spec 8.2's deviations (OPD reward fixed to 1 plus a 0.02-scaled
teacher term): they are the project's own (losses.py), the ones slime and the reference trainer use:
  grpo:    A_t = r · m_t
  opd:     A_t = (teacher_lp_t − old_lp_t) · m_t
  combine: A_t = (w_opd·(teacher_lp_t − old_lp_t) + w_rl·r) · m_t
where old_lp are the sampling policy's log-probs (the rollout log-probs: Tinker recomputes π_θ itself and
its PPO ratio is against these). A combine sample without a teacher (an RL-only row), or whose teacher is its
rollout log-probs, has teacher term 0 (`losses.teacher_or_old`).

Images (a vision-language model's sample): the tokens hold each image's `<|image_pad|>` run as the
engine served it; in the model input each run becomes one `ImageChunk` of the image's bytes, with
`expected_tokens` the run's length (Tinker's Qwen-VL layout: `<|vision_start|>`, the image,
`<|vision_end|>`), so the positions of every other token, and every array, stay where they were.
Tinker takes PNG and JPEG only.

Tinker computes π_θ at temperature 1 and takes no temperature, so a sample drawn at another temperature is
refused (its rollout log-probs are log_softmax(logits / T) and the ratio would compare two distributions).
"""

from __future__ import annotations

import base64
import math
from dataclasses import dataclass
from typing import Any

import torch

from ..losses import combine_advantages, grpo_advantages, opd_advantages, teacher_or_old
from ..training_schemas import LossRequest, TrainSample

# The project's loss names map onto these; Tinker has no top-K distillation loss.
SUPPORTED_METHODS = ("grpo", "opd", "combine")


@dataclass(frozen=True)
class DatumImage:
    """One image of the model input: it stands where its pad run is, `[start, start + tokens)`."""

    start: int
    tokens: int
    data: str  # base64
    format: str  # "png" | "jpeg"


@dataclass(frozen=True)
class DatumArrays:
    """The plain lists one datum is made of (kept separately so tests can compare them exactly)."""

    model_input: list[int]
    target_tokens: list[int]
    logprobs: list[float]
    advantages: list[float]
    images: tuple[DatumImage, ...] = ()


TINKER_IMAGE_FORMATS = {"image/png": "png", "image/jpeg": "jpeg"}


def image_runs(ids: list[int], image_token_id: int) -> list[tuple[int, int]]:
    """(start, length) of each maximal run of the image pad token, in order."""
    runs: list[tuple[int, int]] = []
    for i, token in enumerate(ids):
        if token != image_token_id:
            continue
        if runs and runs[-1][0] + runs[-1][1] == i:
            runs[-1] = (runs[-1][0], runs[-1][1] + 1)
        else:
            runs.append((i, 1))
    return runs


def datum_images(
    sample: TrainSample, model_input: list[int], image_token_id: int | None
) -> tuple[DatumImage, ...]:
    """Each image of the sample against its pad run in the model input (ValueError where they disagree)."""
    if not sample.images:
        return ()
    if image_token_id is None:
        raise ValueError(
            "the sample has images, and this sidecar knows no image token: start it with --tokenizer set to "
            "the vision-language model's tokenizer folder"
        )
    runs = image_runs(model_input, image_token_id)
    if len(runs) != len(sample.images):
        raise ValueError(f"the tokens hold {len(runs)} image runs for {len(sample.images)} images")
    out = []
    for i, ((start, length), image) in enumerate(zip(runs, sample.images, strict=True)):
        fmt = TINKER_IMAGE_FORMATS.get(image.media_type)
        if fmt is None:
            raise ValueError(f"image {i} is {image.media_type}; Tinker takes image/png and image/jpeg only")
        out.append(DatumImage(start, length, image.data, fmt))
    return tuple(out)


def response_advantages(sample: TrainSample, loss: LossRequest) -> list[float]:
    """One advantage per response token, masked tokens 0, computed with the functions of losses.py."""
    if sample.temperature != 1.0:
        raise ValueError(
            f"the sample was drawn at temperature {sample.temperature:g}; Tinker computes log-probs at "
            "temperature 1 only, so serve at temperature 1 to train with Tinker"
        )
    mask = torch.tensor([sample.loss_mask], dtype=torch.float64)
    old = torch.tensor([sample.rollout_log_probs], dtype=torch.float64)
    if loss.method == "grpo":
        adv = grpo_advantages(torch.tensor([sample.reward], dtype=torch.float64), mask)
    else:
        if sample.teacher_log_probs is None and loss.method != "combine":
            raise ValueError(f"method {loss.method} needs teacher_log_probs on every sample")
        given = sample.teacher_log_probs
        teacher = None if given is None else torch.tensor([given], dtype=torch.float64)
        if loss.method == "combine":
            # Tinker's π_old is the rollout log-probs, so they are both `old` and `rollout` here.
            teacher = teacher_or_old(teacher, old, old)
        assert teacher is not None
        if loss.method == "opd":
            adv = opd_advantages(teacher, old) * mask
        elif loss.method == "combine":
            rewards = torch.tensor([sample.reward], dtype=torch.float64)
            adv = combine_advantages(teacher, old, rewards, w_opd=loss.w_opd, w_rl=loss.w_rl) * mask
        else:
            raise ValueError(
                f"method {loss.method!r} is not supported on Tinker; use one of {SUPPORTED_METHODS}"
            )
    # `+ 0.0` turns the −0.0 of a masked negative advantage into 0.0 (JSON keeps the sign).
    return [v + 0.0 if math.isfinite(v) else 0.0 for v in adv[0].tolist()]


def _fit(values: list[Any], length: int, pad: Any) -> list[Any]:
    return values[:length] + [pad] * max(0, length - len(values))


def datum_arrays(sample: TrainSample, loss: LossRequest, image_token_id: int | None = None) -> DatumArrays:
    tokens = list(sample.tokens)
    prompt_len = len(tokens) - sample.response_length
    t = len(tokens) - 1
    lead = [0.0] * (prompt_len - 1)
    logprobs = [v if math.isfinite(v) else 0.0 for v in sample.rollout_log_probs]
    return DatumArrays(
        model_input=tokens[:-1],
        target_tokens=tokens[1:],
        logprobs=_fit(lead + logprobs, t, 0.0),
        advantages=_fit(lead + response_advantages(sample, loss), t, 0.0),
        images=datum_images(sample, tokens[:-1], image_token_id),
    )


def to_datum(sdk: Any, arrays: DatumArrays) -> Any:
    """A `tinker.types.Datum` (or the same type of whichever SDK module is given)."""
    return sdk.types.Datum(
        model_input=model_input(sdk, arrays),
        loss_fn_inputs={
            "target_tokens": arrays.target_tokens,
            "logprobs": arrays.logprobs,
            "advantages": arrays.advantages,
        },
    )


def model_input(sdk: Any, arrays: DatumArrays) -> Any:
    """The ids as one text chunk, or, with images, text chunks around one `ImageChunk` per pad run."""
    ids = arrays.model_input
    if not arrays.images:
        return sdk.types.ModelInput.from_ints(ids)
    chunks: list[Any] = []
    at = 0
    for image in arrays.images:
        if image.start > at:
            chunks.append(sdk.types.EncodedTextChunk(tokens=ids[at : image.start]))
        chunks.append(
            sdk.types.ImageChunk(
                data=base64.b64decode(image.data), format=image.format, expected_tokens=image.tokens
            )
        )
        at = image.start + image.tokens
    if at < len(ids):
        chunks.append(sdk.types.EncodedTextChunk(tokens=ids[at:]))
    return sdk.types.ModelInput(chunks=chunks)

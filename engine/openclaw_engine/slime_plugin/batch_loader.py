"""slime rollout function that reads the epoch's batch from the file the workflow wrote.

`--rollout-function-path openclaw_engine.slime_plugin.batch_loader.generate_rollout_from_batch_file`:
slime calls `generate_rollout(args, rollout_id, data_source, evaluation=False)` and trains on the sample
groups it returns (spec 2: the OpenClaw rollout function drains its queue the same way). Here the "queue" is
the batch file named by `$OPENCLAW_BATCH_FILE`, a `/train_step` request body (engine/TRAINING.md), validated
with the reference trainer's schema before slime sees a sample. Each sample is its own group (spec 5:
n_samples_per_prompt 1).

Samples carry slime's `Sample` fields as the OpenClaw proxy fills them (spec 11.2): `index`, `group_index`,
`tokens`, `response_length`, `loss_mask`, `rollout_log_probs`, `reward = {"score": r}` (`--reward-key score`),
`status = COMPLETED`, and for OPD/combine/top-K `teacher_log_probs` [L] float32, `teacher_topk_log_probs`
[L, K] float32, `teacher_topk_indices` [L, K] int64. A sample with images (a vision-language model's) also
gets slime's `multimodal_inputs = {"images": [PIL images]}` and `multimodal_train_inputs = {"pixel_values",
"image_grid_thw"}`, made by the model's image processor (`--hf-checkpoint`) from the images' bytes against
the sample's exact tokens, whose pad runs they must fill (`vision_processor.inputs_for_ids`, as the reference
trainer does); slime hands those to the model's forward. With slime installed they are
`slime.utils.types.Sample`; without it (tests) a plain object with the same attributes.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from ..training_schemas import TrainSample, TrainStepRequest, check_for_method, parse_train_step

BATCH_FILE_ENV = "OPENCLAW_BATCH_FILE"


@dataclass
class PlainSample:
    """The fields of slime's `Sample` the trainer reads, for use where slime is not installed."""

    index: int = 0
    group_index: int = 0
    prompt: str = ""
    response: str = ""
    tokens: list[int] = field(default_factory=list)
    response_length: int = 0
    loss_mask: list[int] = field(default_factory=list)
    rollout_log_probs: list[float] = field(default_factory=list)
    reward: dict[str, float] = field(default_factory=dict)
    status: str = "completed"
    metadata: dict[str, Any] = field(default_factory=dict)
    teacher_log_probs: torch.Tensor | None = None
    teacher_topk_log_probs: torch.Tensor | None = None
    teacher_topk_indices: torch.Tensor | None = None
    multimodal_inputs: dict[str, Any] | None = None
    multimodal_train_inputs: dict[str, Any] | None = None


def read_batch_file(path: str | os.PathLike[str]) -> TrainStepRequest:
    """The batch at `path`, validated (shapes, finite numbers, per-method fields); errors name the field."""
    request = parse_train_step(json.loads(Path(path).read_text()))
    check_for_method(request)
    return request


def has_images(request: TrainStepRequest) -> bool:
    return any(sample.images for sample in request.samples)


def image_processor_for(request: TrainStepRequest, hf_checkpoint: str | None) -> Any:
    """The model's processor when the batch has images (ValueError if the model takes none); else None."""
    if not has_images(request):
        return None
    from ..vision_processor import is_vision_model, load_processor

    if not hf_checkpoint or not is_vision_model(hf_checkpoint):
        raise ValueError(
            f"the batch has images, and --hf-checkpoint {hf_checkpoint!r} is not a vision-language model"
        )
    return load_processor(hf_checkpoint)


def multimodal_fields(sample: TrainSample, processor: Any, index: int) -> tuple[dict, dict]:
    """slime's `multimodal_inputs` and `multimodal_train_inputs` of one sample (ValueError naming it)."""
    from ..vision_processor import ImageError, decode_image_bytes, inputs_for_ids

    try:
        pictures = [decode_image_bytes(image.data) for image in sample.images or []]
        inputs = inputs_for_ids(processor, list(sample.tokens), pictures)
    except ImageError as exc:
        raise ValueError(f"samples[{index}].images: {exc}") from None
    train = {"pixel_values": inputs.pixel_values, "image_grid_thw": inputs.image_grid_thw}
    return {"images": pictures}, train


def check_temperature(request: TrainStepRequest, rollout_temperature: float) -> None:
    """slime computes every log-prob at one `--rollout-temperature`: each sample must be drawn at it."""
    for i, s in enumerate(request.samples):
        if abs(s.temperature - rollout_temperature) > 1e-9:
            raise ValueError(
                f"samples[{i}] was drawn at temperature {s.temperature:g} but slime trains this step at "
                f"--rollout-temperature {rollout_temperature:g}"
            )


def _sample_class() -> tuple[type, Any]:
    try:
        from slime.utils.types import Sample  # type: ignore[import-not-found]

        return Sample, Sample.Status.COMPLETED
    except ImportError:
        return PlainSample, "completed"


def samples_from_batch(
    request: TrainStepRequest, sample_cls: type | None = None, processor: Any = None
) -> list[list[Any]]:
    """One group per sample, in batch order, with slime's `Sample` fields (spec 11.2); `processor` makes the
    images' inputs (`image_processor_for`)."""
    cls, completed = _sample_class() if sample_cls is None else (sample_cls, "completed")
    groups = []
    for i, s in enumerate(request.samples):
        sample = cls()
        sample.index = i
        sample.group_index = i
        sample.tokens = list(s.tokens)
        sample.response_length = s.response_length
        sample.loss_mask = list(s.loss_mask)
        sample.rollout_log_probs = list(s.rollout_log_probs)
        sample.reward = {"score": float(s.reward)}
        sample.status = completed
        if s.teacher_log_probs is not None:
            sample.teacher_log_probs = torch.tensor(s.teacher_log_probs, dtype=torch.float32)
        elif request.loss.method == "combine":
            # An RL-only row, built as the original does (teacher = rollout log-probs); the combine loss
            # recognises it and gives it a teacher term of exactly 0 (losses.teacher_or_old).
            sample.teacher_log_probs = torch.tensor(s.rollout_log_probs, dtype=torch.float32)
        if s.teacher_topk_log_probs is not None:
            sample.teacher_topk_log_probs = torch.tensor(s.teacher_topk_log_probs, dtype=torch.float32)
        if s.teacher_topk_indices is not None:
            sample.teacher_topk_indices = torch.tensor(s.teacher_topk_indices, dtype=torch.int64)
        if s.images:
            if processor is None:
                raise ValueError(f"samples[{i}] has images, and no image processor was given")
            sample.multimodal_inputs, sample.multimodal_train_inputs = multimodal_fields(s, processor, i)
        groups.append([sample])
    return groups


def generate_rollout_from_batch_file(
    args: Any, rollout_id: int, data_source: Any = None, evaluation: bool = False
) -> Any:
    """slime's rollout-function signature: the batch file's samples (no generation, no evaluation set)."""
    if evaluation:
        return {}
    path = os.environ.get(BATCH_FILE_ENV)
    if not path:
        raise RuntimeError(f"${BATCH_FILE_ENV} is not set: the epoch launcher names the batch file there")
    request = read_batch_file(path)
    check_temperature(request, float(getattr(args, "rollout_temperature", 1.0) or 1.0))
    processor = image_processor_for(request, getattr(args, "hf_checkpoint", None))
    groups = samples_from_batch(request, processor=processor)
    expected = getattr(args, "rollout_batch_size", None)
    if expected is not None and int(expected) != len(groups):
        raise ValueError(f"{path} holds {len(groups)} samples but --rollout-batch-size is {expected}")
    try:
        from slime.rollout.base_types import RolloutFnTrainOutput  # type: ignore[import-not-found]
    except ImportError:
        return groups
    return RolloutFnTrainOutput(samples=groups, metrics={})

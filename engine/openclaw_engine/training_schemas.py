"""Request models of the training routes, validated at the edge so a bad batch never reaches the optimizer.

Structural checks (types, finite numbers, lengths that must agree with `response_length`) are pydantic
validators, so FastAPI reports them as 400 with `param` naming the field (`samples[2].loss_mask`). Checks
that need the loss method or the model (`check_for_method`, vocabulary bounds in the Trainer) raise
`EngineError` with the same kind of `param`.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    FiniteFloat,
    ValidationError,
    ValidationInfo,
    field_validator,
)

from .errors import EngineError, _loc_to_param
from .losses import LossHyperParams

TokenId = Annotated[int, Field(ge=0)]
LogProb = FiniteFloat


class _Strict(BaseModel):
    # Unknown fields are refused: a misspelt `kl_coef` must not silently train with the default.
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


class LossRequest(_Strict):
    """Which loss and its hyper-parameters; defaults from spec sections 5-7."""

    method: Literal["grpo", "opd", "combine", "topk_distill"] = "grpo"
    eps_clip: float = Field(0.2, ge=0.0, le=1.0)
    eps_clip_high: float = Field(0.28, ge=0.0)
    kl_coef: float = Field(0.0, ge=0.0)
    kl_type: Literal["low_var_kl", "k1", "k2", "k3"] = "low_var_kl"
    entropy_coef: float = 0.0
    w_rl: float = 1.0
    w_opd: float = 1.0
    # False: π_old is recomputed by the trainer (slime's default); True: the samples' rollout log-probs.
    use_rollout_logprobs: bool = False

    def rollout_old(self, sample: TrainSample) -> bool:
        """Whether π_old of `sample` is its rollout log-probs (its own flag, else the step's)."""
        flag = sample.use_rollout_logprobs
        return self.use_rollout_logprobs if flag is None else flag

    def hyper_params(self) -> LossHyperParams:
        return LossHyperParams(
            eps_clip=self.eps_clip,
            eps_clip_high=self.eps_clip_high,
            kl_coef=self.kl_coef,
            kl_type=self.kl_type,
            entropy_coef=self.entropy_coef,
            w_rl=self.w_rl,
            w_opd=self.w_opd,
        )


class OptimizerRequest(_Strict):
    """AdamW settings (spec 5: lr 1e-5 constant, weight decay 0.1, betas (0.9, 0.98))."""

    lr: float = Field(1e-5, gt=0.0, le=1.0)
    weight_decay: float = Field(0.1, ge=0.0)
    betas: tuple[Annotated[float, Field(ge=0.0, lt=1.0)], Annotated[float, Field(ge=0.0, lt=1.0)]] = (
        0.9,
        0.98,
    )


def _response_length(info: ValidationInfo) -> int | None:
    # None when response_length itself failed validation: its own error is then the one reported.
    value = info.data.get("response_length")
    return value if isinstance(value, int) else None


class TrainImage(_Strict):
    """One image of a sample's prompt: its bytes, base64 (the trainer's processor makes the pixel values)."""

    media_type: str = Field(pattern=r"^image/[A-Za-z0-9.+-]+$")
    data: str = Field(min_length=1)


class TrainSample(_Strict):
    """One trajectory: `tokens` = prompt + response; the per-token arrays cover the response only.

    Field order matters: the validators below read the fields declared before them.
    """

    tokens: list[TokenId] = Field(min_length=2)
    response_length: int = Field(ge=1)
    loss_mask: list[Literal[0, 1]]
    rollout_log_probs: list[LogProb]
    reward: FiniteFloat = 0.0
    teacher_log_probs: list[LogProb] | None = None
    teacher_topk_log_probs: list[list[LogProb]] | None = None
    teacher_topk_indices: list[list[TokenId]] | None = None
    # The temperature the sample was drawn at (and its log-probs reported at): every log-prob the trainer
    # computes for it is log_softmax(logits / temperature). Greedy samples are reported at 1 (SGLang).
    temperature: float = Field(1.0, gt=0.0, le=100.0)
    # Per sample π_old: None follows `loss.use_rollout_logprobs`; True uses this sample's rollout log-probs
    # (a sample too many policy versions old), False the trainer's recomputed ones.
    use_rollout_logprobs: bool | None = None
    # The sample's loss weight: its per-token loss terms count w times in the step's mean (engine/TRAINING.md,
    # "Sample weights"); 0 leaves it out of the step, 1 (the default) is the unweighted loss.
    weight: float = Field(1.0, ge=0.0, le=1e6)
    # The prompt's images in prompt order (a vision-language model's sample): `tokens` already hold each
    # image's `<|image_pad|>` tokens, as the engine served them; the trainer never re-tokenises.
    images: list[TrainImage] | None = None

    @field_validator("response_length")
    @classmethod
    def _fits_tokens(cls, value: int, info: ValidationInfo) -> int:
        tokens = info.data.get("tokens")
        # The first response token is scored from the logits of the token before it: one prompt token needed.
        if tokens is not None and value >= len(tokens):
            raise ValueError(
                f"response_length {value} must be smaller than len(tokens) {len(tokens)} "
                "(at least one prompt token precedes the response)"
            )
        return value

    @field_validator("loss_mask", "rollout_log_probs", "teacher_log_probs")
    @classmethod
    def _one_per_response_token(cls, value: list | None, info: ValidationInfo) -> list | None:
        n = _response_length(info)
        if value is not None and n is not None and len(value) != n:
            raise ValueError(f"has {len(value)} entries but response_length is {n}")
        return value

    @field_validator("teacher_topk_log_probs", "teacher_topk_indices")
    @classmethod
    def _topk_rows(cls, value: list[list] | None, info: ValidationInfo) -> list[list] | None:
        if value is None:
            return value
        n = _response_length(info)
        if n is not None and len(value) != n:
            raise ValueError(f"has {len(value)} rows but response_length is {n}")
        widths = {len(row) for row in value}
        if len(widths) > 1 or 0 in widths:
            raise ValueError("rows must all hold the same number K >= 1 of entries")
        other = info.data.get("teacher_topk_log_probs") if info.field_name == "teacher_topk_indices" else None
        if other is not None and (len(other) != len(value) or len(other[0]) != len(value[0])):
            raise ValueError("must have the same [response_length][K] shape as teacher_topk_log_probs")
        return value


class TrainStepRequest(_Strict):
    """One optimizer step over `samples`; idempotent by `step_id`."""

    step_id: str = Field(min_length=1, max_length=256)
    samples: list[TrainSample] = Field(min_length=1)
    loss: LossRequest = Field(default_factory=LossRequest)
    optimizer: OptimizerRequest = Field(default_factory=OptimizerRequest)


class StepPart(_Strict):
    """Which part of a step a `/train_step_part` request carries: `index` of `count` (0-based)."""

    index: int = Field(ge=0)
    count: int = Field(ge=1, le=100_000)

    @field_validator("count")
    @classmethod
    def _covers_index(cls, value: int, info: ValidationInfo) -> int:
        index = info.data.get("index")
        if isinstance(index, int) and index >= value:
            raise ValueError(f"part index {index} must be below count {value}")
        return value


class TrainStepPartRequest(TrainStepRequest):
    """Some samples of one step, for a step whose whole body exceeds the server's request body limit.

    Every part names the same step id, loss, optimizer and count; the samples of the parts, in index order,
    are the step's batch, trained as one optimizer step once the last part has arrived.
    """

    part: StepPart


class CheckpointRequest(_Strict):
    path: str = Field(min_length=1)


def parse_train_step(request: TrainStepRequest | dict) -> TrainStepRequest:
    """Validate a Python-side request the same way the HTTP route does, as an EngineError naming the field."""
    if isinstance(request, TrainStepRequest):
        return request
    try:
        return TrainStepRequest.model_validate(request)
    except ValidationError as exc:
        first = exc.errors()[0]
        param = _loc_to_param(tuple(first["loc"]))
        raise EngineError(f"{param}: {first['msg']}", param=param) from None


def check_for_method(request: TrainStepRequest) -> None:
    """Per-method required fields: the teacher signal for opd, the top-K arrays for topk_distill.

    A combine sample without teacher log-probs is one of combine's RL-only rows: its teacher term is 0.
    """
    if all(sample.weight == 0.0 for sample in request.samples):
        raise EngineError("every sample has weight 0: the step would train nothing", param="samples")
    method = request.loss.method
    for i, sample in enumerate(request.samples):
        if method == "opd" and sample.teacher_log_probs is None:
            raise EngineError(
                f"samples[{i}].teacher_log_probs is required by loss method {method!r}",
                param=f"samples[{i}].teacher_log_probs",
            )
        if method == "topk_distill":
            for name in ("teacher_topk_log_probs", "teacher_topk_indices"):
                if getattr(sample, name) is None:
                    raise EngineError(
                        f"samples[{i}].{name} is required by loss method 'topk_distill'",
                        param=f"samples[{i}].{name}",
                    )

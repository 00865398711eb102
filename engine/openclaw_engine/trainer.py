"""The reference trainer: one optimizer step per request with the OpenClaw-RL losses, idempotent by step id.

It holds its own copy of the policy (the served model is a separate object, refreshed from checkpoints via
`/update_weights_from_disk`), an AdamW optimizer, and the record of every step id already trained, which
travels with each checkpoint so a resumed trainer still refuses to train a step twice.
"""

from __future__ import annotations

import copy
import json
import math
import shutil
import threading
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from peft import LoraConfig, PeftModel, get_peft_model, get_peft_model_state_dict, set_peft_model_state_dict
from safetensors.torch import load_file
from torch import Tensor
from transformers import AutoModelForCausalLM, AutoModelForImageTextToText, PreTrainedModel

from .checkpoint_state import STATE_DIR, state_file, step_fingerprint, write_state
from .durable_files import publish_dir, staged_dir
from .errors import EngineError
from .losses import compute_loss, entropy_from_logits, sum_of_sample_mean, teacher_or_old, tempered
from .training_schemas import (
    OptimizerRequest,
    TrainSample,
    TrainStepRequest,
    check_for_method,
    parse_train_step,
)
from .vision_forward import vision_logits
from .vision_processor import ImageError, decode_image_bytes, inputs_for_ids, is_vision_model, load_processor

DEFAULT_LORA_TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
GRAD_CLIP = 1.0
CHECKPOINT_FORMAT = 1
ADAPTER_DIR = "adapter"
# Files of a model folder that a checkpoint writes itself; everything else at the top level of the source
# folder (tokenizer files, chat template, ...) is copied so the checkpoint is a servable model on its own.
_WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".ckpt", ".gguf")
_OWN_FILES = {
    "config.json",
    "generation_config.json",
    "model.safetensors.index.json",
    "pytorch_model.bin.index.json",
}


@dataclass
class StepRecord:
    """What a trained step leaves behind: its metrics and a hash of its request (to catch a reused id)."""

    metrics: dict[str, Any]
    fingerprint: str


class Trainer:
    """Trains a causal LM from `model_dir` (full fine-tune, or LoRA when lora_rank > 0); thread-safe."""

    # The PEFT adapter this trainer trains when it is a LoRA trainer (adapter_trainer.py trains others).
    _adapter_name = "default"
    # A vision-language model (Qwen2.5-VL): samples may carry images (vision_forward.py's forward pass).
    is_vision = False
    _processor: Any = None

    def __init__(
        self,
        model_dir: str,
        device: str = "cpu",
        lora_rank: int = 0,
        lora_alpha: int | None = None,
        lora_target_modules: list[str] | None = None,
        seed: int = 0,
    ) -> None:
        if lora_rank < 0:
            raise ValueError("lora_rank must be >= 0")
        self.model_dir = str(Path(model_dir).resolve())
        self.device = torch.device(device)
        self.seed = seed
        self.lora_rank = lora_rank
        self.lora_alpha = (lora_alpha if lora_alpha is not None else 2 * lora_rank) if lora_rank else None
        self.lora_target_modules = list(lora_target_modules or DEFAULT_LORA_TARGETS) if lora_rank else None
        self._lock = threading.Lock()
        self.is_vision = is_vision_model(self.model_dir)
        if self.is_vision:
            if lora_rank:
                raise ValueError("LoRA training of a vision-language model is not supported; use lora_rank 0")
            self._processor = load_processor(self.model_dir)
        self.model: PreTrainedModel | PeftModel = self._base_policy()
        self.vocab_size = int(self.model.get_input_embeddings().num_embeddings)
        self._optimizer: torch.optim.AdamW | None = None
        self._ref_model: PreTrainedModel | None = None
        self._steps: dict[str, StepRecord] = {}
        # The trainer's own random stream, checkpointed with it. Today's step is deterministic (no dropout,
        # no sampling), so nothing draws from it yet; it exists so that anything stochastic added to the
        # step draws from a stream that resumes exactly, never from the process-global RNG the server uses.
        self.rng = torch.Generator().manual_seed(seed)
        self.step_count = 0

    # ---- public API -------------------------------------------------------------------------------

    @property
    def is_lora(self) -> bool:
        return self.lora_rank > 0

    def train_step(self, request: TrainStepRequest | dict) -> dict[str, Any]:
        """One optimizer step over the samples; a step id seen before returns its recorded metrics."""
        req = parse_train_step(request)
        check_for_method(req)
        self._check_vocab(req)
        fingerprint = step_fingerprint(req)
        with self._lock:
            done = self._steps.get(req.step_id)
            if done is not None:
                if done.fingerprint != fingerprint:
                    raise EngineError(
                        f"step_id {req.step_id!r} was already trained with a different batch",
                        param="step_id",
                        status=409,
                    )
                return {**done.metrics, "duplicate": True}
            metrics = self._train(req)
            self._steps[req.step_id] = StepRecord(metrics=metrics, fingerprint=fingerprint)
            return {**metrics, "duplicate": False}

    def response_log_probs(
        self,
        tokens: list[int],
        response_length: int,
        temperature: float = 1.0,
        images: list[dict[str, str]] | None = None,
    ) -> list[float]:
        """log π_T(response token | prefix) under the current weights, one per response token."""
        with self._lock, torch.no_grad():
            ids = torch.tensor(tokens, device=self.device)
            vision = self._vision_inputs(ids, [d["data"] for d in images or []], "images")
            logits = tempered(self._response_logits(self.model, ids, response_length, vision), temperature)
            return _gather(torch.log_softmax(logits, dim=-1), ids[-response_length:]).tolist()

    def reset(self) -> dict[str, Any]:
        """Back to the base model: weights (or a fresh adapter), no optimizer state, no step ids.

        A training run that starts anew under a run id used before must not train on top of what another
        incarnation left in this process (the workflow asks for this on its first step).
        """
        with self._lock:
            self.model = self._base_policy()
            self._optimizer = None
            self._steps = {}
            self.step_count = 0
            self.rng = torch.Generator().manual_seed(self.seed)
            return {"step_count": 0, "steps_seen": 0, "lora": self._lora_info()}

    def info(self) -> dict[str, Any]:
        """Cheap snapshot for GET /trainer_info; reads without the lock so it answers during a step."""
        return {
            "model_dir": self.model_dir,
            "device": str(self.device),
            "step_count": self.step_count,
            "steps_seen": len(self._steps),
            "step_ids": list(self._steps),
            "lora": self._lora_info(),
            "vocab_size": self.vocab_size,
            "training": self._lock.locked(),
        }

    def save_checkpoint(self, path: str) -> dict[str, Any]:
        """Write a servable HF model folder plus training state at `path`, atomically (temp dir + rename)."""
        final = Path(path).resolve()
        if final == Path(self.model_dir):
            raise EngineError("refusing to overwrite the trainer's source model folder", param="path")
        with self._lock:
            try:
                # Never a half checkpoint at `path`: the old one moves aside whole, the new one in whole.
                with staged_dir(final) as tmp:
                    self._write_checkpoint(tmp)
                    publish_dir(tmp, final)
            except OSError as exc:
                raise EngineError(
                    f"cannot write checkpoint {path}: {exc}", param="path", status=500, type_="server_error"
                ) from exc
            return {
                "path": str(final),
                "step_count": self.step_count,
                "steps_seen": len(self._steps),
                "lora": self._lora_info(),
            }

    def load_checkpoint(self, path: str) -> dict[str, Any]:
        """Resume weights (or adapter), optimizer state, step counter, step ids seen and RNG from `path`."""
        root = Path(path)
        state_path = state_file(root)
        if not root.is_dir():
            raise EngineError(f"no checkpoint folder at {path}", param="path", status=404)
        if not state_path.is_file():
            raise EngineError(f"{path} is not a trainer checkpoint (no {STATE_DIR}/state.json)", param="path")
        state = json.loads(state_path.read_text())
        if state.get("format") != CHECKPOINT_FORMAT:
            raise EngineError(f"unsupported checkpoint format {state.get('format')!r}", param="path")
        self._check_checkpoint_state(state)
        with self._lock:
            # Read and check everything first, then apply: a bad file fails before the live state is touched.
            try:
                weights = self._read_weights(root)
                opt_file = root / STATE_DIR / "optimizer.pt"
                optimizer = None
                if opt_file.is_file():
                    optimizer = self._new_optimizer(OptimizerRequest())
                    optimizer.load_state_dict(
                        torch.load(opt_file, map_location=self.device, weights_only=True)
                    )
                rng = torch.load(root / STATE_DIR / "rng.pt", weights_only=True)["trainer"]
                steps = {
                    str(sid): StepRecord(metrics=dict(rec["metrics"]), fingerprint=str(rec["fingerprint"]))
                    for sid, rec in state["steps"].items()
                }
                step_count = int(state["step_count"])
            except EngineError:
                raise
            except (OSError, ValueError, KeyError, TypeError, RuntimeError) as exc:
                raise EngineError(f"cannot read checkpoint {path}: {exc}", param="path") from exc

            with torch.no_grad():
                if self.is_lora:
                    set_peft_model_state_dict(self.model, weights, adapter_name=self._adapter_name)
                else:
                    # In-place copy keeps the Parameter objects, so the optimizer still points at them.
                    self.model.load_state_dict(weights)
            self._optimizer = optimizer
            self._steps = steps
            self.step_count = step_count
            self.rng.set_state(rng)
            return {
                "path": str(root.resolve()),
                "step_count": self.step_count,
                "steps_seen": len(self._steps),
                "lora": self._lora_info(),
            }

    def _check_checkpoint_state(self, state: dict[str, Any]) -> None:
        """Refuse a checkpoint this trainer cannot resume (read before anything is loaded)."""
        if state.get("lora") != self._lora_info():
            raise EngineError(
                f"checkpoint LoRA settings {state.get('lora')} differ from the trainer's {self._lora_info()}",
                param="path",
                status=409,
            )

    def _trainable_parameters(self) -> list[torch.nn.Parameter]:
        return [p for p in self.model.parameters() if p.requires_grad]

    def _read_weights(self, root: Path) -> dict[str, Tensor]:
        """The checkpoint's trainable weights, checked by name and shape against the live model."""
        if self.is_lora:
            weights = load_file(
                str(root / ADAPTER_DIR / "adapter_model.safetensors"), device=str(self.device)
            )
            expected = get_peft_model_state_dict(self.model, adapter_name=self._adapter_name)
        else:
            weights = self._model_class().from_pretrained(str(root), dtype=torch.float32).state_dict()
            expected = self.model.state_dict()
        if weights.keys() != expected.keys():
            diff = sorted(set(weights) ^ set(expected))[:3]
            raise EngineError(f"checkpoint weights do not match the model (e.g. {diff})", param="path")
        for name, value in weights.items():
            if value.shape != expected[name].shape:
                raise EngineError(f"checkpoint weight {name} has shape {tuple(value.shape)}", param="path")
        return weights

    # ---- training ---------------------------------------------------------------------------------

    def _train(self, req: TrainStepRequest) -> dict[str, Any]:
        loss_cfg = req.loss
        hp = loss_cfg.hyper_params()
        optimizer = self._configure_optimizer(req.optimizer)
        optimizer.zero_grad(set_to_none=True)
        n = len(req.samples)
        # Sample weights (engine/TRAINING.md): the loss is Σ w_i·mean_t ℓ_it / Σ w_i. All weights 1 takes the
        # unweighted path, so such a step is bit-identical to one of a trainer without weights.
        weighted = any(sample.weight != 1.0 for sample in req.samples)
        denom = sum(sample.weight for sample in req.samples) if weighted else n
        totals: dict[str, float] = {}
        abs_diff = 0.0
        tokens = 0
        # One sample per forward/backward (gradient accumulation): memory stays that of the longest sample,
        # and compute_loss divides by the global batch size so the summed gradient is the full-batch one.
        for i, sample in enumerate(req.samples):
            batch = self._sample_tensors(sample)
            vision = self._vision_inputs(
                batch["ids"], [image.data for image in sample.images or []], f"samples[{i}].images"
            )
            # Every log-prob of a sample is of the distribution it was drawn from: log_softmax(logits / T),
            # as the engine reported its rollout log-probs (slime divides by --rollout-temperature alike).
            logits = tempered(
                self._response_logits(self.model, batch["ids"], sample.response_length, vision),
                sample.temperature,
            )
            log_probs_all = torch.log_softmax(logits, dim=-1)
            lp = _gather(log_probs_all, batch["targets"])[None]
            # π_old: the step makes exactly one optimizer update, after every sample's forward pass, so the
            # detached log-probs of this forward ARE the pre-update policy's (slime recomputes them the same
            # way before its single step); this saves a second forward pass. A sample flagged as too many
            # policy versions old uses its rollout log-probs instead.
            old = batch["rollout"] if loss_cfg.rollout_old(sample) else lp.detach()
            teacher = batch.get("teacher")
            if loss_cfg.method == "combine":
                teacher = teacher_or_old(teacher, old, batch["rollout"])
            if loss_cfg.method == "topk_distill":
                entropy = None  # compute_loss takes H over the top-K bins (losses.topk_entropy)
            elif hp.entropy_coef != 0.0:
                entropy = entropy_from_logits(logits)[None]
            else:
                with torch.no_grad():
                    entropy = entropy_from_logits(logits.detach())[None]
            ref = (
                self._ref_log_probs(
                    batch["ids"], sample.response_length, batch["targets"], sample.temperature, vision
                )
                if hp.kl_coef
                else None
            )
            student_topk = None
            if loss_cfg.method == "topk_distill":
                student_topk = log_probs_all.gather(-1, batch["topk_idx"])[None]
            loss, m = compute_loss(
                loss_cfg.method,
                log_probs=lp,
                old_log_probs=old,
                mask=batch["mask"],
                rewards=batch["reward"],
                teacher_log_probs=teacher,
                ref_log_probs=ref,
                entropy=entropy,
                student_topk_log_probs=student_topk,
                teacher_topk_log_probs=batch.get("topk_lp"),
                config=hp,
                batch_size=denom,
                weights=torch.tensor([sample.weight], device=self.device) if weighted else None,
            )
            loss.backward()
            for key, value in m.items():
                totals[key] = totals.get(key, 0.0) + float(value)
            abs_diff += float(sum_of_sample_mean((lp.detach() - batch["rollout"]).abs(), batch["mask"])) / n
            tokens += int(batch["mask"].sum())

        params = self._trainable_parameters()
        grad_norm = float(torch.nn.utils.clip_grad_norm_(params, GRAD_CLIP))
        if not math.isfinite(grad_norm):
            # A NaN/inf step would poison every weight; refuse it and leave the model as it was.
            optimizer.zero_grad(set_to_none=True)
            raise EngineError(
                f"non-finite gradient norm ({grad_norm}); step not applied", param="samples", status=422
            )
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        self.step_count += 1
        return {
            "step_id": req.step_id,
            "step": self.step_count,
            **totals,
            "grad_norm": grad_norm,
            "tokens": tokens,
            "samples": n,
            "train_rollout_logprob_abs_diff": abs_diff,
        }

    def _sample_tensors(self, sample: TrainSample) -> dict[str, Tensor]:
        dev = self.device
        r = sample.response_length
        ids = torch.tensor(sample.tokens, dtype=torch.long, device=dev)
        out = {
            "ids": ids,
            "targets": ids[-r:],
            "mask": torch.tensor(sample.loss_mask, dtype=torch.float32, device=dev)[None],
            "rollout": torch.tensor(sample.rollout_log_probs, dtype=torch.float32, device=dev)[None],
            "reward": torch.tensor([sample.reward], dtype=torch.float32, device=dev),
        }
        if sample.teacher_log_probs is not None:
            out["teacher"] = torch.tensor(sample.teacher_log_probs, dtype=torch.float32, device=dev)[None]
        if sample.teacher_topk_log_probs is not None and sample.teacher_topk_indices is not None:
            out["topk_lp"] = torch.tensor(sample.teacher_topk_log_probs, dtype=torch.float32, device=dev)[
                None
            ]
            out["topk_idx"] = torch.tensor(sample.teacher_topk_indices, dtype=torch.long, device=dev)
        return out

    def _response_logits(
        self,
        model: torch.nn.Module,
        ids: Tensor,
        response_length: int,
        vision: dict[str, Tensor] | None = None,
    ) -> Tensor:
        """Logits that predict the response: position prompt_len + t − 1 predicts token t; [R, V] fp32."""
        # The last token is never an input; logits_to_keep skips the prompt positions' vocabulary projection.
        if self.is_vision:  # 3-D positions and the images, as the engine computed them when serving
            vision = vision or {}
            return vision_logits(
                model,
                ids[None, :-1],
                pixel_values=vision.get("pixel_values"),
                image_grid_thw=vision.get("image_grid_thw"),
                logits_to_keep=response_length,
            )
        out = model(input_ids=ids[None, :-1], logits_to_keep=response_length, use_cache=False)
        return out.logits[0].float()

    def _vision_inputs(self, ids: Tensor, images_b64: list[str], param: str) -> dict[str, Tensor] | None:
        """Pixel values and grids of a sample's images, from their bytes by the model's processor.

        The ids are the sample's exact tokens: their `<|image_pad|>` count must be what the images make.
        """
        if not images_b64:
            # Pads without their pixels would train on a prompt the model never saw.
            if self.is_vision and bool((ids == self._processor.image_token_id).any()):
                raise EngineError(
                    f"{param}: the tokens hold image tokens but the sample carries no images", param=param
                )
            return None
        if not self.is_vision:
            reason = (
                "LoRA adapters of a vision-language model are not trained with images (full weights only)"
                if is_vision_model(self.model_dir)
                else f"model '{self.model_dir}' does not accept images (it is a text-only model)"
            )
            raise EngineError(f"{param}: {reason}", param=param)
        try:
            pictures = [decode_image_bytes(data) for data in images_b64]
            inputs = inputs_for_ids(self._processor, ids.tolist(), pictures)
        except ImageError as exc:
            raise EngineError(f"{param}: {exc}", param=param) from None
        return {
            "pixel_values": inputs.pixel_values.to(self.device),
            "image_grid_thw": inputs.image_grid_thw.to(self.device),
        }

    @torch.no_grad()
    def _ref_log_probs(
        self,
        ids: Tensor,
        response_length: int,
        targets: Tensor,
        temperature: float = 1.0,
        vision: dict[str, Tensor] | None = None,
    ) -> Tensor:
        """log π_ref at the sample's temperature: the adapter switched off (LoRA), or the frozen base."""
        if self.is_lora:
            assert isinstance(self.model, PeftModel)
            with self.model.disable_adapter():
                logits = self._response_logits(self.model, ids, response_length, vision)
        else:
            if self._ref_model is None:
                # Loaded from model_dir (not copied from the live model) so it is the base even after resumes.
                self._ref_model = self._load_base().to(self.device).eval().requires_grad_(False)
            logits = self._response_logits(self._ref_model, ids, response_length, vision)
        return _gather(torch.log_softmax(tempered(logits, temperature), dim=-1), targets)[None]

    def _new_optimizer(self, cfg: OptimizerRequest) -> torch.optim.AdamW:
        decay, no_decay = [], []
        for p in self._trainable_parameters():
            # Megatron's rule (slime): no weight decay on biases and norm scales (1-D parameters).
            (decay if p.ndim >= 2 else no_decay).append(p)
        groups = [{"params": decay, "weight_decay": cfg.weight_decay, "name": "decay"}]
        if no_decay:
            groups.append({"params": no_decay, "weight_decay": 0.0, "name": "no_decay"})
        return torch.optim.AdamW(groups, lr=cfg.lr, betas=cfg.betas)

    def _configure_optimizer(self, cfg: OptimizerRequest) -> torch.optim.AdamW:
        """Create AdamW on first use; later requests only change its hyper-parameters (state is kept)."""
        if self._optimizer is None:
            self._optimizer = self._new_optimizer(cfg)
        for group in self._optimizer.param_groups:
            group["lr"] = cfg.lr
            group["betas"] = tuple(cfg.betas)
            if group.get("name") == "decay":
                group["weight_decay"] = cfg.weight_decay
        return self._optimizer

    def _check_vocab(self, req: TrainStepRequest) -> None:
        """Ids the embedding (or the top-K gather) cannot index; negative ids are refused by the schema."""
        for i, sample in enumerate(req.samples):
            for name in ("tokens", "teacher_topk_indices"):
                values = getattr(sample, name)
                if values is None:
                    continue
                rows = [values] if name == "tokens" else values
                if max(max(row) for row in rows) >= self.vocab_size:
                    bad = next(v for row in rows for v in row if v >= self.vocab_size)
                    raise EngineError(
                        f"samples[{i}].{name}: token id {bad} is outside the model's vocabulary "
                        f"(size {self.vocab_size})",
                        param=f"samples[{i}].{name}",
                    )

    # ---- checkpoint helpers -----------------------------------------------------------------------

    def _write_checkpoint(self, out: Path) -> None:
        if self.is_lora:
            assert isinstance(self.model, PeftModel)
            # Merge into a copy: merge_adapter()/unmerge_adapter() on the live model would drift its weights.
            merged = copy.deepcopy(self.model).merge_and_unload()
            merged.save_pretrained(str(out))
            del merged
            self.model.save_pretrained(str(out / ADAPTER_DIR))
        else:
            self.model.save_pretrained(str(out))
        for src in Path(self.model_dir).iterdir():
            if (
                src.is_file()
                and not src.name.startswith(".")
                and src.name not in _OWN_FILES
                and not src.name.endswith(_WEIGHT_SUFFIXES)
            ):
                shutil.copy2(src, out / src.name)
        self._write_training_state(out)

    def _write_training_state(self, out: Path, **extra: Any) -> None:
        """`trainer_state/`: optimizer, RNG and state.json (format, lineage of step ids, `extra` fields)."""
        state_dir = out / STATE_DIR
        state_dir.mkdir()
        if self._optimizer is not None:
            torch.save(self._optimizer.state_dict(), state_dir / "optimizer.pt")
        torch.save({"trainer": self.rng.get_state()}, state_dir / "rng.pt")
        state = {
            "format": CHECKPOINT_FORMAT,
            "saved_at": time.time(),
            "source_model_dir": self.model_dir,
            "lora": self._lora_info(),
            "seed": self.seed,
            "step_count": self.step_count,
            # Lineage: every step id that shaped these weights, with its metrics.
            "steps": {
                sid: {"metrics": rec.metrics, "fingerprint": rec.fingerprint}
                for sid, rec in self._steps.items()
            },
            **extra,
        }
        write_state(out, state)

    def _base_policy(self) -> PreTrainedModel | PeftModel:
        """The source model (with a freshly initialised adapter for LoRA), on the device, in eval mode."""
        # fork_rng: seeding LoRA's random init must not reset the RNG of a server sharing this process.
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(self.seed)
            model = self._load_base()
            if self.is_lora:
                with warnings.catch_warnings():
                    # peft calls a transformers API deprecated in v5: their warning, nothing to act on here.
                    warnings.filterwarnings(
                        "ignore", message=".*is_gradient_checkpointing.*", category=FutureWarning
                    )
                    model = get_peft_model(model, self._lora_config())
        # eval(): no dropout, so a step is a deterministic function of weights and batch and the log-probs
        # of the gradient pass are exactly the pre-update policy's (π_old, see _train).
        return model.to(self.device).eval()

    def _load_base(self) -> PreTrainedModel:
        # fp32 master weights whatever the source dtype: Adam updates of 1e-5 vanish in bf16.
        return self._model_class().from_pretrained(self.model_dir, dtype=torch.float32)

    def _model_class(self) -> Any:
        return AutoModelForImageTextToText if self.is_vision else AutoModelForCausalLM

    def _lora_config(self) -> LoraConfig:
        return LoraConfig(
            r=self.lora_rank,
            lora_alpha=self.lora_alpha,
            lora_dropout=0.0,
            target_modules=self.lora_target_modules,
            bias="none",
            task_type="CAUSAL_LM",
        )

    def _lora_info(self) -> dict[str, Any] | None:
        if not self.is_lora:
            return None
        return {"rank": self.lora_rank, "alpha": self.lora_alpha, "target_modules": self.lora_target_modules}


def _gather(log_probs: Tensor, targets: Tensor) -> Tensor:
    """[R, V] log-probs, [R] token ids -> [R] log-prob of each token."""
    return log_probs.gather(-1, targets[:, None]).squeeze(-1)

"""Per-tenant LoRA trainers over one shared base model: `/adapters/{name}/...` (engine/TRAINING.md).

Design: ONE PEFT model holds the frozen base weights once and every tenant's adapter as a named PEFT adapter
(`add_adapter`). A step of adapter `a` makes `a` the active adapter (`set_adapter`, which also leaves only
`a`'s LoRA parameters trainable), runs the ordinary Trainer step, and its AdamW optimizer holds `a`'s
parameters only, so neither the base nor another adapter can change. All adapters' calls are serialised by
one lock, since the active adapter is a property of the shared model. Chosen over one model per adapter
because the base dominates memory (an adapter of rank 8 is well under 1% of a 7B base) and over swapping
adapter weights in and out of a single slot because PEFT already keeps each adapter's tensors apart and
`disable_adapter()` gives the reference policy (the base) for the KL term exactly as in trainer.py.

Inside PEFT an adapter is not called by its tenant name but by a fixed-width slot name (`tenant000003`):
PEFT finds an adapter's tensors by substring match on the name (`get_peft_model_state_dict`), so a tenant
called `a` or `lora` would pick up other tensors; no fixed-width slot name is part of another key.

Each adapter is a `Trainer` (same step semantics: idempotent step ids, metrics, non-finite refusal) whose
model is the shared one; only its checkpoint differs: `adapter/` in PEFT's save_pretrained format plus
`trainer_state/`, no merged model.
"""

from __future__ import annotations

import copy
import re
import threading
import warnings
from pathlib import Path
from types import TracebackType
from typing import Any

import torch
from peft import LoraConfig, PeftModel, get_peft_model, get_peft_model_state_dict, set_peft_model_state_dict
from peft.tuners.tuners_utils import BaseTunerLayer
from safetensors.torch import save_file
from torch import Tensor
from transformers import AutoConfig, AutoModelForCausalLM

from .errors import EngineError
from .trainer import ADAPTER_DIR, DEFAULT_LORA_TARGETS, Trainer

ADAPTER_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@-]{0,63}")
CHECKPOINT_KIND = "adapter"


def check_adapter_name(name: str) -> str:
    if not ADAPTER_NAME.fullmatch(name):
        raise EngineError(
            f"adapter name {name!r} must match ^[A-Za-z0-9][A-Za-z0-9._@-]{{0,63}}$", param="name"
        )
    return name


class SharedLoraBase:
    """The base model, loaded once on first use, carrying one LoRA adapter per name; thread-safe."""

    def __init__(
        self,
        model_dir: str,
        device: str = "cpu",
        lora_rank: int = 8,
        lora_alpha: int | None = None,
        lora_target_modules: list[str] | None = None,
        seed: int = 0,
    ) -> None:
        if lora_rank < 1:
            raise ValueError("adapter lora_rank must be >= 1")
        self.model_dir = str(Path(model_dir).resolve())
        self.device = torch.device(device)
        self.seed = seed
        self.lora_rank = lora_rank
        self.lora_alpha = lora_alpha if lora_alpha is not None else 2 * lora_rank
        self.lora_target_modules = list(lora_target_modules or DEFAULT_LORA_TARGETS)
        # Held for every call that uses the model (steps, log-probs, checkpoints, adding an adapter).
        self.lock = threading.Lock()
        self.holder: str | None = None
        self.model: PeftModel | None = None
        self.vocab_size = int(AutoConfig.from_pretrained(self.model_dir).get_text_config().vocab_size)
        self._init_state: dict[str, Tensor] | None = None
        self._trainers: dict[str, AdapterTrainer] = {}
        self._registry = threading.Lock()

    def lora_info(self) -> dict[str, Any]:
        return {"rank": self.lora_rank, "alpha": self.lora_alpha, "target_modules": self.lora_target_modules}

    def lora_config(self) -> LoraConfig:
        return LoraConfig(
            r=self.lora_rank,
            lora_alpha=self.lora_alpha,
            lora_dropout=0.0,
            target_modules=self.lora_target_modules,
            bias="none",
            task_type="CAUSAL_LM",
        )

    def trainer(self, name: str) -> AdapterTrainer:
        """The adapter's trainer, created (with a freshly initialised adapter) on its first use."""
        check_adapter_name(name)
        with self._registry:
            found = self._trainers.get(name)
            if found is None:
                slot = f"tenant{len(self._trainers):06d}"
                with self.lock:
                    self._add_adapter(slot)
                found = self._trainers[name] = AdapterTrainer(self, name, slot)
            return found

    def info(self, name: str) -> dict[str, Any]:
        """trainer_info without creating the adapter when it was never used."""
        check_adapter_name(name)
        found = self._trainers.get(name)
        if found is not None:
            return found.info()
        return {
            "model_dir": self.model_dir,
            "device": str(self.device),
            "step_count": 0,
            "steps_seen": 0,
            "step_ids": [],
            "lora": self.lora_info(),
            "vocab_size": self.vocab_size,
            "training": False,
            "adapter": name,
        }

    def adapter_names(self) -> list[str]:
        return list(self._trainers)

    def activate(self, slot: str) -> None:
        """Make `slot` the adapter of the forward passes and the only trainable parameters (lock held)."""
        assert self.model is not None
        if self.holder != slot or self.model.active_adapter != slot:
            self.model.set_adapter(slot)
        self.holder = slot

    def reinit(self, slot: str) -> None:
        """Back to the seeded initial adapter weights (B = 0: the adapter is the base); lock held."""
        assert self.model is not None and self._init_state is not None
        with torch.no_grad():
            set_peft_model_state_dict(self.model, self._init_state, adapter_name=slot)

    def adapter_parameters(self, slot: str) -> list[torch.nn.Parameter]:
        """The adapter's LoRA parameters, in module order (what its optimizer and clipping see)."""
        assert self.model is not None
        params: list[torch.nn.Parameter] = []
        for module in self.model.modules():
            if isinstance(module, BaseTunerLayer):
                for layer_name in module.adapter_layer_names:
                    layers = getattr(module, layer_name)
                    if slot in layers:
                        item = layers[slot]
                        params.extend(item.parameters() if isinstance(item, torch.nn.Module) else [item])
        return params

    def _add_adapter(self, slot: str) -> None:
        # Every adapter starts from the same seeded initialisation; fork_rng keeps the seeding from
        # resetting the RNG of a server sharing this process.
        with torch.random.fork_rng(devices=[]), warnings.catch_warnings():
            # peft calls a transformers API deprecated in v5: their warning, nothing to act on here.
            warnings.filterwarnings("ignore", message=".*is_gradient_checkpointing.*", category=FutureWarning)
            torch.manual_seed(self.seed)
            if self.model is None:
                # fp32 master weights whatever the source dtype, as trainer.py.
                base = AutoModelForCausalLM.from_pretrained(self.model_dir, dtype=torch.float32)
                self.vocab_size = int(base.get_input_embeddings().num_embeddings)
                self.model = (
                    get_peft_model(base, self.lora_config(), adapter_name=slot).to(self.device).eval()
                )
                self._init_state = {
                    k: v.detach().clone()
                    for k, v in get_peft_model_state_dict(self.model, adapter_name=slot).items()
                }
            else:
                self.model.add_adapter(slot, self.lora_config())
                self.model.to(self.device).eval()
                self.reinit(slot)
        self.holder = None


class _AdapterLock:
    """The shared lock, entered as one adapter: acquiring it activates that adapter on the shared model."""

    def __init__(self, shared: SharedLoraBase, slot: str) -> None:
        self._shared = shared
        self._slot = slot

    def __enter__(self) -> _AdapterLock:
        self._shared.lock.acquire()
        try:
            self._shared.activate(self._slot)
        except BaseException:
            self._shared.lock.release()
            raise
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._shared.lock.release()

    def locked(self) -> bool:
        return self._shared.lock.locked() and self._shared.holder == self._slot


class AdapterTrainer(Trainer):
    """A Trainer of one named adapter of a SharedLoraBase (created by `SharedLoraBase.trainer`)."""

    def __init__(self, shared: SharedLoraBase, name: str, slot: str) -> None:
        # No Trainer.__init__: the model is the shared one, loaded by SharedLoraBase.
        self.shared = shared
        self.name = name
        self._adapter_name = slot
        self.model_dir = shared.model_dir
        self.device = shared.device
        self.seed = shared.seed
        self.lora_rank = shared.lora_rank
        self.lora_alpha = shared.lora_alpha
        self.lora_target_modules = shared.lora_target_modules
        self._lock = _AdapterLock(shared, slot)  # type: ignore[assignment]
        self.vocab_size = shared.vocab_size
        self._optimizer = None
        self._ref_model = None
        self._steps = {}
        self.rng = torch.Generator().manual_seed(shared.seed)
        self.step_count = 0

    @property  # type: ignore[override]
    def model(self) -> PeftModel:
        assert self.shared.model is not None
        return self.shared.model

    def info(self) -> dict[str, Any]:
        return {**super().info(), "adapter": self.name}

    def reset(self) -> dict[str, Any]:
        """A fresh adapter (the seeded initial weights), no optimizer state, no step ids; others untouched."""
        with self._lock:
            self.shared.reinit(self._adapter_name)
            self._optimizer = None
            self._steps = {}
            self.step_count = 0
            self.rng = torch.Generator().manual_seed(self.seed)
            return {"step_count": 0, "steps_seen": 0, "lora": self._lora_info()}

    def _trainable_parameters(self) -> list[torch.nn.Parameter]:
        return self.shared.adapter_parameters(self._adapter_name)

    def _check_checkpoint_state(self, state: dict[str, Any]) -> None:
        if state.get("kind") != CHECKPOINT_KIND:
            raise EngineError(
                "not an adapter checkpoint (a checkpoint of the top-level trainer, or of another tool); "
                "an adapter loads only what /adapters/{name}/save_checkpoint wrote",
                param="path",
            )
        if state.get("lora") != self._lora_info():
            raise EngineError(
                f"checkpoint LoRA settings {state.get('lora')} differ from the adapters' {self._lora_info()}",
                param="path",
            )

    def _write_checkpoint(self, out: Path) -> None:
        """`adapter/` (PEFT save_pretrained layout: adapter_config.json + adapter_model.safetensors) and the
        training state; no merged model and no tokenizer files (the base folder has them)."""
        adapter_dir = out / ADAPTER_DIR
        adapter_dir.mkdir(parents=True)
        weights = get_peft_model_state_dict(self.model, adapter_name=self._adapter_name)
        save_file(
            {k: v.detach().contiguous().cpu() for k, v in weights.items()},
            str(adapter_dir / "adapter_model.safetensors"),
            metadata={"format": "pt"},
        )
        config = copy.deepcopy(self.model.peft_config[self._adapter_name])
        config.base_model_name_or_path = self.model_dir
        config.inference_mode = True
        config.save_pretrained(str(adapter_dir))
        self._write_training_state(out, kind=CHECKPOINT_KIND, adapter=self.name)

"""What the HTTP layer needs from a served policy; `ModelRunner` (torch) and `TinkerRunner` provide it."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import Any, Protocol

from .generation_events import Event, GenerationRequest
from .step_gate import StepGate


class ServedPolicy(Protocol):
    served_model_name: str
    model_path: str
    weight_version: str
    vocab_size: int
    context_length: int
    gate: StepGate  # pause state and the count of running requests

    # tokenizer
    def encode(self, text: str, *, add_special_tokens: bool = False) -> list[int]: ...
    def decode(self, ids: list[int], *, skip_special_tokens: bool = False) -> str: ...
    def token_text(self, token_id: int) -> str: ...
    def token_bytes(self, token_id: int) -> list[int]: ...
    def apply_chat_template(
        self,
        messages: list[dict[str, Any]],
        *,
        tools: list[dict[str, Any]] | None,
        add_generation_prompt: bool,
        template_kwargs: dict[str, Any],
    ) -> str: ...

    # generation
    def validate(self, req: GenerationRequest) -> GenerationRequest: ...
    def generate(self, req: GenerationRequest) -> AsyncGenerator[Event, None]: ...

    # control
    def pause(self, mode: str) -> int: ...
    def resume(self) -> None: ...
    def abort(self, rid: str | None) -> int: ...
    def flush_cache(self) -> None: ...
    def update_weights_from_disk(
        self, model_path: str, weight_version: str | None
    ) -> tuple[bool, str, int]: ...
    def info(self) -> dict[str, Any]: ...

    # LoRA adapters served beside the base (name -> {"path", "weight_version"}); a runner without them
    # refuses loads with a message.
    @property
    def lora_adapters(self) -> dict[str, dict[str, str]]: ...
    def load_lora_adapter(self, name: str, path: str, weight_version: str | None) -> tuple[bool, str]: ...
    def unload_lora_adapter(self, name: str) -> tuple[bool, str]: ...
    @property
    def lora_used(self) -> bool:
        """Whether an adapter was ever loaded (from then on unknown model names are 404s)."""
        ...

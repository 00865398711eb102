"""Replies sampled from the trainer's own weights, for the publish gate (docs/evaluation.md).

A version is judged before it is served, so its replies cannot come from the serving engine: they come from
the trainer's current weights (after its last step), from the base model, or from a checkpoint folder loaded
into a scratch copy (the live training state is never touched). Prompts are rendered with the model's chat
template as serving renders them (normalised messages, generation prompt, no extra special tokens), and
sampling draws from a generator seeded by the request, so the same request gives the same replies.
"""

from __future__ import annotations

import threading
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Annotated, Any, Literal

import torch
from peft import PeftModel
from pydantic import BaseModel, ConfigDict, Field
from transformers import AutoModelForCausalLM, AutoTokenizer, PreTrainedTokenizerBase

from .chat import normalize_messages
from .errors import EngineError
from .trainer import ADAPTER_DIR, Trainer


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


class CheckpointSource(_Strict):
    checkpoint: str = Field(min_length=1)


class ChatMessage(BaseModel):
    # Messages as clients send them (tool calls, names, ...): only the role is required here.
    model_config = ConfigDict(extra="allow")
    role: Literal["system", "developer", "user", "assistant", "tool"]
    content: Any = None


Conversation = Annotated[list[ChatMessage], Field(min_length=1)]


class SampleRequest(_Strict):
    """`samples_per_conversation` replies for each conversation, from `source`'s weights."""

    conversations: list[Conversation] = Field(min_length=1, max_length=1000)
    max_tokens: int = Field(64, ge=1, le=4096)
    temperature: float = Field(1.0, ge=0.0, le=10.0)
    seed: int = Field(0, ge=0)
    samples_per_conversation: int = Field(1, ge=1, le=64)
    source: Literal["current", "base"] | CheckpointSource = "current"


_tokenizers: dict[str, PreTrainedTokenizerBase] = {}
_tokenizers_lock = threading.Lock()


def _tokenizer(model_dir: str) -> PreTrainedTokenizerBase:
    with _tokenizers_lock:
        if model_dir not in _tokenizers:
            _tokenizers[model_dir] = AutoTokenizer.from_pretrained(model_dir)
        return _tokenizers[model_dir]


def _scratch_model(trainer: Trainer, source: Literal["base"] | CheckpointSource) -> torch.nn.Module:
    """A model of its own for `source`: the base, or a checkpoint this trainer wrote, never the live one."""
    if source == "base":
        return trainer._load_base().to(trainer.device).eval()
    root = Path(source.checkpoint)
    try:
        if not trainer.is_lora:
            model = AutoModelForCausalLM.from_pretrained(str(root), dtype=torch.float32)
        else:
            model = PeftModel.from_pretrained(trainer._load_base(), str(root / ADAPTER_DIR))
    except (OSError, ValueError) as exc:
        raise EngineError(
            f"cannot load checkpoint {source.checkpoint}: {exc}", param="source.checkpoint", status=404
        ) from exc
    return model.to(trainer.device).eval()


def sample_replies(trainer: Trainer, request: SampleRequest) -> dict[str, list[list[str]]]:
    """`{replies: [[text, ...] per conversation]}`; `request.source`'s checkpoint path is already checked."""
    tokenizer = _tokenizer(trainer.model_dir)
    prompts: list[list[int]] = []
    for i, conversation in enumerate(request.conversations):
        messages = normalize_messages([m.model_dump(exclude_none=True) for m in conversation])
        try:
            text = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        except Exception as exc:  # jinja raises for inputs the template rejects
            raise EngineError(
                f"the chat template could not render conversation {i}: {exc}", param=f"conversations[{i}]"
            ) from None
        prompts.append(list(tokenizer.encode(str(text), add_special_tokens=False)))

    if request.source == "current":
        model: torch.nn.Module = trainer.model
        # The trainer's lock: no step changes the weights mid-reply (an adapter's lock also activates it).
        guard: AbstractContextManager[Any] = trainer._lock
    else:
        model = _scratch_model(trainer, request.source)
        guard = nullcontext()
    eos = tokenizer.eos_token_id
    generator = torch.Generator().manual_seed(request.seed)
    replies: list[list[str]] = []
    with guard, torch.no_grad():
        for prompt in prompts:
            texts = []
            for _ in range(request.samples_per_conversation):
                ids = _generate(model, prompt, request, eos, generator, trainer.device)
                texts.append(tokenizer.decode(ids, skip_special_tokens=True))
            replies.append(texts)
    return {"replies": replies}


def _generate(
    model: torch.nn.Module,
    prompt: list[int],
    request: SampleRequest,
    eos: int | None,
    generator: torch.Generator,
    device: torch.device,
) -> list[int]:
    """Token by token, greedy at temperature 0; the draw happens on the CPU generator.

    Without a KV cache (whose API moves between transformers releases): the gate's replies are short.
    """
    out: list[int] = []
    for _ in range(request.max_tokens):
        ids = torch.tensor([prompt + out], device=device)
        logits = model(input_ids=ids, use_cache=False, logits_to_keep=1).logits[0, -1].float().cpu()
        if request.temperature == 0:
            token = int(torch.argmax(logits))
        else:
            probs = torch.softmax(logits / request.temperature, dim=-1)
            token = int(torch.multinomial(probs, 1, generator=generator))
        if token == eos:
            break
        out.append(token)
    return out

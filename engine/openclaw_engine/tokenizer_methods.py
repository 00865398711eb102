"""The tokenizer half of a served policy: encode, decode, token bytes and the chat template, thread-safe.

Shared by the local `ModelRunner` and the Tinker-backed runner, so both render prompts and report tokens
exactly alike.
"""

from __future__ import annotations

import threading
from typing import Any

from tokenizers import decoders
from transformers import PreTrainedTokenizerBase


class TokenizerMethods:
    tokenizer: PreTrainedTokenizerBase

    def _init_tokenizer(self, tokenizer: PreTrainedTokenizerBase) -> None:
        # The Rust tokenizer is not safe for concurrent use (encode mutates padding state).
        self._tok_lock = threading.Lock()
        self.tokenizer = tokenizer
        backend = getattr(self.tokenizer, "backend_tokenizer", None)
        self._byte_level = backend is not None and isinstance(backend.decoder, decoders.ByteLevel)
        self._added_ids = frozenset(self.tokenizer.get_added_vocab().values())
        # One token's text and bytes never change for a tokenizer, and each costs a trip through its decode
        # (about 9 µs for both here): every sampled token asks for both when log-probs are returned. One entry
        # at most per token of the vocabulary.
        self._token_texts: dict[int, str] = {}
        self._token_bytes: dict[int, tuple[int, ...]] = {}

    def encode(self, text: str, *, add_special_tokens: bool = False) -> list[int]:
        with self._tok_lock:
            return list(self.tokenizer.encode(text, add_special_tokens=add_special_tokens))

    def decode(self, ids: list[int], *, skip_special_tokens: bool = False) -> str:
        with self._tok_lock:
            return self.tokenizer.decode(
                ids, skip_special_tokens=skip_special_tokens, clean_up_tokenization_spaces=False
            )

    def token_text(self, token_id: int) -> str:
        text = self._token_texts.get(token_id)
        if text is None:
            text = self.decode([token_id], skip_special_tokens=False)
            self._token_texts[token_id] = text
        return text

    def token_bytes(self, token_id: int) -> list[int]:
        """The raw bytes a token stands for (byte-level BPE pieces may be partial UTF-8)."""
        raw = self._token_bytes.get(token_id)
        if raw is None:
            raw = tuple(self._raw_token_bytes(token_id))
            self._token_bytes[token_id] = raw
        return list(raw)

    def _raw_token_bytes(self, token_id: int) -> bytes:
        if self._byte_level and token_id not in self._added_ids:
            with self._tok_lock:
                piece = self.tokenizer.convert_ids_to_tokens(token_id)
            raw = _byte_level_bytes(piece) if isinstance(piece, str) else None
            if raw is not None:
                return raw
        return self.token_text(token_id).encode("utf-8")

    def apply_chat_template(
        self,
        messages: list[dict[str, Any]],
        *,
        tools: list[dict[str, Any]] | None,
        add_generation_prompt: bool,
        template_kwargs: dict[str, Any],
    ) -> str:
        with self._tok_lock:
            rendered = self.tokenizer.apply_chat_template(
                messages,
                tools=tools,
                tokenize=False,
                add_generation_prompt=add_generation_prompt,
                **template_kwargs,
            )
        return str(rendered)


_BYTE_DECODER: dict[str, int] | None = None


def _byte_level_bytes(piece: str) -> bytes | None:
    """Map a byte-level BPE piece back to its bytes; None if the piece is not byte-level."""
    global _BYTE_DECODER
    if _BYTE_DECODER is None:
        from .tiny_tokenizer import bytes_to_unicode

        _BYTE_DECODER = {c: b for b, c in bytes_to_unicode().items()}
    try:
        return bytes(_BYTE_DECODER[c] for c in piece)
    except KeyError:
        return None

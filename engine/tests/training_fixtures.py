"""Tiny random Qwen3 model folders for the training tests (no tokenizer needed by the Trainer)."""

from __future__ import annotations

import json
from pathlib import Path

import torch
from transformers import Qwen3Config, Qwen3ForCausalLM

VOCAB = 300


def make_tiny_model_dir(path: Path, seed: int = 0, init_range: float = 0.02) -> Path:
    """Write a 2-layer, 64-wide Qwen3 (vocab 300, tied embeddings) plus stand-in tokenizer/template files."""
    config = Qwen3Config(
        vocab_size=VOCAB,
        hidden_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=16,
        intermediate_size=128,
        tie_word_embeddings=True,
        initializer_range=init_range,
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = Qwen3ForCausalLM(config)
    path.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(str(path))
    # Stand-ins for the files a real model folder carries; the checkpoint must copy them along.
    (path / "tokenizer_config.json").write_text(json.dumps({"model_max_length": 512}))
    (path / "chat_template.jinja").write_text("{% for m in messages %}{{ m.content }}{% endfor %}")
    return path

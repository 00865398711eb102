"""A tiny, randomly initialised Qwen3-architecture model folder: the embedded default and the tests' model.

No weights are downloaded: the model is built from a config and the tokenizer is a byte-level BPE trained in
code (`tiny_tokenizer.py`), so the folder is a normal Hugging Face checkpoint that `AutoModelForCausalLM` /
`AutoTokenizer` and vLLM load unchanged. Its shape is chosen for what must run on it: head_dim 64 (vLLM's CPU
attention supports 32/64/128, not 16), a 131072-token context (OpenClaw's prompt is ~17k tokens with this
tokenizer), and few enough parameters that tests train it in milliseconds on two cores.
"""

from __future__ import annotations

import json
from pathlib import Path

import tokenizers
import torch
import transformers
from transformers import GenerationConfig, Qwen3Config, Qwen3ForCausalLM
from transformers.utils import logging as hf_logging

from .tiny_tokenizer import CONTEXT_LENGTH, train_tokenizer, training_corpus

HIDDEN_SIZE = 256
NUM_LAYERS = 2
# Attention head sizes vLLM's CPU attention accepts (16 is refused at the first request).
VLLM_HEAD_DIMS: tuple[int, ...] = (32, 64, 128)
DEFAULT_HEAD_DIM = 64
# Bumped when the folder's shape changes, so a folder an older version wrote is recognised.
TINY_MODEL_FORMAT = 2


def make_tiny_model(out_dir: str | Path, *, seed: int = 0, head_dim: int = DEFAULT_HEAD_DIM) -> Path:
    """Write a complete model folder (config, safetensors, tokenizer, chat template, generation config)."""
    if head_dim not in VLLM_HEAD_DIMS:
        raise ValueError(f"head_dim must be one of {VLLM_HEAD_DIMS} (vLLM's CPU attention), not {head_dim}")
    hf_logging.disable_progress_bar()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    corpus = training_corpus()
    tokenizer = train_tokenizer(corpus)
    eos_ids = [
        tokenizer.convert_tokens_to_ids("<|im_end|>"),
        tokenizer.convert_tokens_to_ids("<|endoftext|>"),
    ]

    config = Qwen3Config(
        vocab_size=len(tokenizer),  # exactly the tokenizer: every sampled id decodes to a real token
        hidden_size=HIDDEN_SIZE,
        intermediate_size=2 * HIDDEN_SIZE,
        num_hidden_layers=NUM_LAYERS,
        num_attention_heads=HIDDEN_SIZE // head_dim,
        num_key_value_heads=HIDDEN_SIZE // head_dim // 2,
        head_dim=head_dim,
        max_position_embeddings=CONTEXT_LENGTH,
        rope_parameters={"rope_type": "default", "rope_theta": 1_000_000.0},  # Qwen3's base for long contexts
        tie_word_embeddings=True,
        # Wider than the default 0.02 so the random model's distributions are not near-uniform.
        initializer_range=0.1,
        bos_token_id=None,
        eos_token_id=eos_ids[0],
        pad_token_id=eos_ids[1],
        architectures=["Qwen3ForCausalLM"],
    )
    # Seed only for construction, from a private generator state, so the folder is a pure function of seed.
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = Qwen3ForCausalLM(config).to(torch.float32)
    model.generation_config = GenerationConfig(
        eos_token_id=eos_ids, pad_token_id=eos_ids[1], bos_token_id=None, do_sample=True
    )
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    provenance = {
        "format": TINY_MODEL_FORMAT,
        "seed": seed,
        "head_dim": head_dim,
        "tokenizer_corpus": corpus.description,
        "tokenizer_corpus_sha256": corpus.sha256,
        "transformers": transformers.__version__,
        "tokenizers": tokenizers.__version__,
    }
    (out / "openclaw_tiny_model.json").write_text(json.dumps(provenance, indent=2) + "\n")
    return out

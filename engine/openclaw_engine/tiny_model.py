"""A tiny, randomly initialised Qwen3-architecture model folder for tests and smoke runs.

No weights are downloaded: the model is built from a config and the tokenizer is built in code
(byte-level BPE over the 256 byte symbols plus Qwen's chat special tokens), so the folder is a
normal Hugging Face checkpoint that `AutoModelForCausalLM` / `AutoTokenizer` load unchanged.
"""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import torch
from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers
from transformers import GenerationConfig, PreTrainedTokenizerFast, Qwen3Config, Qwen3ForCausalLM
from transformers.utils import logging as hf_logging

# Control tokens: `special=True` ones are stripped by skip_special_tokens; the markup tokens stay
# visible in decoded text (as in Qwen3) so reasoning / tool-call parsers can see them.
SPECIAL_TOKENS: tuple[str, ...] = ("<|endoftext|>", "<|im_start|>", "<|im_end|>")
MARKUP_TOKENS: tuple[str, ...] = (
    "<think>",
    "</think>",
    "<tool_call>",
    "</tool_call>",
    "<tool_response>",
    "</tool_response>",
)

# A handful of English merges so the BPE is a real BPE (multi-byte tokens), not just bytes.
_MERGES: tuple[tuple[str, str], ...] = (
    ("Ġ", "t"),
    ("h", "e"),
    ("Ġt", "he"),
    ("i", "n"),
    ("Ġ", "a"),
    ("e", "r"),
    ("o", "n"),
    ("Ġ", "s"),
    ("r", "e"),
    ("a", "t"),
    ("Ċ", "Ċ"),
    ("Ġ", "Ġ"),
)


def bytes_to_unicode() -> dict[int, str]:
    """GPT-2's reversible byte -> printable-character map used by the ByteLevel pre-tokenizer."""
    printable = (
        list(range(ord("!"), ord("~") + 1))
        + list(range(ord("¡"), ord("¬") + 1))
        + list(range(ord("®"), ord("ÿ") + 1))
    )
    chars = printable[:]
    extra = 0
    for b in range(256):
        if b not in printable:
            printable.append(b)
            chars.append(256 + extra)
            extra += 1
    return {b: chr(c) for b, c in zip(printable, chars, strict=True)}


def build_tokenizer() -> PreTrainedTokenizerFast:
    byte_chars = bytes_to_unicode()
    vocab: dict[str, int] = {byte_chars[b]: b for b in range(256)}  # id == byte value
    for left, right in _MERGES:
        vocab[left + right] = len(vocab)
    core = Tokenizer(models.BPE(vocab=vocab, merges=list(_MERGES)))
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    core.decoder = decoders.ByteLevel()
    core.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in SPECIAL_TOKENS])
    core.add_tokens([AddedToken(t, special=False, normalized=False) for t in MARKUP_TOKENS])

    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=core,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        clean_up_tokenization_spaces=False,
        model_max_length=4096,
    )
    tokenizer.chat_template = (resources.files("openclaw_engine") / "chat_template.jinja").read_text()
    return tokenizer


# Attention head sizes vLLM's CPU attention accepts (16, the smallest, is refused at the first request).
VLLM_HEAD_DIMS: tuple[int, ...] = (32, 64, 128)


def make_tiny_model(out_dir: str | Path, *, seed: int = 0, head_dim: int = 16) -> Path:
    """Write a complete model folder (config, safetensors, tokenizer, chat template, generation config).

    `head_dim` 16 keeps the reference engine's tests fast; 64 gives a model vLLM serves too.
    """
    hf_logging.disable_progress_bar()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    tokenizer = build_tokenizer()
    eos_ids = [
        tokenizer.convert_tokens_to_ids("<|im_end|>"),
        tokenizer.convert_tokens_to_ids("<|endoftext|>"),
    ]

    config = Qwen3Config(
        vocab_size=len(tokenizer),  # exactly the tokenizer: every sampled id decodes to a real token
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=head_dim,
        max_position_embeddings=4096,
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
    (out / "openclaw_tiny_model.json").write_text(json.dumps({"seed": seed, "head_dim": head_dim}) + "\n")
    return out

"""A tiny, randomly initialised Qwen2.5-VL model folder: the tests' vision-language model.

Like `tiny_model.py`, nothing is downloaded: the text half is the tiny model's shape and tokenizer (with
Qwen2.5-VL's vision special tokens added), the vision tower is one block wide enough for a few patches, and
the image processor keeps images tiny (a 56x56 image is 4 merged patches, so 4 `<|image_pad|>` tokens).
The folder is a normal Hugging Face checkpoint that `AutoModelForImageTextToText` / `AutoProcessor` and
vLLM load unchanged. The chat template is the tiny model's, with image parts rendered as Qwen2.5-VL does:
`<|vision_start|><|image_pad|><|vision_end|>` (the processor expands the pad to one token per patch).
"""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import tokenizers
import torch
import transformers
from tokenizers import AddedToken
from transformers import GenerationConfig, Qwen2_5_VLConfig, Qwen2_5_VLForConditionalGeneration
from transformers.utils import logging as hf_logging

from .tiny_model import DEFAULT_HEAD_DIM, HIDDEN_SIZE, NUM_LAYERS, VLLM_HEAD_DIMS
from .tiny_tokenizer import CONTEXT_LENGTH, train_tokenizer, training_corpus

VISION_START = "<|vision_start|>"
VISION_END = "<|vision_end|>"
IMAGE_PAD = "<|image_pad|>"
VIDEO_PAD = "<|video_pad|>"
VISION_TOKENS: tuple[str, ...] = (VISION_START, VISION_END, IMAGE_PAD, VIDEO_PAD)
IMAGE_PROMPT = VISION_START + IMAGE_PAD + VISION_END
PATCH_SIZE = 14
MERGE_SIZE = 2
VISION_HIDDEN = 64
# Pixel bounds of the image processor: images are resized to between 1 and 16 merged patches (28x28 each).
MIN_PIXELS = (PATCH_SIZE * MERGE_SIZE) ** 2
MAX_PIXELS = 16 * MIN_PIXELS
TINY_VLM_FORMAT = 1

_TEXT_PART = "{%- elif part.type == 'text' -%}\n                {{- part.text -}}\n"
_IMAGE_PART = (
    "            {%- elif part.type in ['image', 'image_url'] -%}\n"
    "                {{- '" + IMAGE_PROMPT + "' -}}\n"
)


def vlm_chat_template() -> str:
    """The tiny model's template, with image parts rendered as Qwen2.5-VL's vision markup."""
    text = (resources.files("openclaw_engine") / "chat_template.jinja").read_text()
    if _TEXT_PART not in text:
        raise RuntimeError("chat_template.jinja no longer has the text-part branch the VLM template extends")
    return text.replace(_TEXT_PART, _TEXT_PART + _IMAGE_PART, 1)


def make_tiny_vlm(out_dir: str | Path, *, seed: int = 0, head_dim: int = DEFAULT_HEAD_DIM) -> Path:
    """Write a complete VLM folder (config, safetensors, tokenizer, processor, chat template)."""
    from transformers import Qwen2VLImageProcessor

    if head_dim not in VLLM_HEAD_DIMS:
        raise ValueError(f"head_dim must be one of {VLLM_HEAD_DIMS} (vLLM's CPU attention), not {head_dim}")
    hf_logging.disable_progress_bar()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    corpus = training_corpus()
    tokenizer = train_tokenizer(corpus)
    tokenizer.add_special_tokens(
        {"additional_special_tokens": [AddedToken(t, special=True, normalized=False) for t in VISION_TOKENS]}
    )
    template = vlm_chat_template()
    tokenizer.chat_template = template
    ids = {t: tokenizer.convert_tokens_to_ids(t) for t in VISION_TOKENS}
    eos_ids = [
        tokenizer.convert_tokens_to_ids("<|im_end|>"),
        tokenizer.convert_tokens_to_ids("<|endoftext|>"),
    ]
    heads = HIDDEN_SIZE // head_dim
    text_config = {
        "vocab_size": len(tokenizer),
        "hidden_size": HIDDEN_SIZE,
        "intermediate_size": 2 * HIDDEN_SIZE,
        "num_hidden_layers": NUM_LAYERS,
        "num_attention_heads": heads,
        "num_key_value_heads": max(1, heads // 2),
        "max_position_embeddings": CONTEXT_LENGTH,
        # mrope sections (temporal, height, width) over head_dim / 2 rotary frequencies.
        "rope_parameters": {
            "rope_type": "default",
            "rope_theta": 1_000_000.0,
            "mrope_section": _mrope_section(head_dim),
        },
        "initializer_range": 0.1,
        "tie_word_embeddings": True,
        "bos_token_id": None,
        "eos_token_id": eos_ids[0],
        "pad_token_id": eos_ids[1],
    }
    vision_config = {
        "depth": 1,
        "hidden_size": VISION_HIDDEN,
        "intermediate_size": 2 * VISION_HIDDEN,
        "num_heads": 2,
        "patch_size": PATCH_SIZE,
        "spatial_merge_size": MERGE_SIZE,
        "temporal_patch_size": 2,
        "window_size": PATCH_SIZE * MERGE_SIZE * 2,
        "out_hidden_size": HIDDEN_SIZE,
        "fullatt_block_indexes": [0],
        "initializer_range": 0.1,
    }
    config = Qwen2_5_VLConfig(
        text_config=text_config,
        vision_config=vision_config,
        image_token_id=ids[IMAGE_PAD],
        video_token_id=ids[VIDEO_PAD],
        vision_start_token_id=ids[VISION_START],
        vision_end_token_id=ids[VISION_END],
        tie_word_embeddings=True,
        architectures=["Qwen2_5_VLForConditionalGeneration"],
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = Qwen2_5_VLForConditionalGeneration(config).to(torch.float32)
    model.generation_config = GenerationConfig(
        eos_token_id=eos_ids, pad_token_id=eos_ids[1], bos_token_id=None, do_sample=True
    )
    model.save_pretrained(out)
    size = {"shortest_edge": MIN_PIXELS, "longest_edge": MAX_PIXELS}
    common = {"patch_size": PATCH_SIZE, "merge_size": MERGE_SIZE, "temporal_patch_size": 2, "size": size}
    # The image processor, tokenizer and chat template as separate files (AutoProcessor assembles them;
    # Qwen2.5-VL's processor class needs a video processor, and that needs torchvision).
    Qwen2VLImageProcessor(**common).save_pretrained(out)
    (out / "chat_template.jinja").write_text(template)
    tokenizer.save_pretrained(out)
    provenance = {
        "format": TINY_VLM_FORMAT,
        "seed": seed,
        "head_dim": head_dim,
        "tokenizer_corpus": corpus.description,
        "tokenizer_corpus_sha256": corpus.sha256,
        "transformers": transformers.__version__,
        "tokenizers": tokenizers.__version__,
    }
    (out / "openclaw_tiny_model.json").write_text(json.dumps(provenance, indent=2) + "\n")
    return out


def _mrope_section(head_dim: int) -> list[int]:
    """Qwen2.5-VL's split of the rotary frequencies over (t, h, w): 16/24/24 of 64 at head_dim 128."""
    half = head_dim // 2
    t = half // 4
    h = (half - t) // 2
    return [t, h, half - t - h]

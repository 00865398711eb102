"""make-tiny-model writes a normal Hugging Face folder: Auto* load it, the template renders Qwen3 markup."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file
from transformers import AutoModelForCausalLM, AutoTokenizer, PreTrainedTokenizerBase

from openclaw_engine.tiny_model import TINY_MODEL_FORMAT, make_tiny_model
from openclaw_engine.tiny_tokenizer import MARKUP_TOKENS, SPECIAL_TOKENS

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Current weather",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
        },
    }
]


@pytest.fixture(scope="module")
def tokenizer(tiny_model_dir: Path) -> PreTrainedTokenizerBase:
    return AutoTokenizer.from_pretrained(tiny_model_dir)


def test_folder_loads_with_auto_classes(tiny_model_dir: Path, tokenizer: PreTrainedTokenizerBase) -> None:
    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    assert type(model).__name__ == "Qwen3ForCausalLM"
    assert model.config.vocab_size >= len(tokenizer)
    assert model.config.tie_word_embeddings
    assert tokenizer.eos_token == "<|im_end|>" and tokenizer.pad_token == "<|endoftext|>"
    generation = json.loads((tiny_model_dir / "generation_config.json").read_text())
    assert tokenizer.convert_tokens_to_ids("<|im_end|>") in generation["eos_token_id"]
    for token in SPECIAL_TOKENS + MARKUP_TOKENS:
        ids = tokenizer.encode(token, add_special_tokens=False)
        assert len(ids) == 1 and ids[0] < model.config.vocab_size, token
    ids = torch.tensor([tokenizer.encode("hello there", add_special_tokens=False)])
    with torch.inference_mode():
        logits = model(input_ids=ids).logits
    assert logits.shape == (1, ids.shape[1], model.config.vocab_size)


def test_byte_level_round_trip(tokenizer: PreTrainedTokenizerBase) -> None:
    text = "the answer is 42 — ünïcödé ✓ 🙂\n\tand <think>markup</think> stays"
    ids = tokenizer.encode(text, add_special_tokens=False)
    assert tokenizer.decode(ids) == text
    assert len(ids) < len(text.encode()), "the merges should make some multi-byte tokens"
    # Markup tokens are not "special": skip_special_tokens keeps them for the parsers.
    assert "<think>" in tokenizer.decode(ids, skip_special_tokens=True)
    eos = tokenizer.encode("<|im_end|>", add_special_tokens=False)
    assert tokenizer.decode(ids + eos, skip_special_tokens=True) == text


def test_chat_template_renders_tools_calls_reasoning_and_tool_results(
    tokenizer: PreTrainedTokenizerBase,
) -> None:
    messages = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Weather in Paris?"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": {"city": "Paris"}},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
        {"role": "assistant", "content": "Sunny.", "reasoning_content": "The tool said sunny."},
    ]
    text = tokenizer.apply_chat_template(messages, tools=TOOLS, tokenize=False, add_generation_prompt=False)
    assert text.startswith("<|im_start|>system\nBe brief.\n\n# Tools\n")
    assert json.dumps(TOOLS[0]) in text
    assert '<tool_call>\n{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call>' in text
    assert (
        '<|im_start|>assistant\n<tool_call>\n{"name": "get_weather", '
        '"arguments": {"city": "Paris"}}\n</tool_call>' in text
    )
    assert "<|im_start|>user\n<tool_response>\nsunny\n</tool_response><|im_end|>\n" in text
    # The final assistant turn (after the last user query) keeps its reasoning.
    assert text.endswith(
        "<|im_start|>assistant\n<think>\nThe tool said sunny.\n</think>\n\nSunny.<|im_end|>\n"
    )

    prompt = tokenizer.apply_chat_template(
        messages[:2], tools=TOOLS, tokenize=False, add_generation_prompt=True
    )
    assert prompt.endswith("<|im_start|>user\nWeather in Paris?<|im_end|>\n<|im_start|>assistant\n")
    no_think = tokenizer.apply_chat_template(
        messages[1:2], tokenize=False, add_generation_prompt=True, enable_thinking=False
    )
    assert no_think.endswith("<|im_start|>assistant\n<think>\n\n</think>\n\n")
    encoded = tokenizer.apply_chat_template(messages[:2], tools=TOOLS, add_generation_prompt=True)
    assert tokenizer.decode(encoded["input_ids"]) == prompt


def test_seed_makes_weights_deterministic(tmp_path: Path) -> None:
    a = load_file(make_tiny_model(tmp_path / "a", seed=5) / "model.safetensors")
    b = load_file(make_tiny_model(tmp_path / "b", seed=5) / "model.safetensors")
    c = load_file(make_tiny_model(tmp_path / "c", seed=6) / "model.safetensors")
    assert a.keys() == b.keys() == c.keys()
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert not all(torch.equal(a[k], c[k]) for k in a)


def test_shape_fits_vllm_and_a_long_agent_prompt(
    tiny_model_dir: Path, tokenizer: PreTrainedTokenizerBase
) -> None:
    config = json.loads((tiny_model_dir / "config.json").read_text())
    assert config["head_dim"] == 64  # vLLM's CPU attention takes 32, 64 or 128
    assert config["max_position_embeddings"] >= 131072 and tokenizer.model_max_length >= 131072
    provenance = json.loads((tiny_model_dir / "openclaw_tiny_model.json").read_text())
    assert provenance["format"] == TINY_MODEL_FORMAT and provenance["tokenizer_corpus_sha256"]


def test_the_trained_bpe_makes_agent_prompts_several_times_shorter(
    tokenizer: PreTrainedTokenizerBase,
) -> None:
    # What an agent's prompt is made of: instructions in markdown, tool schemas in JSON, paths.
    system = (
        "You are a personal assistant running inside OpenClaw.\n## Tooling\nTools are policy-filtered. "
        "Names are case-sensitive; call them exactly.\n- read: Read files\n- write: Write files\n"
        "- exec: Run shell commands; use a pty for interactive CLIs\n### Workspace\nYour working directory "
        "is /home/user/workspace. Prefer editing existing files over creating new ones, and never delete "
        "files the user did not ask you to remove.\n"
    )
    prompt = tokenizer.apply_chat_template(
        [{"role": "system", "content": system}, {"role": "user", "content": "What is the weather in Paris?"}],
        tools=TOOLS,
        tokenize=False,
        add_generation_prompt=True,
    )
    ids = tokenizer.encode(prompt, add_special_tokens=False)
    assert len(prompt.encode()) / len(ids) > 3.0, f"{len(prompt.encode())} bytes in {len(ids)} tokens"
    assert tokenizer.decode(ids) == prompt


def test_the_folder_is_the_same_whatever_the_thread_count(tiny_model_dir: Path, tmp_path: Path) -> None:
    env = {**os.environ, "RAYON_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false"}
    out = tmp_path / "one-thread"
    subprocess.run(
        [sys.executable, "-m", "openclaw_engine", "make-tiny-model", str(out)],
        check=True,
        env=env,
        capture_output=True,
    )
    for name in ("tokenizer.json", "tokenizer_config.json", "config.json", "generation_config.json"):
        assert (out / name).read_bytes() == (tiny_model_dir / name).read_bytes(), name
    a, b = load_file(out / "model.safetensors"), load_file(tiny_model_dir / "model.safetensors")
    assert all(torch.equal(a[k], b[k]) for k in a)

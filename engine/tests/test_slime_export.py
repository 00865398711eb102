"""slime's checkpoint made a Hugging Face folder (openclaw_engine/slime_plugin/export_hf.py), on CPU.

LoRA adapters are real PEFT adapters on the tiny model, merged for real and compared with peft's own merge in
memory. Megatron and FSDP conversions need slime's converters (Megatron, GPUs), which cannot run here: a
STAND-IN converter script checks the exact arguments the launcher gives slime's tools and writes the base's
weights as its "converted" output.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest
import torch
from peft import LoraConfig, PeftModel, get_peft_model
from transformers import AutoModelForCausalLM, AutoTokenizer

from openclaw_engine.model_runner import ModelRunner
from openclaw_engine.slime_plugin import export_hf
from openclaw_engine.slime_plugin.export_hf import ExportError

TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]  # spec 8.1


def lora_model(base_dir: Path, seed: int) -> PeftModel:
    """A PEFT LoRA model on the base with random, non-zero A and B (PEFT starts B at zero: no delta)."""
    base = AutoModelForCausalLM.from_pretrained(base_dir, dtype=torch.float32)
    model = get_peft_model(base, LoraConfig(r=4, lora_alpha=8, target_modules=TARGETS, lora_dropout=0.0))
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, param in model.named_parameters():
            if "lora_" in name:
                param.copy_(torch.randn(param.shape, generator=g) * 0.05)
    return model


def save_openclaw_rl_adapter(model: PeftModel, save_dir: Path, iteration: int) -> Path:
    """What OpenClaw-RL's slime writes for FSDP + LoRA (fsdp_utils/checkpoint.py save, lora_utils.py)."""
    it = save_dir / f"iter_{iteration:07d}"
    (it / "model").mkdir(parents=True)
    for sub in ("optimizer", "lr_scheduler"):
        (it / sub).mkdir()
        (it / sub / ".metadata").write_bytes(b"\0")
    torch.save(
        {k: v for k, v in model.state_dict().items() if "lora_" in k}, it / "model" / "adapter_weights.pt"
    )
    cfg = model.peft_config["default"].to_dict()
    cfg = {k: sorted(v) if isinstance(v, set) else v for k, v in cfg.items()}
    (it / "model" / "adapter_config.json").write_text(json.dumps(cfg, indent=2))
    (it / "rng.pt").write_bytes(b"\0")
    (it / "meta.json").write_text(json.dumps({"iteration": iteration}))
    (save_dir / "latest_checkpointed_iteration.txt").write_text(str(iteration))
    return it


def peft_merged_state(model: PeftModel) -> dict[str, torch.Tensor]:
    return {k: v.clone() for k, v in model.merge_and_unload().state_dict().items()}


def export(raw: Path, out: Path, base: Path | None, **commands: list[str]) -> export_hf.SlimeCheckpoint:
    return export_hf.export_hf(
        raw,
        out,
        base,
        torch_dist_convert_command=commands.get("torch_dist", ["false"]),
        fsdp_convert_command=commands.get("fsdp", ["false"]),
    )


@pytest.mark.parametrize("layout", ["peft_save_pretrained", "openclaw_rl_fsdp"])
def test_a_lora_adapter_is_merged_into_the_base_as_peft_merges_it(
    layout: str, tiny_model_dir: Path, tmp_path: Path
) -> None:
    model = lora_model(tiny_model_dir, seed=1)
    out = tmp_path / "checkpoint"
    raw = out / "slime"
    if layout == "peft_save_pretrained":
        model.save_pretrained(raw)  # adapter_config.json + adapter_model.safetensors
        assert (raw / "adapter_model.safetensors").is_file()
    else:
        save_openclaw_rl_adapter(model, raw, iteration=2)
    # one module by hand: W + B·A·alpha/r
    q = model.base_model.model.model.layers[0].self_attn.q_proj
    by_hand = q.base_layer.weight + (q.lora_B["default"].weight @ q.lora_A["default"].weight) * (8 / 4)
    expected = peft_merged_state(model)

    found = export(raw, out, tiny_model_dir)

    assert found.format == "lora_adapter"
    names = {p.name for p in out.iterdir()}
    assert {"config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"} <= names
    assert "slime" in names and ".hf-export" not in names
    merged = AutoModelForCausalLM.from_pretrained(out, dtype=torch.float32).state_dict()
    assert merged.keys() == expected.keys()
    for key, value in expected.items():
        assert torch.equal(merged[key], value), key
    assert torch.allclose(merged["model.layers.0.self_attn.q_proj.weight"], by_hand, atol=1e-6)
    base = AutoModelForCausalLM.from_pretrained(tiny_model_dir, dtype=torch.float32).state_dict()
    assert not torch.equal(
        merged["model.layers.0.self_attn.q_proj.weight"], base["model.layers.0.self_attn.q_proj.weight"]
    )
    assert torch.equal(merged["model.norm.weight"], base["model.norm.weight"])  # not a LoRA target
    assert AutoTokenizer.from_pretrained(out).encode("the cat") == AutoTokenizer.from_pretrained(
        tiny_model_dir
    ).encode("the cat")


def test_the_reference_engine_loads_a_merged_checkpoint(tiny_model_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "checkpoint"
    lora_model(tiny_model_dir, seed=2).save_pretrained(out / "slime")
    export(out / "slime", out, tiny_model_dir)
    runner = ModelRunner(str(tiny_model_dir))
    ok, message, _ = runner.update_weights_from_disk(str(out), "v1")
    assert ok, message
    assert runner.weight_version == "v1" and runner.model_path == str(out)


def test_an_adapter_that_does_not_fit_the_base_is_an_error(tiny_model_dir: Path, tmp_path: Path) -> None:
    model = lora_model(tiny_model_dir, seed=3)
    it = save_openclaw_rl_adapter(model, tmp_path / "ckpt" / "slime", iteration=1)
    state = torch.load(it / "model" / "adapter_weights.pt")
    state.pop(next(k for k in state if "down_proj.lora_B" in k))
    torch.save(state, it / "model" / "adapter_weights.pt")
    with pytest.raises(ExportError, match="1 LoRA parameters missing"):
        export(tmp_path / "ckpt" / "slime", tmp_path / "ckpt", tiny_model_dir)
    assert sorted(p.name for p in (tmp_path / "ckpt").iterdir()) == ["slime"]

    state["base_model.model.model.layers.9.mlp.up_proj.lora_A.default.weight"] = torch.zeros(4, 64)
    torch.save(state, it / "model" / "adapter_weights.pt")
    with pytest.raises(ExportError, match="unknown tensors"):
        export(tmp_path / "ckpt" / "slime", tmp_path / "ckpt", tiny_model_dir)


def test_a_hugging_face_folder_is_published_as_it_is(tiny_model_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "checkpoint"
    shutil.copytree(tiny_model_dir, out / "slime")
    assert export(out / "slime", out, None).format == "hf"
    assert (out / "model.safetensors").read_bytes() == (tiny_model_dir / "model.safetensors").read_bytes()
    assert (out / "slime" / "model.safetensors").is_file()  # slime's own copy stays for --load


# A STAND-IN for slime's tools/convert_torch_dist_to_hf.py and tools/convert_fsdp_to_hf.py (they need slime,
# Megatron and the real checkpoint): records its arguments, refuses an existing --output-dir like the real
# tools, and "converts" by copying the --origin-hf-dir folder (weights included) into --output-dir.
FAKE_CONVERTER = r"""
import json, os, pathlib, shutil, sys
args = sys.argv[1:]
out = pathlib.Path(args[args.index("--output-dir") + 1])
origin = pathlib.Path(args[args.index("--origin-hf-dir") + 1])
pathlib.Path(os.environ["FAKE_CONVERTER_LOG"]).write_text(json.dumps({"argv": args}))
if out.exists():
    raise ValueError(f"Output directory {out} already exists. Use --force to overwrite it.")
if os.environ.get("FAKE_CONVERTER_EXIT"):
    print("stand-in converter: conversion broke", flush=True)
    sys.exit(int(os.environ["FAKE_CONVERTER_EXIT"]))
out.mkdir()
for f in origin.iterdir():
    if f.is_file():
        shutil.copy(f, out / f.name)
"""


def fake_converter(tmp_path: Path, monkeypatch) -> tuple[list[str], Path]:
    script = tmp_path / "fake_converter.py"
    script.write_text(FAKE_CONVERTER)
    log = tmp_path / "converter.json"
    monkeypatch.setenv("FAKE_CONVERTER_LOG", str(log))
    return [sys.executable, str(script)], log


def write_torch_dist(save_dir: Path, iteration: int) -> Path:
    """Megatron's torch_dist layout (its save_checkpoint), placeholder bytes in the files."""
    it = save_dir / f"iter_{iteration:07d}"
    it.mkdir(parents=True)
    for name in ("common.pt", ".metadata", "__0_0.distcp", "__0_1.distcp", "metadata.json"):
        (it / name).write_bytes(b"\0")
    (save_dir / "latest_checkpointed_iteration.txt").write_text(str(iteration))
    return it


def write_fsdp_dcp(save_dir: Path, iteration: int) -> Path:
    """slime's FSDP layout without LoRA (fsdp_utils/checkpoint.save), with placeholder bytes."""
    it = save_dir / f"iter_{iteration:07d}"
    for sub in ("model", "optimizer", "lr_scheduler"):
        (it / sub).mkdir(parents=True)
        (it / sub / ".metadata").write_bytes(b"\0")
        (it / sub / "__0_0.distcp").write_bytes(b"\0")
    (it / "meta.json").write_text("{}")
    (save_dir / "latest_checkpointed_iteration.txt").write_text(str(iteration))
    return it


@pytest.mark.parametrize("kind", ["torch_dist", "fsdp"])
def test_megatron_and_fsdp_checkpoints_go_through_slimes_converters(
    kind: str, tiny_model_dir: Path, tmp_path: Path, monkeypatch
) -> None:
    command, log = fake_converter(tmp_path, monkeypatch)
    out = tmp_path / "checkpoint"
    it = (write_torch_dist if kind == "torch_dist" else write_fsdp_dcp)(out / "slime", 7)

    found = export(out / "slime", out, tiny_model_dir, **{kind: command})

    assert found.format == ("torch_dist" if kind == "torch_dist" else "fsdp_dcp") and found.path == it
    argv = json.loads(log.read_text())["argv"]
    expected = [
        "--input-dir",
        str(it),
        "--output-dir",
        str(out / ".hf-export"),
        "--origin-hf-dir",
        str(tiny_model_dir),
    ]
    vocab = json.loads((tiny_model_dir / "config.json").read_text())["vocab_size"]
    assert argv == (expected + ["--vocab-size", str(vocab)] if kind == "torch_dist" else expected)
    assert (out / "model.safetensors").is_file() and (out / "config.json").is_file()
    assert not (out / ".hf-export").exists()
    assert AutoModelForCausalLM.from_pretrained(out).config.vocab_size == vocab


def test_a_failing_converter_is_an_error_with_its_output(
    tiny_model_dir: Path, tmp_path: Path, monkeypatch
) -> None:
    command, _ = fake_converter(tmp_path, monkeypatch)
    monkeypatch.setenv("FAKE_CONVERTER_EXIT", "4")
    out = tmp_path / "checkpoint"
    write_torch_dist(out / "slime", 1)
    with pytest.raises(ExportError, match=r"exited 4:\nstand-in converter: conversion broke"):
        export(out / "slime", out, tiny_model_dir, torch_dist=command)
    assert sorted(p.name for p in out.iterdir()) == ["slime"]


def test_unknown_formats_are_errors_that_say_what_was_found(tiny_model_dir: Path, tmp_path: Path) -> None:
    raw = tmp_path / "slime"
    with pytest.raises(ExportError, match="slime wrote nothing"):
        export_hf.detect_format(raw)
    raw.mkdir()
    (raw / "weights.npz").write_bytes(b"\0")
    with pytest.raises(ExportError, match=r"unknown checkpoint format .* it holds: weights\.npz"):
        export_hf.detect_format(raw)
    (raw / "latest_checkpointed_iteration.txt").write_text("3")
    with pytest.raises(ExportError, match="names iter_0000003, which slime did not write"):
        export_hf.detect_format(raw)
    (raw / "iter_0000003").mkdir()
    (raw / "iter_0000003" / "something.bin").write_bytes(b"\0")
    with pytest.raises(ExportError, match=r"neither a Megatron torch_dist .* it holds: something\.bin"):
        export_hf.detect_format(raw)
    write_torch_dist(tmp_path / "no-base", 1)
    with pytest.raises(ExportError, match="needs --hf-checkpoint"):
        export(tmp_path / "no-base", tmp_path, None)

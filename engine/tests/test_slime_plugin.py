"""The slime plugin on CPU without slime: its losses agree with the shared losses, its batch loader and its
epoch launcher follow the epoch container contract (docs/slime.md), publishing a Hugging Face folder."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
from test_slime_export import FAKE_CONVERTER
from transformers import AutoModelForCausalLM

from openclaw_engine.errors import EngineError
from openclaw_engine.losses import LossHyperParams, compute_loss
from openclaw_engine.slime_plugin import batch_loader, epoch
from openclaw_engine.slime_plugin.loss import (
    combine_loss_function,
    grpo_loss_function,
    opd_loss_function,
    topk_distillation_loss_function,
)

V = 11
PROMPTS = [[1, 2, 3], [4, 5]]
RESPONSES = [[6, 7, 8, 9], [10, 3]]
MASKS = [[1, 1, 0, 1], [1, 1]]


def slime_args(**overrides):
    base = dict(
        rollout_temperature=1.0,
        eps_clip=0.2,
        eps_clip_high=0.28,
        use_kl_loss=True,
        kl_loss_coef=0.0,
        kl_loss_type="low_var_kl",
        entropy_coef=0.0,
        use_rollout_logprobs=False,
    )
    return SimpleNamespace(**{**base, **overrides})


def slime_reducer(masks: list[list[int]]):
    """slime's sum_of_sample_mean over a flat [Σ R_i] tensor: each sample's masked token mean, summed."""
    lengths = [len(m) for m in masks]
    flat_mask = torch.tensor([x for m in masks for x in m], dtype=torch.float32)

    def reduce(x: torch.Tensor) -> torch.Tensor:
        parts = torch.split(x * flat_mask, lengths)
        mparts = torch.split(flat_mask, lengths)
        return sum(p.sum() / m.sum().clamp(min=1) for p, m in zip(parts, mparts, strict=True))

    return reduce


def packed_batch(seed: int = 0, with_topk: int = 0):
    """A packed micro-batch of two samples as slime's actor hands it to a custom loss."""
    g = torch.Generator().manual_seed(seed)
    tokens = [torch.tensor(p + r) for p, r in zip(PROMPTS, RESPONSES, strict=True)]
    total = sum(len(t) for t in tokens)
    logits = torch.randn(1, total, V, generator=g, requires_grad=True)
    lens = [len(r) for r in RESPONSES]
    batch = {
        "unconcat_tokens": tokens,
        "total_lengths": [len(t) for t in tokens],
        "response_lengths": lens,
        "loss_masks": [torch.tensor(m, dtype=torch.float32) for m in MASKS],
        "advantages": [torch.full((n,), r) for n, r in zip(lens, [1.0, -1.0], strict=True)],
        "log_probs": [torch.randn(n, generator=g) - 2 for n in lens],
        "rollout_log_probs": [torch.randn(n, generator=g) - 2 for n in lens],
        "ref_log_probs": [torch.randn(n, generator=g) - 2 for n in lens],
        "teacher_log_probs": [torch.randn(n, generator=g) - 2 for n in lens],
    }
    if with_topk:
        batch["teacher_topk_indices"] = [torch.randint(0, V, (n, with_topk), generator=g) for n in lens]
        batch["teacher_topk_log_probs"] = [
            torch.log_softmax(torch.randn(n, V, generator=g), -1)[:, :with_topk] for n in lens
        ]
    return logits, batch


def padded(values: list[torch.Tensor]) -> torch.Tensor:
    return torch.nn.utils.rnn.pad_sequence([v.float() for v in values], batch_first=True)


def reference_log_probs(logits: torch.Tensor, batch, temperature: float = 1.0) -> list[torch.Tensor]:
    out, end = [], 0
    for tokens, total, r in zip(
        batch["unconcat_tokens"], batch["total_lengths"], batch["response_lengths"], strict=True
    ):
        end += total
        lsm = torch.log_softmax(logits[0, end - r - 1 : end - 1] / temperature, -1)
        out.append(lsm.gather(-1, tokens[-r:, None])[:, 0])
    return out


@pytest.mark.parametrize("use_rollout", [False, True])
def test_combine_loss_matches_the_shared_combine_loss(use_rollout: bool, monkeypatch) -> None:
    monkeypatch.setenv("OPENCLAW_COMBINE_W_OPD", "0.7")
    monkeypatch.setenv("OPENCLAW_COMBINE_W_RL", "1.3")
    logits, batch = packed_batch()
    loss, metrics = combine_loss_function(
        slime_args(use_rollout_logprobs=use_rollout), batch, logits, slime_reducer(MASKS)
    )
    old = batch["rollout_log_probs"] if use_rollout else batch["log_probs"]
    expected, expected_metrics = compute_loss(
        "combine",
        log_probs=padded(reference_log_probs(logits, batch)),
        old_log_probs=padded(old),
        mask=padded(batch["loss_masks"]),
        rewards=torch.tensor([1.0, -1.0]),
        teacher_log_probs=padded(batch["teacher_log_probs"]),
        config=LossHyperParams(w_opd=0.7, w_rl=1.3),
        batch_size=1,  # slime divides by the global batch size after the custom loss
    )
    torch.testing.assert_close(loss, expected)
    for name in ("pg_loss", "pg_clipfrac", "ppo_kl"):
        torch.testing.assert_close(metrics[name], expected_metrics[name])
    assert metrics["kl_loss"].item() > 0  # logged even with coefficient 0 (spec 5)
    loss.backward()
    assert logits.grad is not None and logits.grad.abs().sum() > 0


def test_combine_rl_only_rows_have_a_teacher_term_of_exactly_zero() -> None:
    """A row whose teacher is its rollout log-probs (the batch loader fills RL-only rows so) is grpo."""
    logits, batch = packed_batch(seed=2)
    batch["teacher_log_probs"] = [t.clone() for t in batch["rollout_log_probs"]]
    args = slime_args(rollout_temperature=0.6)
    loss, _ = combine_loss_function(args, batch, logits, slime_reducer(MASKS))
    expected, _ = compute_loss(
        "grpo",
        log_probs=padded(reference_log_probs(logits, batch, 0.6)),
        old_log_probs=padded(batch["log_probs"]),
        mask=padded(batch["loss_masks"]),
        rewards=torch.tensor([1.0, -1.0]),
        batch_size=1,
    )
    torch.testing.assert_close(loss, expected, rtol=0, atol=0)


def test_combine_loss_applies_temperature_kl_and_entropy_coefficients() -> None:
    logits, batch = packed_batch(seed=1)
    args = slime_args(rollout_temperature=0.6, kl_loss_coef=0.1, entropy_coef=0.01, kl_loss_type="k2")
    loss, metrics = combine_loss_function(args, batch, logits, slime_reducer(MASKS))
    lp = reference_log_probs(logits, batch, temperature=0.6)
    mask = padded(batch["loss_masks"])
    entropy = padded(
        [-(torch.softmax(c, -1) * torch.log_softmax(c, -1)).sum(-1) for c in _chunks(logits / 0.6, batch)]
    )
    expected, _ = compute_loss(
        "combine",
        log_probs=padded(lp),
        old_log_probs=padded(batch["log_probs"]),
        mask=mask,
        rewards=torch.tensor([1.0, -1.0]),
        teacher_log_probs=padded(batch["teacher_log_probs"]),
        ref_log_probs=padded(batch["ref_log_probs"]),
        entropy=entropy,
        config=LossHyperParams(kl_coef=0.1, kl_type="k2", entropy_coef=0.01),
        batch_size=1,
    )
    torch.testing.assert_close(loss, expected)
    assert set(metrics) >= {"loss", "pg_loss", "entropy_loss", "pg_clipfrac", "ppo_kl", "kl_loss"}


def _chunks(logits: torch.Tensor, batch) -> list[torch.Tensor]:
    out, end = [], 0
    for total, r in zip(batch["total_lengths"], batch["response_lengths"], strict=True):
        end += total
        out.append(logits[0, end - r - 1 : end - 1])
    return out


def test_topk_distillation_loss_matches_the_shared_topk_loss() -> None:
    logits, batch = packed_batch(seed=2, with_topk=3)
    loss, metrics = topk_distillation_loss_function(slime_args(), batch, logits, slime_reducer(MASKS))
    student = padded(
        [
            torch.log_softmax(c, -1).gather(-1, idx)
            for c, idx in zip(_chunks(logits, batch), batch["teacher_topk_indices"], strict=True)
        ]
    )
    expected, _ = compute_loss(
        "topk_distill",
        log_probs=padded(reference_log_probs(logits, batch)),
        old_log_probs=padded(batch["log_probs"]),
        mask=padded(batch["loss_masks"]),
        student_topk_log_probs=student,
        teacher_topk_log_probs=padded(batch["teacher_topk_log_probs"]),
        batch_size=1,
    )
    torch.testing.assert_close(loss, expected)
    assert metrics["pg_clipfrac"].item() == 0.0
    loss.backward()
    assert logits.grad is not None and logits.grad.abs().sum() > 0


def stale_batch_file(tmp_path: Path, batch, stale: list[bool], method: str) -> Path:
    """The epoch's batch file for `packed_batch`'s samples, flagging the stale ones as the workflow does."""
    samples = [
        {
            "tokens": tokens.tolist(),
            "response_length": r,
            "loss_mask": [int(x) for x in mask.tolist()],
            "rollout_log_probs": rollout.tolist(),
            "teacher_log_probs": teacher.tolist(),
            "reward": reward,
            **({"use_rollout_logprobs": True} if flag else {}),
        }
        for tokens, r, mask, rollout, teacher, reward, flag in zip(
            batch["unconcat_tokens"],
            batch["response_lengths"],
            batch["loss_masks"],
            batch["rollout_log_probs"],
            batch["teacher_log_probs"],
            [1.0, -1.0],
            stale,
            strict=True,
        )
    ]
    path = tmp_path / "batch.json"
    path.write_text(json.dumps({"step_id": "s", "samples": samples, "loss": {"method": method}}))
    return path


@pytest.mark.parametrize(
    ("method", "loss_function"),
    [("grpo", grpo_loss_function), ("opd", opd_loss_function), ("combine", combine_loss_function)],
)
def test_only_the_stale_sample_of_a_batch_uses_its_rollout_log_probs(
    method: str, loss_function, tmp_path: Path, monkeypatch
) -> None:
    """A batch with one stale sample of two: slime used to take rollout log-probs as π_old for both samples;
    only the stale one may, as in the reference trainer (LossRequest.rollout_old)."""
    logits, batch = packed_batch(seed=3)
    path = stale_batch_file(tmp_path, batch, [False, True], method)
    monkeypatch.setenv(batch_loader.BATCH_FILE_ENV, str(path))
    loss, metrics = loss_function(slime_args(), batch, logits, slime_reducer(MASKS))
    per_sample_old = [batch["log_probs"][0], batch["rollout_log_probs"][1]]
    expected, expected_metrics = compute_loss(
        method,
        log_probs=padded(reference_log_probs(logits, batch)),
        old_log_probs=padded(per_sample_old),
        mask=padded(batch["loss_masks"]),
        rewards=torch.tensor([1.0, -1.0]),
        teacher_log_probs=padded(batch["teacher_log_probs"]),
        batch_size=1,
    )
    torch.testing.assert_close(loss, expected)
    torch.testing.assert_close(metrics["ppo_kl"], expected_metrics["ppo_kl"])
    everything_stale, _ = loss_function(
        slime_args(use_rollout_logprobs=True), batch, logits, slime_reducer(MASKS)
    )
    assert not torch.allclose(loss, everything_stale)


def test_the_top_k_entropy_term_is_the_reference_trainers() -> None:
    """An opd run with top-K distillation and an entropy bonus: the slime plugin took H over the K+1 bins, the
    reference trainer over the whole vocabulary, so the two trainers trained different losses."""
    logits, batch = packed_batch(seed=4, with_topk=3)
    args = slime_args(entropy_coef=0.05)
    loss, metrics = topk_distillation_loss_function(args, batch, logits, slime_reducer(MASKS))
    chunks = _chunks(logits, batch)
    student = padded(
        [
            torch.log_softmax(c, -1).gather(-1, idx)
            for c, idx in zip(chunks, batch["teacher_topk_indices"], strict=True)
        ]
    )
    # What the reference Trainer passes: the same tensors, plus the full-vocabulary entropy of its logits.
    full_vocab_entropy = padded([-(torch.softmax(c, -1) * torch.log_softmax(c, -1)).sum(-1) for c in chunks])
    expected, expected_metrics = compute_loss(
        "topk_distill",
        log_probs=padded(reference_log_probs(logits, batch)),
        old_log_probs=padded(batch["log_probs"]),
        mask=padded(batch["loss_masks"]),
        entropy=full_vocab_entropy,
        student_topk_log_probs=student,
        teacher_topk_log_probs=padded(batch["teacher_topk_log_probs"]),
        config=LossHyperParams(entropy_coef=0.05),
        batch_size=1,
    )
    torch.testing.assert_close(metrics["entropy_loss"], expected_metrics["entropy"], rtol=0, atol=1e-6)
    torch.testing.assert_close(loss, expected, rtol=0, atol=1e-6)
    assert metrics["entropy_loss"].item() > 0


# ---- batch loader ---------------------------------------------------------------------------------


def batch_request(step_id: str = "run:1", method: str = "combine") -> dict:
    return {
        "step_id": step_id,
        "samples": [
            {
                "tokens": [1, 2, 3, 4],
                "response_length": 2,
                "loss_mask": [1, 1],
                "rollout_log_probs": [-0.5, -1.5],
                "reward": 1.0,
                "teacher_log_probs": [-0.4, -1.0],
            },
            {
                "tokens": [5, 6, 7],
                "response_length": 1,
                "loss_mask": [1],
                "rollout_log_probs": [-2.0],
                "reward": -1.0,
                "teacher_log_probs": [-2.0],
            },
        ],
        "loss": {"method": method},
        "optimizer": {"lr": 1e-5},
    }


def test_batch_loader_returns_one_group_per_sample_with_slime_sample_fields(
    tmp_path: Path, monkeypatch
) -> None:
    path = tmp_path / "batch.json"
    path.write_text(json.dumps(batch_request()))
    monkeypatch.setenv(batch_loader.BATCH_FILE_ENV, str(path))
    groups = batch_loader.generate_rollout_from_batch_file(SimpleNamespace(rollout_batch_size=2), 0, None)
    assert [len(g) for g in groups] == [1, 1]
    first, second = groups[0][0], groups[1][0]
    assert (first.index, first.group_index, second.index, second.group_index) == (0, 0, 1, 1)
    assert first.tokens == [1, 2, 3, 4] and first.response_length == 2 and first.loss_mask == [1, 1]
    assert first.rollout_log_probs == [-0.5, -1.5]
    assert first.reward == {"score": 1.0} and second.reward == {"score": -1.0}
    assert first.status == "completed"
    assert first.teacher_log_probs.dtype == torch.float32
    torch.testing.assert_close(first.teacher_log_probs, torch.tensor([-0.4, -1.0]))
    assert batch_loader.generate_rollout_from_batch_file(SimpleNamespace(), 0, None, evaluation=True) == {}


def test_batch_loader_gives_rl_only_rows_their_rollout_log_probs_and_checks_the_temperature(
    tmp_path: Path, monkeypatch
) -> None:
    request = batch_request()
    del request["samples"][1]["teacher_log_probs"]
    for sample in request["samples"]:
        sample["temperature"] = 0.6
    path = tmp_path / "batch.json"
    path.write_text(json.dumps(request))
    monkeypatch.setenv(batch_loader.BATCH_FILE_ENV, str(path))
    args = SimpleNamespace(rollout_batch_size=2, rollout_temperature=0.6)
    groups = batch_loader.generate_rollout_from_batch_file(args, 0, None)
    torch.testing.assert_close(groups[1][0].teacher_log_probs, torch.tensor([-2.0]))
    with pytest.raises(ValueError, match="drawn at temperature 0.6 but slime trains this step at"):
        batch_loader.generate_rollout_from_batch_file(SimpleNamespace(rollout_batch_size=2), 0, None)


def test_batch_loader_refuses_a_wrong_batch_size_and_invalid_batches(tmp_path: Path, monkeypatch) -> None:
    path = tmp_path / "batch.json"
    path.write_text(json.dumps(batch_request()))
    monkeypatch.setenv(batch_loader.BATCH_FILE_ENV, str(path))
    with pytest.raises(ValueError, match="--rollout-batch-size is 16"):
        batch_loader.generate_rollout_from_batch_file(SimpleNamespace(rollout_batch_size=16), 0, None)
    bad = batch_request()
    bad["samples"][0]["loss_mask"] = [1]
    path.write_text(json.dumps(bad))
    with pytest.raises(EngineError, match=r"samples\[0\]\.loss_mask"):
        batch_loader.read_batch_file(path)
    missing_teacher = batch_request(method="opd")
    del missing_teacher["samples"][1]["teacher_log_probs"]
    path.write_text(json.dumps(missing_teacher))
    with pytest.raises(EngineError, match=r"samples\[1\]\.teacher_log_probs"):
        batch_loader.read_batch_file(path)
    monkeypatch.delenv(batch_loader.BATCH_FILE_ENV)
    with pytest.raises(RuntimeError, match="OPENCLAW_BATCH_FILE"):
        batch_loader.generate_rollout_from_batch_file(SimpleNamespace(), 0, None)


# ---- epoch launcher -------------------------------------------------------------------------------

# A STAND-IN for slime's train_async.py (slime needs GPUs): logs its --load/--save, resumes the iteration from
# --load's tracker file, writes into --save what $FAKE_SLIME_WRITES names (OpenClaw-RL's FSDP LoRA layout with
# a real PEFT adapter moved by a random "optimizer step", Megatron's torch_dist layout with placeholder bytes,
# or junk) and prints train metrics like slime.
FAKE_SLIME = r"""
import json, os, pathlib, sys
args = sys.argv[1:]
def flag(name):
    return args[args.index(name) + 1] if name in args else None
save, load, hf = pathlib.Path(flag("--save")), flag("--load"), flag("--hf-checkpoint")
with open(os.environ["FAKE_SLIME_LOG"], "a") as log:
    log.write(json.dumps({"load": load, "save": str(save)}) + "\n")
tracker = "latest_checkpointed_iteration.txt"
previous = int((pathlib.Path(load) / tracker).read_text()) if load else 0
iteration = previous + 1
writes = os.environ.get("FAKE_SLIME_WRITES", "lora")
save.mkdir(parents=True)
it = save / f"iter_{iteration:07d}"
if writes == "lora":
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM
    base = AutoModelForCausalLM.from_pretrained(hf, dtype=torch.float32)
    config = LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj", "down_proj"])
    model = get_peft_model(base, config)
    if previous:
        adapter = pathlib.Path(load) / f"iter_{previous:07d}" / "model" / "adapter_weights.pt"
        model.load_state_dict(torch.load(adapter), strict=False)
    g = torch.Generator().manual_seed(iteration)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "lora_" in name:
                p.add_(torch.randn(p.shape, generator=g) * 0.05)
    (it / "model").mkdir(parents=True)
    (it / "optimizer").mkdir()
    lora = {k: v for k, v in model.state_dict().items() if "lora_" in k}
    torch.save(lora, it / "model" / "adapter_weights.pt")
    config = model.peft_config["default"].to_dict()
    config = {k: sorted(v) if isinstance(v, set) else v for k, v in config.items()}
    (it / "model" / "adapter_config.json").write_text(json.dumps(config))
elif writes == "torch_dist":
    it.mkdir()
    for name in ("common.pt", ".metadata", "__0_0.distcp"):
        (it / name).write_bytes(b"\0")
else:
    (save / "weights.npz").write_bytes(b"\0")
if writes != "junk":
    (save / tracker).write_text(str(iteration))
print("step 0: {'train/loss': 0.25, 'train/pg_loss': 0.5, 'train/grad_norm': 1.5e-1}", flush=True)
sys.exit(int(os.environ.get("FAKE_EXIT", "0")))
"""


def run_launcher(
    tmp_path: Path,
    step_id: str,
    load: str | None,
    save: Path,
    monkeypatch,
    base: Path,
    exit_code: int = 0,
    writes: str = "lora",
) -> int:
    script = tmp_path / "fake_slime.py"
    script.write_text(FAKE_SLIME)
    batch = tmp_path / f"{step_id}.json"
    batch.write_text(json.dumps(batch_request(step_id)))
    monkeypatch.setenv(batch_loader.BATCH_FILE_ENV, str(batch))
    monkeypatch.setenv("FAKE_EXIT", str(exit_code))
    monkeypatch.setenv("FAKE_SLIME_WRITES", writes)
    monkeypatch.setenv("FAKE_SLIME_LOG", str(tmp_path / "slime-calls.jsonl"))
    slime = [
        "--hf-checkpoint",
        str(base),
        *(["--load", load] if load else []),
        "--save",
        str(save),
        "--lr",
        "1e-5",
    ]
    return epoch.main(["--step-id", step_id, "--train-command", f"{sys.executable} {script}", "--", *slime])


def slime_calls(tmp_path: Path) -> list[dict]:
    return [json.loads(line) for line in (tmp_path / "slime-calls.jsonl").read_text().splitlines()]


def test_epoch_launcher_publishes_a_hugging_face_folder_with_slimes_checkpoint_and_the_step_ids(
    tmp_path: Path, monkeypatch, tiny_model_dir: Path
) -> None:
    ckpts = tmp_path / "checkpoints"
    assert run_launcher(tmp_path, "run:1", None, ckpts / "s1", monkeypatch, tiny_model_dir) == 0
    state = json.loads((ckpts / "s1" / "trainer_state" / "state.json").read_text())
    assert state["step_count"] == 1
    metrics = state["steps"]["run:1"]["metrics"]
    assert metrics["loss"] == 0.25 and metrics["pg_loss"] == 0.5 and metrics["grad_norm"] == 0.15
    assert metrics["samples"] == 2 and metrics["tokens"] == 3 and metrics["step"] == 1
    # slime saved into slime/ of the temporary folder; the published folder is the merged HF model.
    assert (
        slime_calls(tmp_path)[0]["save"].endswith("/slime") and ".s1.tmp-" in slime_calls(tmp_path)[0]["save"]
    )
    assert (ckpts / "s1" / "slime" / "iter_0000001" / "model" / "adapter_weights.pt").is_file()
    assert {"config.json", "model.safetensors", "tokenizer.json"} <= {
        p.name for p in (ckpts / "s1").iterdir()
    }
    s1 = AutoModelForCausalLM.from_pretrained(ckpts / "s1").state_dict()
    base = AutoModelForCausalLM.from_pretrained(tiny_model_dir).state_dict()
    key = "model.layers.1.self_attn.v_proj.weight"
    assert not torch.equal(s1[key], base[key])

    # The next epoch resumes slime from s1/slime (the stand-in continues at iteration 2 from its tracker
    # file), and both step ids travel on.
    assert run_launcher(tmp_path, "run:2", str(ckpts / "s1"), ckpts / "s2", monkeypatch, tiny_model_dir) == 0
    assert slime_calls(tmp_path)[1]["load"] == str(ckpts / "s1" / "slime")
    assert (ckpts / "s2" / "slime" / "latest_checkpointed_iteration.txt").read_text() == "2"
    state = json.loads((ckpts / "s2" / "trainer_state" / "state.json").read_text())
    assert list(state["steps"]) == ["run:1", "run:2"] and state["step_count"] == 2
    s2 = AutoModelForCausalLM.from_pretrained(ckpts / "s2").state_dict()
    assert not torch.equal(s2[key], s1[key])

    # A step the loaded checkpoint already holds: nothing runs, nothing is written.
    assert (
        run_launcher(tmp_path, "run:2", str(ckpts / "s2"), ckpts / "again", monkeypatch, tiny_model_dir) == 0
    )
    assert not (ckpts / "again").exists() and len(slime_calls(tmp_path)) == 2
    assert sorted(p.name for p in ckpts.iterdir()) == ["s1", "s2"]


def test_epoch_launcher_converts_a_torch_dist_checkpoint_with_the_configured_converter(
    tmp_path: Path, monkeypatch, tiny_model_dir: Path
) -> None:
    converter = tmp_path / "fake_converter.py"
    converter.write_text(FAKE_CONVERTER)
    monkeypatch.setenv("FAKE_CONVERTER_LOG", str(tmp_path / "converter.json"))
    monkeypatch.setenv("OPENCLAW_SLIME_CONVERT_COMMAND", f"{sys.executable} {converter}")
    ckpts = tmp_path / "checkpoints"
    assert (
        run_launcher(tmp_path, "run:1", None, ckpts / "s1", monkeypatch, tiny_model_dir, writes="torch_dist")
        == 0
    )
    argv = json.loads((tmp_path / "converter.json").read_text())["argv"]
    tmp = Path(slime_calls(tmp_path)[0]["save"]).parent
    vocab = AutoModelForCausalLM.from_pretrained(tiny_model_dir).config.vocab_size
    assert argv == [
        "--input-dir",
        str(tmp / "slime" / "iter_0000001"),
        "--output-dir",
        str(tmp / ".hf-export"),
        "--origin-hf-dir",
        str(tiny_model_dir),
        "--vocab-size",
        str(vocab),
    ]
    assert (ckpts / "s1" / "slime" / "iter_0000001" / "common.pt").is_file()
    assert AutoModelForCausalLM.from_pretrained(ckpts / "s1").config.vocab_size == vocab

    # The converter fails: the epoch fails, nothing is published.
    monkeypatch.setenv("FAKE_CONVERTER_EXIT", "1")
    code = run_launcher(
        tmp_path, "run:2", str(ckpts / "s1"), ckpts / "s2", monkeypatch, tiny_model_dir, writes="torch_dist"
    )
    assert code == epoch.EXPORT_FAILED
    assert sorted(p.name for p in ckpts.iterdir()) == ["s1"]


def test_epoch_launcher_publishes_nothing_when_slimes_checkpoint_has_an_unknown_format(
    tmp_path: Path, monkeypatch, capsys, tiny_model_dir: Path
) -> None:
    ckpts = tmp_path / "checkpoints"
    code = run_launcher(tmp_path, "run:1", None, ckpts / "s1", monkeypatch, tiny_model_dir, writes="junk")
    assert code == epoch.EXPORT_FAILED
    assert "checkpoint export failed: unknown checkpoint format" in capsys.readouterr().err
    assert list(ckpts.iterdir()) == []


def test_epoch_launcher_leaves_nothing_when_slime_fails(
    tmp_path: Path, monkeypatch, tiny_model_dir: Path
) -> None:
    ckpts = tmp_path / "checkpoints"
    assert run_launcher(tmp_path, "run:1", None, ckpts / "s1", monkeypatch, tiny_model_dir, exit_code=3) == 3
    assert list(ckpts.iterdir()) == []  # neither s1 nor its temporary folder


def test_epoch_launcher_refuses_an_invalid_batch_with_its_own_exit_status(
    tmp_path: Path, monkeypatch, tiny_model_dir: Path
) -> None:
    batch = tmp_path / "bad.json"
    bad = batch_request("run:9")
    bad["samples"][0]["temperature"] = 0.6  # slime would train it at --rollout-temperature 1
    batch.write_text(json.dumps(bad))
    monkeypatch.setenv(batch_loader.BATCH_FILE_ENV, str(batch))
    code = epoch.main(
        ["--step-id", "run:9", "--train-command", "false", "--", "--save", str(tmp_path / "out")]
    )
    assert code == epoch.EPOCH_REFUSED
    assert not (tmp_path / "out").exists()


def test_epoch_launcher_parses_slime_metric_lines() -> None:
    lines = ["step 3: {'train/loss': -0.1, 'train/pg_clipfrac': 0.0, 'train/kl_loss': nan}"]
    assert epoch.parse_metrics(lines)["loss"] == -0.1
    assert epoch.parse_metrics(lines)["pg_clipfrac"] == 0.0


def test_batch_loader_gives_an_image_sample_the_pixels_its_pads_were_served_with(
    tmp_path: Path, monkeypatch, tiny_vlm_dir: Path, tiny_model_dir: Path
) -> None:
    # Scenario: a screenshot turn trained by slime must reach the model's forward with that screenshot's pixel
    # values and grid, computed against the exact served tokens; a batch whose images do not fill its pads is
    # refused before slime starts, and a text-only model is refused images.
    import base64
    import io

    from PIL import Image

    from openclaw_engine.vision_processor import load_processor, process

    processor = load_processor(tiny_vlm_dir)
    picture = Image.new("RGB", (56, 56), (200, 30, 30))
    buf = io.BytesIO()
    picture.save(buf, format="PNG")
    png = base64.b64encode(buf.getvalue()).decode()
    served = process(processor, "look <|vision_start|><|image_pad|><|vision_end|> now", [picture])
    request = batch_request("run:img")
    request["samples"] = [
        {
            "tokens": served.input_ids + [5, 6],
            "response_length": 2,
            "loss_mask": [1, 1],
            "rollout_log_probs": [-0.5, -1.5],
            "reward": 1.0,
            "teacher_log_probs": [-0.4, -1.0],
            "images": [{"media_type": "image/png", "data": png}],
        }
    ]
    path = tmp_path / "batch.json"
    path.write_text(json.dumps(request))
    monkeypatch.setenv(batch_loader.BATCH_FILE_ENV, str(path))
    args = SimpleNamespace(rollout_batch_size=1, hf_checkpoint=str(tiny_vlm_dir))
    [[sample]] = batch_loader.generate_rollout_from_batch_file(args, 0, None)
    assert len(sample.multimodal_inputs["images"]) == 1
    torch.testing.assert_close(sample.multimodal_train_inputs["pixel_values"], served.pixel_values)
    assert sample.multimodal_train_inputs["image_grid_thw"].tolist() == served.image_grid_thw.tolist()

    text_only = SimpleNamespace(rollout_batch_size=1, hf_checkpoint=str(tiny_model_dir))
    with pytest.raises(ValueError, match="is not a vision-language model"):
        batch_loader.generate_rollout_from_batch_file(text_only, 0, None)
    # One image too many for the pads: the epoch launcher refuses the batch before slime starts.
    request["samples"][0]["images"] *= 2
    path.write_text(json.dumps(request))
    code = epoch.main(
        [
            "--step-id",
            "run:img",
            "--train-command",
            "false",
            "--",
            "--hf-checkpoint",
            str(tiny_vlm_dir),
            "--save",
            str(tmp_path / "out"),
        ]
    )
    assert code == epoch.EPOCH_REFUSED
    assert not (tmp_path / "out").exists()

"""A vision-language model served and trained by the reference engine (the tiny Qwen2.5-VL of tiny_vlm.py).

Scenario: a user sends a screenshot with a question; the engine must answer from the pixels (not a text
stand-in), report the exact ids the model consumed (each image's pad tokens included) so the turn can be
captured, and the trainer must score those exact ids with the same images, so that one step trained on the
served turn starts from the served log-probs and the next version answers the same image request. What goes
wrong without it: the image is silently dropped, or training sees other ids or other positions than serving.
"""

from __future__ import annotations

import base64
import io
import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import torch
from PIL import Image
from transformers import AutoModelForImageTextToText

from openclaw_engine.vision_processor import load_processor


def png_b64(colour: tuple[int, int, int], size: tuple[int, int] = (56, 56)) -> str:
    buf = io.BytesIO()
    Image.new("RGB", size, colour).save(buf, format="PNG")
    return base64.b64encode(buf.getvalue()).decode()


RED = png_b64((220, 20, 20))
GREEN = png_b64((20, 200, 20), (84, 56))


def image_messages() -> list[dict]:
    return [
        {"role": "system", "content": "You look at screenshots."},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Which colour is this?"},
                {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{RED}"}},
                {"type": "text", "text": "And this one?"},
                {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{GREEN}"}},
            ],
        },
    ]


@pytest.fixture(scope="module")
def vlm(start_server, tiny_vlm_dir: Path) -> Iterator[httpx.Client]:
    with start_server(tiny_vlm_dir, "--trainer") as url, httpx.Client(base_url=url, timeout=120.0) as c:
        yield c


def chat(client: httpx.Client, **extra) -> dict:
    body = {
        "messages": image_messages(),
        "max_tokens": 4,
        "seed": 7,
        "logprobs": True,
        "return_prompt_token_ids": True,
        "return_token_ids": True,
        **extra,
    }
    response = client.post("/v1/chat/completions", json=body)
    assert response.status_code == 200, response.text
    return response.json()


def test_the_folder_loads_with_the_library_classes(tiny_vlm_dir: Path) -> None:
    model = AutoModelForImageTextToText.from_pretrained(tiny_vlm_dir)
    assert type(model).__name__ == "Qwen2_5_VLForConditionalGeneration"
    text = model.config.get_text_config()
    assert text.hidden_size // text.num_attention_heads == 64  # a head size vLLM's CPU attention takes
    processor = load_processor(tiny_vlm_dir)
    assert processor.image_processor.merge_size == 2


def test_an_image_request_reports_the_processor_ids(vlm: httpx.Client, tiny_vlm_dir: Path) -> None:
    out = chat(vlm)
    choice = out["choices"][0]
    processor = load_processor(tiny_vlm_dir)
    messages = [
        {**m, "content": [{"type": "image"} if p["type"] == "image_url" else p for p in m["content"]]}
        if isinstance(m["content"], list)
        else m
        for m in image_messages()
    ]
    prompt = processor.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    images = [Image.open(io.BytesIO(base64.b64decode(b))).convert("RGB") for b in (RED, GREEN)]
    expected = processor(text=[prompt], images=images, return_tensors="pt")["input_ids"][0].tolist()
    assert choice["prompt_token_ids"] == expected
    pad = processor.image_token_id
    assert expected.count(pad) == 4 + 6  # 56x56 -> 2x2 merged patches, 84x56 -> 3x2
    assert out["usage"]["prompt_tokens"] == len(expected)
    assert len(choice["token_ids"]) == 4 and len(choice["logprobs"]["content"]) == 4
    # /tokenize agrees with what was served.
    assert vlm.post("/tokenize", json={"messages": image_messages()}).json()["tokens"] == expected

    # Streaming reports the same ids and log-probs (same seed), and text-only requests work on the VLM.
    with vlm.stream(
        "POST",
        "/v1/chat/completions",
        json={
            "messages": image_messages(),
            "max_tokens": 4,
            "seed": 7,
            "stream": True,
            "logprobs": True,
            "return_prompt_token_ids": True,
            "return_token_ids": True,
        },
    ) as stream:
        chunks = [json.loads(line[6:]) for line in stream.iter_lines() if line.startswith("data: {")]
    streamed = [i for c in chunks for ch in c["choices"] for i in ch.get("token_ids") or []]
    assert streamed == choice["token_ids"]
    assert chunks[0]["choices"][0]["prompt_token_ids"] == expected
    text_only = vlm.post(
        "/v1/chat/completions", json={"messages": [{"role": "user", "content": "hi"}], "max_tokens": 2}
    )
    assert text_only.status_code == 200, text_only.text


def test_an_http_image_url_is_refused(vlm: httpx.Client) -> None:
    part = {"type": "image_url", "image_url": {"url": "http://example.com/a.png"}}
    response = vlm.post("/v1/chat/completions", json={"messages": [{"role": "user", "content": [part]}]})
    assert response.status_code == 400
    assert "data URL" in response.json()["error"]["message"]


def test_a_train_step_on_a_served_image_turn(vlm: httpx.Client, tmp_path: Path) -> None:
    served = chat(vlm, max_tokens=5, temperature=1.0)
    choice = served["choices"][0]
    response_ids = choice["token_ids"]
    rollout = [item["logprob"] for item in choice["logprobs"]["content"]]
    sample = {
        "tokens": choice["prompt_token_ids"] + response_ids,
        "response_length": len(response_ids),
        "loss_mask": [1] * len(response_ids),
        "rollout_log_probs": rollout,
        "reward": 1.0,
        "images": [{"media_type": "image/png", "data": RED}, {"media_type": "image/png", "data": GREEN}],
    }
    step = vlm.post(
        "/train_step",
        json={"step_id": "vlm-1", "samples": [sample], "optimizer": {"lr": 1e-2}, "loss": {"method": "grpo"}},
    )
    assert step.status_code == 200, step.text
    # Version 0's log-probs of the exact ids and images are the served ones (the same forward pass).
    assert step.json()["train_rollout_logprob_abs_diff"] < 1e-4

    # Without its images the same tokens are refused (the pads would have no pixels).
    bad = vlm.post(
        "/train_step", json={"step_id": "vlm-bad", "samples": [{**sample, "images": [sample["images"][0]]}]}
    )
    assert bad.status_code == 400 and bad.json()["error"]["param"] == "samples[0].images"

    ckpt = tmp_path / "vlm-step1"
    assert vlm.post("/save_checkpoint", json={"path": str(ckpt)}).status_code == 200
    before = AutoModelForImageTextToText.from_pretrained(vlm_dir_of(vlm)).state_dict()
    after = AutoModelForImageTextToText.from_pretrained(ckpt).state_dict()
    assert any(not torch.equal(before[k], after[k]) for k in before)
    update = vlm.post("/update_weights_from_disk", json={"model_path": str(ckpt)})
    assert update.status_code == 200, update.text
    again = chat(vlm, max_tokens=5, temperature=1.0)
    assert again["metadata"]["weight_version"] == "1"
    assert again["choices"][0]["prompt_token_ids"] == choice["prompt_token_ids"]
    assert [i["logprob"] for i in again["choices"][0]["logprobs"]["content"]] != rollout


def vlm_dir_of(client: httpx.Client) -> str:
    return client.get("/trainer_info").json()["model_dir"]


def test_a_teacher_prefill_scores_exact_ids_with_their_images(vlm: httpx.Client) -> None:
    """A teacher scoring a captured image turn sends its exact ids (pads expanded) with the images: the
    prompt log-probs of the response are the ones it was sampled with; other pixels score otherwise."""
    served = chat(vlm, max_tokens=4, temperature=1.0)
    choice = served["choices"][0]
    prompt, response = choice["prompt_token_ids"], choice["token_ids"]
    sampled = [item["logprob"] for item in choice["logprobs"]["content"]]

    def prefill(images: list[str] | None, **extra) -> httpx.Response:
        body = {
            "input_ids": prompt + response,
            "sampling_params": {"temperature": 1.0, "max_new_tokens": 0},
            "return_logprob": True,
            "logprob_start_len": len(prompt),
            "top_logprobs_num": 2,
            **({"image_data": images} if images is not None else {}),
            **extra,
        }
        return vlm.post("/generate", json=body)

    urls = [f"data:image/png;base64,{RED}", f"data:image/png;base64,{GREEN}"]
    out = prefill(urls)
    assert out.status_code == 200, out.text
    meta = out.json()["meta_info"]
    scored = [entry[0] for entry in meta["input_token_logprobs"]]
    assert [entry[1] for entry in meta["input_token_logprobs"]] == response
    assert scored == pytest.approx(sampled, abs=1e-4)
    assert len(meta["input_top_logprobs"]) == len(response)
    assert all(len(row) == 2 for row in meta["input_top_logprobs"])
    # The same pads with other pixels (GREEN first makes other grids: refused; RED twice is 4 pads short).
    swapped = prefill(
        [f"data:image/png;base64,{RED}", f"data:image/png;base64,{png_b64((20, 20, 200), (84, 56))}"]
    )
    assert swapped.status_code == 200, swapped.text
    assert [e[0] for e in swapped.json()["meta_info"]["input_token_logprobs"]] != pytest.approx(
        sampled, abs=1e-4
    )
    short = prefill([urls[0], urls[0]])
    assert short.status_code == 400 and short.json()["error"]["param"] == "image_data"
    assert "image tokens" in short.json()["error"]["message"]
    missing = prefill(None)
    assert missing.status_code == 400 and "no images" in missing.json()["error"]["message"]


def test_a_text_only_engine_refuses_image_data(start_server, tiny_model_dir: Path) -> None:
    with start_server(tiny_model_dir) as url, httpx.Client(base_url=url, timeout=60.0) as client:
        body = {"text": "hi", "image_data": [f"data:image/png;base64,{RED}"]}
        out = client.post("/generate", json=body)
        assert out.status_code == 400
        assert out.json()["error"]["param"] == "image_data"
        assert "does not accept images" in out.json()["error"]["message"]

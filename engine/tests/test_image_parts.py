"""Image content parts sent to a text-only model: refused with a 400 that says so.

Scenario: a client sends a screenshot to an engine serving a text-only model; before, the image was turned
into the text `<image>` and answered 200 as if it had been seen. Now the engine says the model does not take
images, so nobody trains on turns whose images the model never saw (test_vision_model.py serves them).
"""

from __future__ import annotations

import httpx
import pytest

from openclaw_engine.chat import image_urls, normalize_messages

PNG_URL = "data:image/png;base64,iVBORw0KGgo="


def screenshot_turns() -> list[dict]:
    return [
        {"role": "system", "content": "You operate a desktop."},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Close the clock."},
                {"type": "image_url", "image_url": {"url": PNG_URL}},
            ],
        },
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "computer_use", "arguments": '{"action": "left_click"}'},
                }
            ],
        },
        {
            "role": "tool",
            "tool_call_id": "call_1",
            "content": [
                {"type": "text", "text": "clicked"},
                {"type": "image", "image": PNG_URL},
            ],
        },
    ]


def test_normalize_messages_marks_image_parts_and_keeps_their_urls() -> None:
    out = normalize_messages(screenshot_turns())
    assert out[1]["content"] == [{"type": "text", "text": "Close the clock."}, {"type": "image"}]
    assert out[3]["content"][1] == {"type": "image"}
    assert image_urls(screenshot_turns()) == [PNG_URL, PNG_URL]


@pytest.mark.parametrize("route", ["/v1/chat/completions", "/tokenize"])
def test_a_text_model_refuses_images(client: httpx.Client, route: str) -> None:
    response = client.post(route, json={"messages": screenshot_turns(), "max_tokens": 2})
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert "does not accept images (it is a text-only model)" in error["message"]
    assert error["param"] == "messages"


def test_a_text_model_still_answers_text(client: httpx.Client) -> None:
    messages = [{"role": "user", "content": [{"type": "text", "text": "Close the clock."}]}]
    response = client.post("/v1/chat/completions", json={"messages": messages, "max_tokens": 2})
    assert response.status_code == 200, response.text


@pytest.mark.parametrize("part", [{"type": "input_audio"}, {"type": "text"}])
def test_other_parts_are_still_rejected(client: httpx.Client, part: dict) -> None:
    response = client.post("/tokenize", json={"messages": [{"role": "user", "content": [part]}]})
    assert response.status_code == 400
    assert "only text and image content parts are supported" in response.json()["error"]["message"]


def test_a_text_model_trainer_refuses_image_samples(tiny_model_dir) -> None:
    from openclaw_engine.errors import EngineError
    from openclaw_engine.trainer import Trainer

    sample = {
        "tokens": [1, 2, 3, 4],
        "response_length": 2,
        "loss_mask": [1, 1],
        "rollout_log_probs": [-1.0, -1.0],
        "reward": 1.0,
        "images": [{"media_type": "image/png", "data": PNG_URL.split(",", 1)[1]}],
    }
    with pytest.raises(EngineError) as refused:
        Trainer(str(tiny_model_dir)).train_step({"step_id": "img", "samples": [sample]})
    assert refused.value.param == "samples[0].images"
    assert "does not accept images (it is a text-only model)" in str(refused.value)

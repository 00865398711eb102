"""Image content parts: accepted in chat and tokenize messages, rendered as the `<image>` placeholder."""

from __future__ import annotations

import httpx
import pytest

from openclaw_engine.chat import IMAGE_PLACEHOLDER, normalize_messages

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


def test_normalize_messages_replaces_image_parts() -> None:
    out = normalize_messages(screenshot_turns())
    assert out[1]["content"] == [
        {"type": "text", "text": "Close the clock."},
        {"type": "text", "text": IMAGE_PLACEHOLDER},
    ]
    assert out[3]["content"][1] == {"type": "text", "text": IMAGE_PLACEHOLDER}
    assert IMAGE_PLACEHOLDER == "<image>"


def test_tokenize_renders_images_as_placeholders(client: httpx.Client) -> None:
    response = client.post("/tokenize", json={"messages": screenshot_turns()})
    assert response.status_code == 200, response.text
    prompt = response.json()["prompt"]
    assert "<|im_start|>user\nClose the clock. <image><|im_end|>" in prompt
    assert "<tool_response>\nclicked <image>\n</tool_response>" in prompt
    assert "base64" not in prompt


def test_chat_accepts_image_parts_and_matches_tokenize(client: httpx.Client) -> None:
    messages = screenshot_turns()
    tokens = client.post("/tokenize", json={"messages": messages}).json()["tokens"]
    response = client.post(
        "/v1/chat/completions",
        json={"messages": messages, "max_tokens": 2, "return_prompt_token_ids": True},
    )
    assert response.status_code == 200, response.text
    assert response.json()["choices"][0]["prompt_token_ids"] == tokens


@pytest.mark.parametrize("part", [{"type": "input_audio"}, {"type": "text"}])
def test_other_parts_are_still_rejected(client: httpx.Client, part: dict) -> None:
    response = client.post("/tokenize", json={"messages": [{"role": "user", "content": [part]}]})
    assert response.status_code == 400
    assert "only text and image content parts are supported" in response.json()["error"]["message"]

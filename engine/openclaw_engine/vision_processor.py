"""The processor of a Qwen2.5-VL model folder, for images only: what turns image bytes into model inputs.

`AutoProcessor` would also build the video processor, which needs torchvision (not an engine dependency);
the engine serves and trains images only, so the processor is Qwen2.5-VL's own class with no video
processor. Its `__call__` is the library's: it resizes and patches each image (`pixel_values`,
`image_grid_thw`) and expands each `<|image_pad|>` of the text to one token per merged patch, so the ids it
returns are exactly what the model consumes.
"""

from __future__ import annotations

import base64
import binascii
import io
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
from transformers import AutoConfig, AutoTokenizer, Qwen2_5_VLProcessor, Qwen2VLImageProcessorPil

if TYPE_CHECKING:
    from PIL import Image


class ImageOnlyProcessor(Qwen2_5_VLProcessor):
    """Qwen2.5-VL's processor without a video processor (its class check refuses None)."""

    def check_argument_for_proper_class(self, argument_name: str, argument: Any) -> Any:
        if argument is None and "video" in argument_name:
            return None
        return super().check_argument_for_proper_class(argument_name, argument)


class ImageError(ValueError):
    """An image part the engine cannot use (not a data URL, not decodable); becomes a 400."""


@dataclass(frozen=True)
class VisionInputs:
    """A prompt with its images, as the model consumes it."""

    input_ids: list[int]  # image pads expanded: one `<|image_pad|>` per merged patch
    pixel_values: torch.Tensor
    image_grid_thw: torch.Tensor


def is_vision_model(model_path: str | Path) -> bool:
    """Whether the folder is a vision-language model (its config has a vision tower)."""
    config = AutoConfig.from_pretrained(str(model_path))
    return getattr(config, "vision_config", None) is not None


def load_processor(model_path: str | Path) -> ImageOnlyProcessor:
    tokenizer = AutoTokenizer.from_pretrained(str(model_path))
    return ImageOnlyProcessor(
        image_processor=Qwen2VLImageProcessorPil.from_pretrained(str(model_path)),
        tokenizer=tokenizer,
        video_processor=None,
        chat_template=tokenizer.chat_template,
    )


def decode_data_url(url: str) -> Image.Image:
    """A `data:image/...;base64,...` URL as an RGB image; anything else is an ImageError."""
    if not url.startswith("data:"):
        raise ImageError(
            "image_url must be a data URL (data:image/png;base64,...); the engine does not fetch URLs"
        )
    header, sep, payload = url.partition(",")
    if not sep or not header.endswith(";base64") or not header[5:].startswith("image/"):
        raise ImageError("image_url must be a base64 image data URL (data:image/<type>;base64,...)")
    return decode_image_bytes(payload)


def decode_image_bytes(data_b64: str) -> Image.Image:
    from PIL import Image, UnidentifiedImageError  # only where images are served or trained

    try:
        raw = base64.b64decode(data_b64, validate=True)
        with Image.open(io.BytesIO(raw)) as image:
            return image.convert("RGB")
    except (binascii.Error, UnidentifiedImageError, OSError) as exc:
        raise ImageError(f"the image could not be decoded: {exc}") from None


def process(processor: ImageOnlyProcessor, prompt: str, images: list[Image.Image]) -> VisionInputs:
    """The model inputs for `prompt` (its image markup in order) and `images`."""
    pad = processor.image_token
    if prompt.count(pad) != len(images):
        raise ImageError(f"the prompt has {prompt.count(pad)} image placeholders for {len(images)} images")
    out = processor(text=[prompt], images=images or None, return_tensors="pt")
    ids = [int(i) for i in out["input_ids"][0].tolist()]
    if not images:
        return VisionInputs(ids, torch.empty(0), torch.empty(0, 3, dtype=torch.long))
    return VisionInputs(ids, out["pixel_values"], out["image_grid_thw"])


def inputs_for_ids(processor: ImageOnlyProcessor, ids: list[int], images: list[Image.Image]) -> VisionInputs:
    """The model inputs for exact ids (each image's pads already expanded) and their images, in order.

    Tokens come from an earlier rendering (a captured turn, a teacher's prompt): the images must make exactly
    as many pad tokens as the ids hold, or the pads would meet other pixels than the ones they were made for.
    """
    pad = processor.image_token_id
    pads = sum(1 for token in ids if token == pad)
    if not images:
        if pads:
            raise ImageError(f"the tokens hold {pads} image tokens but no images came with them")
        return VisionInputs(list(ids), torch.empty(0), torch.empty(0, 3, dtype=torch.long))
    out = processor.image_processor(images=images, return_tensors="pt")
    grid = out["image_grid_thw"]
    expected = int((grid.prod(dim=-1) // processor.image_processor.merge_size**2).sum())
    if pads != expected:
        raise ImageError(f"the tokens hold {pads} image tokens but the images make {expected}")
    return VisionInputs(list(ids), out["pixel_values"], grid)

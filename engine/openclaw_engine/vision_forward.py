"""The one forward pass of a Qwen2.5-VL model that serving and training share.

Qwen2.5-VL places tokens with 3-D rotary positions (time, height, width: an image's patches share a time
position and spread over a grid), so a sequence's positions depend on its image grids. Both the server and
the trainer compute them here from the exact ids and pass them explicitly, so the model never infers them
from state it kept from an earlier call (`rope_deltas`), and a served token's log-prob and the trainer's are
computed the same way.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor


def mrope_positions(model: Any, ids: Tensor, image_grid_thw: Tensor | None) -> Tensor:
    """[3, 1, n] positions of the ids [1, n] (text-only: the 1-D positions on each axis)."""
    n = ids.shape[1]
    if image_grid_thw is None or image_grid_thw.numel() == 0:
        return torch.arange(n, device=ids.device).view(1, 1, n).expand(3, 1, n)
    token_types = (ids == model.config.image_token_id).int()
    positions, _ = _inner(model).get_rope_index(ids, token_types, image_grid_thw=image_grid_thw)
    return positions


def vision_logits(
    model: Any,
    ids: Tensor,
    *,
    pixel_values: Tensor | None,
    image_grid_thw: Tensor | None,
    logits_to_keep: int = 0,
    cache: Any = None,
    positions: Tensor | None = None,
) -> Tensor:
    """Logits [n_kept, V] (float32) of `ids` [1, n]; with `cache`, `positions` are this chunk's."""
    if positions is None:
        positions = mrope_positions(model, ids, image_grid_thw)
    kwargs: dict[str, Any] = {}
    if pixel_values is not None and pixel_values.numel() > 0:
        kwargs = {"pixel_values": pixel_values, "image_grid_thw": image_grid_thw}
    out = model(
        input_ids=ids,
        position_ids=positions,
        logits_to_keep=logits_to_keep,
        use_cache=cache is not None,
        **({"cache": cache} if cache is not None else {}),
        **kwargs,
    )
    return out.logits[0].float()


def _inner(model: Any) -> Any:
    """The Qwen2_5_VLModel inside a ForConditionalGeneration (or inside a PEFT wrapper of one)."""
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    return base.model

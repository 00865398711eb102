"""The training state a checkpoint carries: `trainer_state/state.json`, with the step ids that shaped it.

The reference trainer and the slime launcher both write it, and the caller reads the step ids and metrics back
from it (docs/slime.md, the epoch contract), so its place and the step fingerprint are defined once here.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from .training_schemas import TrainStepRequest

STATE_DIR = "trainer_state"


def state_file(checkpoint: Path) -> Path:
    return checkpoint / STATE_DIR / "state.json"


def write_state(checkpoint: Path, state: dict[str, Any]) -> None:
    path = state_file(checkpoint)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(state, indent=1))


def step_fingerprint(request: TrainStepRequest) -> str:
    """A hash of the batch without its step id: a step id reused for another batch is caught by it.

    A sample's weight of 1 and absent images (the defaults) are left out, so a step hashes as it did before
    samples had weights or images (the fingerprints recorded in older checkpoints still match).
    """
    defaults = {
        i: ({"weight"} if sample.weight == 1.0 else set()) | ({"images"} if sample.images is None else set())
        for i, sample in enumerate(request.samples)
    }
    defaults = {i: fields for i, fields in defaults.items() if fields}
    exclude: dict = {"step_id": True, "samples": defaults} if defaults else {"step_id": True}
    return hashlib.sha256(request.model_dump_json(exclude=exclude).encode()).hexdigest()

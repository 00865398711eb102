"""A training step sent in parts: held until every part has arrived, then trained as one request.

A step whose top-K teacher arrays make its body larger than the server's request body limit is sent as
several `/train_step_part` requests (engine/TRAINING.md). The parts of one step id are kept in memory until
the set is whole; a part of another step id drops them (a client trains one step at a time, and resends the
parts of a step that a restart lost).
"""

from __future__ import annotations

import threading
from typing import Any

from .errors import EngineError
from .training_schemas import TrainSample, TrainStepPartRequest, TrainStepRequest


class StepParts:
    """The parts received so far of the one step being assembled."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._first: TrainStepPartRequest | None = None
        self._samples: dict[int, list[TrainSample]] = {}

    def add(self, request: TrainStepPartRequest) -> TrainStepRequest | dict[str, Any]:
        """The whole step once `request` completes it; until then what is received and what is missing."""
        with self._lock:
            first = self._first
            if first is None or first.step_id != request.step_id:
                first = self._first = request
                self._samples = {}
            elif (request.part.count, request.loss, request.optimizer) != (
                first.part.count,
                first.loss,
                first.optimizer,
            ):
                raise EngineError(
                    f"part {request.part.index} of step {request.step_id!r} disagrees with its earlier parts "
                    "on the part count, the loss or the optimizer",
                    param="part",
                )
            self._samples[request.part.index] = request.samples
            count = first.part.count
            missing = [i for i in range(count) if i not in self._samples]
            if missing:
                return {
                    "step_id": request.step_id,
                    "pending": True,
                    "received": sorted(self._samples),
                    "missing": missing,
                }
            samples = [s for i in range(count) for s in self._samples[i]]
            self._first, self._samples = None, {}
            return TrainStepRequest(
                step_id=first.step_id, samples=samples, loss=first.loss, optimizer=first.optimizer
            )

# Copyright 2026 edge_infer contributors. Apache-2.0.
"""What one model's live choice hands its parts: a small typed context (no ROS).

:class:`.choice.LiveChoice` is made of parts: the background profile behind a
provisional start (:mod:`.startup`), the drift re-evaluation (:mod:`.drift`),
the runners-up (:mod:`.runners_up`), the pacing (:mod:`.pacing`) and the load
watch (:mod:`.load_watch`). Each gets what it needs from this context or by
argument; none reads the chooser's attributes.
"""

from dataclasses import dataclass
import pathlib
import threading
from typing import Any, Callable

from .rule import LiveSettings
from ...core.model import Model
from ...core.registry import ModelSpec

Log = Callable[[str], None]


@dataclass(frozen=True)
class ChoiceContext:
    """One model's live choice: what it chooses for, with what, and how it reports."""

    # the backend manager (profile, select, choose, candidates, config, settle_queue);
    # Any: the run-time choice is below the manager and does not import it
    manager: Any
    spec: ModelSpec
    model_path: pathlib.Path
    settings: LiveSettings
    log: Log
    warn: Log
    clock: Any      # monotonic() and perf_counter(): the time module, or a simulated one
    cancel: threading.Event     # set: background work stops at its next check
    open_model: Callable[[Any], Model]      # a candidate backend -> a Model serving on it
    spawn: Callable[[Callable[[], None], str], None]    # background work, named

    def select(self, results):
        """Return (chosen result or None, why) by the settings' objective and limits."""
        st = self.settings
        return self.manager.select(results, self.spec, st.objective, st.max_latency_ms,
                                   st.min_accuracy, st.latency_percentile)

    def backend(self, name: str) -> Any:
        """Return candidate ``name`` of this model (KeyError: not a candidate)."""
        return {b.name: b for b in self.manager.candidates(self.spec, self.model_path)}[name]

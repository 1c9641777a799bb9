# Copyright 2026 edge_infer contributors. Apache-2.0.
"""An observer of :class:`edge_infer.backends.live.LiveChoice` that keeps what it is told.

Tests read the samples and cues from it; benchmarks write them out, and wait
for a background re-evaluation to end before timing the next frame (one
runtime's re-profiling would slow the others' frames in the same process).
"""

import threading
from typing import List, Tuple

from ..backends.live.load_watch import Observer


class RecordingObserver(Observer):
    """Lists of every sample, foreign load reading and cue; a wait for re-evaluations."""

    def __init__(self):
        self.pairs: List[Tuple[float, str, str, float, float]] = []  # t, chosen, runner, ms x2
        self.loads: List[Tuple[float, float]] = []    # (t, foreign cores)
        self.alerts: List[Tuple[float, str]] = []     # (t, why)
        self.reevaluations = 0                        # started
        self._running = 0
        self._ended = threading.Condition()

    def paired(self, t, chosen, runner, chosen_ms, runner_ms) -> None:
        """Keep one sample."""
        self.pairs.append((t, chosen, runner, chosen_ms, runner_ms))

    def load(self, t, cores) -> None:
        """Keep one foreign load reading."""
        self.loads.append((t, cores))

    def alert(self, t, why) -> None:
        """Keep one cue."""
        self.alerts.append((t, why))

    def reevaluation_started(self) -> None:
        """Count a background re-evaluation as running."""
        with self._ended:
            self.reevaluations += 1
            self._running += 1

    def reevaluation_done(self) -> None:
        """Count it as ended; wake a waiter."""
        with self._ended:
            self._running -= 1
            self._ended.notify_all()

    def wait_reevaluation(self, timeout: float = 120.0) -> bool:
        """Wait for a running re-evaluation to end (not cancelling it); False if none ran."""
        with self._ended:
            if not self._running:
                return False
            self._ended.wait_for(lambda: not self._running, timeout)
            return True

# Copyright 2026 edge_infer contributors. Apache-2.0.
"""Candidates on a simulated clock: :class:`..backends.live.choice.LiveChoice` without inference.

A run advances the clock by the time a latency function gives (a recorded
frame's time, or a seeded noise model), so minutes of frames take a second
and every outcome is the same on every machine. Give the same
:class:`Clock` to the LiveChoice (``clock=``): it and its models read it.
``bench/product/replay_selection.py`` replays a recorded regret run through the
run-time choice with it, and the tests of the switch rule use it.
"""

from typing import Callable, List, Optional

import numpy as np

from ..backends.runtime import Runtime
from ..core.backend import Backend, Session

Latency = Callable[[float], float]      # the clock's time -> ms the run takes


class Clock:
    """A clock that stands still until set or a simulated run advances it (seconds)."""

    def __init__(self, t: float = 1000.0):
        self.t = t

    def monotonic(self) -> float:
        """Return the simulated time."""
        return self.t

    def perf_counter(self) -> float:
        """Return the simulated time (one clock for both)."""
        return self.t


class SimSession(Session):
    """A session whose run takes ``latency(clock.t)`` ms of simulated time."""

    def __init__(self, name: str, clock: Clock, latency: Latency):
        self.backend_name, self.clock, self.latency = name, clock, latency
        self.runs = 0

    def run(self, tensor):
        """Advance the clock by the run's latency; return a zero output."""
        self.runs += 1
        self.clock.t += self.latency(self.clock.t) / 1e3
        return [np.zeros((1, 1000), np.float32)]


class SimBackend(Backend):
    """A candidate that opens :class:`SimSession`s (``threads``: its intra-op threads)."""

    def __init__(self, name: str, clock: Clock, latency: Latency,
                 threads: Optional[int] = None):
        self.name, self.clock, self.latency = name, clock, latency
        self.intra_op_threads = threads

    def open_session(self, model_path, strict=False, input_spec=None):
        """Return a new simulated session."""
        return SimSession(self.name, self.clock, self.latency)


class SimManager:
    """The part of the backend manager LiveChoice uses at run time: the candidates."""

    config = {'latency_percentile': 50}

    def __init__(self, backends: List[Backend]):
        self.backends = backends
        self.runtime = Runtime()    # one simulated process's

    def candidates(self, spec=None, model_path=None) -> List[Backend]:
        """Return the simulated candidates."""
        return list(self.backends)

    def profiling(self) -> bool:
        """Return False: no profile runs beside a simulated node."""
        return False

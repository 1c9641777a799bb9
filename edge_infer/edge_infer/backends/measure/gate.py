# Copyright 2026 edge_infer contributors. Apache-2.0.
"""Our own frames and a profile's timed runs never overlap (no ROS).

A profile that runs while the node serves frames (the background profile of
a first start, a drift re-evaluation) would time its candidates on a board
busy with our own inference, and a first start's figures are cached as the
board's profile. :data:`GATE` keeps the two apart: a frame holds it shared
(several models' frames run side by side, as before); a timed run of a
candidate holds it alone, so it waits for the frames in flight and holds the
next ones back for its length (a few ms; a few hundred for a slow candidate,
such as ncnn on a software Vulkan device). Uncontended, a frame pays one
lock round trip (about a microsecond).
"""

import contextlib
import threading


class ComputeGate:
    """A shared / exclusive lock: frames share it, a profile's timed runs take it alone.

    Writer-preferring: once a timed run waits, new frames wait behind it, so a
    steady stream of frames cannot starve the profile.
    """

    def __init__(self):
        """Start open."""
        self._cond = threading.Condition(threading.Lock())
        self._shared = 0
        self._exclusive = False
        self._waiting = 0
        self._limit = 0         # most shared holders at once (0 = no limit)
        self._forward = None    # a measuring child's: the serving process holds it

    @property
    def limit(self) -> int:
        """Return the most frames that may run at once (0 = no limit)."""
        return self._limit

    def set_limit(self, limit: int) -> None:
        """Let at most ``limit`` frames run at once (0 = no limit): the host's share of cores.

        Frames over the limit wait for one in flight to end (host_budget.FairShare
        sets it when other processes on the host run inference too).
        """
        with self._cond:
            self._limit = max(0, int(limit))
            self._cond.notify_all()

    def _full(self) -> bool:
        return bool(self._limit) and self._shared >= self._limit

    @contextlib.contextmanager
    def shared(self):
        """Hold the gate beside other shared holders (one frame's inference)."""
        with self._cond:
            while self._exclusive or self._waiting or self._full():
                self._cond.wait()
            self._shared += 1
        try:
            yield
        finally:
            with self._cond:
                self._shared -= 1
                if not self._shared or self._limit:
                    self._cond.notify_all()

    def forward(self, hold) -> None:
        """Take every exclusive hold with ``hold()`` (a context manager) instead.

        In a measuring child (:mod:`.apart`): the frames it must keep apart
        from run in the serving process, whose gate ``hold`` takes.
        """
        self._forward = hold

    @contextlib.contextmanager
    def exclusive(self):
        """Hold the gate alone (one timed run of a candidate)."""
        if self._forward is not None:
            with self._forward():
                yield
            return
        with self._cond:
            self._waiting += 1
            try:
                while self._exclusive or self._shared:
                    self._cond.wait()
            finally:
                self._waiting -= 1
            self._exclusive = True
        try:
            yield
        finally:
            with self._cond:
                self._exclusive = False
                self._cond.notify_all()


GATE = ComputeGate()  # process-wide: every model's frames and every profile

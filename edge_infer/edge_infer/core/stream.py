# Copyright 2026 edge_infer contributors. Apache-2.0.
"""Newest-frame hand-off and per-stream counters (no ROS).

Cameras run faster than models. :class:`LatestSlot` holds at most one pending
frame: a new frame replaces an unconsumed one, which is counted as dropped.
Memory is bounded by one frame per stream whatever the camera rate.
"""

from collections import deque
import threading
import time
from typing import Any, Deque, Dict, Optional

import numpy as np


class LatestSlot:
    """A one-element mailbox between the subscription and the inference worker."""

    def __init__(self):
        self._cond = threading.Condition()
        self._item: Any = None
        self._has = False
        self._closed = False

    def put(self, item: Any) -> bool:
        """Store ``item``; return True when it replaced a frame nobody took (a drop)."""
        with self._cond:
            dropped = self._has
            self._item, self._has = item, True
            self._cond.notify()
            return dropped

    def take(self, timeout: Optional[float] = None) -> Any:
        """Return the newest item, waiting up to ``timeout`` s; None if none or closed."""
        with self._cond:
            if not self._has and not self._closed:
                self._cond.wait(timeout)
            if not self._has:
                return None
            item, self._item, self._has = self._item, None, False
            return item

    def clear(self) -> bool:
        """Discard a pending item; return True if there was one."""
        with self._cond:
            had, self._item, self._has = self._has, None, False
            return had

    def close(self) -> None:
        """Wake a waiting taker for good (it then gets None)."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    def reopen(self) -> None:
        """Allow waiting again after :meth:`close`."""
        with self._cond:
            self._closed = False


class StreamStats:
    """Counters and a bounded latency window for one input stream.

    received = processed + dropped + rejected + (at most one in flight);
    ``lost`` counts frames the middleware reported lost before delivery
    (the subscription's message-lost event: e.g. a frame larger than the
    transport carries): they were never received.
    """

    def __init__(self, window: int = 1000):
        self._lock = threading.Lock()
        self.received = 0
        self.processed = 0
        self.dropped = 0
        self.rejected = 0
        self.lost = 0               # lost in transport (message-lost event), never received
        self.energy_missing = 0     # frames whose energy no power sample covered
        self.energy_after_stop = 0  # energy records dropped: ~/energy or the context gone
        self.fallbacks = 0          # backends replaced after raising mid-run
        self.debug_images = 0       # ~/debug_image messages drawn and published
        self.last_error = ''
        self._latency: Deque[float] = deque(maxlen=window)
        self._stages: Dict[str, Deque[float]] = {}      # stage name -> recent times (ms)
        self._stage_totals: Dict[str, float] = {}       # stage name -> ms since the start
        self._rejected_at: Deque[float] = deque(maxlen=window)  # time.monotonic() of rejections

    def count(self, what: str, n: int = 1) -> None:
        """Add ``n`` to one counter (received, processed, dropped, rejected, energy_*, ...)."""
        with self._lock:
            setattr(self, what, getattr(self, what) + n)

    def reject(self, reason: str) -> None:
        """Count a rejected frame and remember why."""
        with self._lock:
            self.rejected += 1
            self.last_error = reason
            self._rejected_at.append(time.monotonic())

    def rejected_within(self, seconds: float, now: Optional[float] = None) -> int:
        """Return how many frames were rejected in the last ``seconds`` (at most ``window``)."""
        now = time.monotonic() if now is None else now
        with self._lock:
            return sum(1 for t in self._rejected_at if now - t <= seconds)

    def add_latency(self, ms: float, stages=None) -> None:
        """Record one frame's processing time in ms (and, optionally, its stages' times)."""
        with self._lock:
            self._latency.append(ms)
            if stages:
                for name, value in stages.items():
                    q = self._stages.get(name)
                    if q is None:
                        q = self._stages[name] = deque(maxlen=self._latency.maxlen)
                    q.append(value)
                    self._stage_totals[name] = self._stage_totals.get(name, 0.0) + value

    def stage_medians(self) -> dict:
        """Return {stage: median ms} over the window (where the frame's time went)."""
        with self._lock:
            stages = {k: list(v) for k, v in self._stages.items()}
        return {k: float(np.median(v)) for k, v in stages.items() if v}

    def stage_totals(self) -> dict:
        """Return {stage: ms summed over every frame so far}.

        Two readings and the two ``processed`` counts give each stage's mean
        over exactly the frames between them (what ``edge_infer benchmark``
        reports per probe); the means add up to the frame's mean time.
        """
        with self._lock:
            return dict(self._stage_totals)

    def percentiles(self, *qs: float) -> list:
        """Return latency percentiles in ms over the window (NaN when empty)."""
        with self._lock:
            data = np.fromiter(self._latency, float, len(self._latency))
        if data.size == 0:
            return [float('nan')] * len(qs)
        return [float(v) for v in np.percentile(data, qs)]

    def snapshot(self) -> dict:
        """Return the counters as a dict (for diagnostics)."""
        with self._lock:
            return {'received': self.received, 'processed': self.processed,
                    'dropped': self.dropped, 'rejected': self.rejected, 'lost': self.lost,
                    'energy_missing': self.energy_missing,
                    'energy_after_stop': self.energy_after_stop, 'last_error': self.last_error,
                    'fallbacks': self.fallbacks}

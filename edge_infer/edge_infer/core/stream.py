# Copyright 2026 edge_infer contributors. Apache-2.0.
"""Newest-frame hand-off and per-stream counters (no ROS).

Cameras run faster than models. :class:`LatestSlot` holds at most one pending
frame: a new frame replaces an unconsumed one, which is counted as dropped.
Memory is bounded by one frame per stream whatever the camera rate.
"""

from collections import deque
import threading
import time
from typing import Any, Deque, Dict, List, Optional, Tuple

import numpy as np


class Slots:
    """Several cameras' newest-frame slots, taken by one worker, the oldest arrival first.

    Each camera has one slot (:class:`LatestSlot`'s rule: a new frame replaces
    one nobody took, a drop). :meth:`take` returns the frame of the camera
    that has waited longest: a camera that floods only ever replaces its own
    frame, which keeps its camera's place in the queue, so every camera with
    a frame is served once before any is served twice (round robin by
    arrival) and none starves.
    """

    def __init__(self, n: int):
        self._cond = threading.Condition()
        self._items: List[Any] = [None] * n
        self._order = [0] * n       # arrival number of each slot's frame (0: empty)
        self._arrivals = 0
        self._closed = False
        self._held = [False] * n    # a taker is still on this camera's last frame

    def _ready(self) -> List[Tuple[int, int]]:
        """Return (arrival, camera) of the frames that may be taken (lock held)."""
        return [(o, i) for i, o in enumerate(self._order) if o and not self._held[i]]

    def put(self, i: int, item: Any) -> bool:
        """Store camera ``i``'s ``item``; return True when it replaced one nobody took.

        A replaced frame's place in the queue is kept: the camera waits its
        turn once, with its newest frame. (Were the place renewed, a camera
        whose frames kept being replaced would keep falling behind the
        others: under overload one camera of four then kept 0.35-0.8 of its
        frames while another kept 0.92-1.0.)
        """
        with self._cond:
            dropped = self._order[i] != 0
            if not dropped:
                self._arrivals += 1
                self._order[i] = self._arrivals
            self._items[i] = item
            self._cond.notify()
            return dropped

    def take(self, timeout: Optional[float] = None,
             hold: bool = False) -> Optional[Tuple[int, Any]]:
        """Return (camera, item) of the oldest waiting frame, waiting up to ``timeout`` s.

        None when none came in time, or the slots are closed. ``hold``: the
        camera is held until :meth:`done`: no other taker gets its next frame
        meanwhile, so one camera's frames are never worked on at once.
        """
        with self._cond:
            if not self._ready() and not self._closed:
                self._cond.wait_for(lambda: self._ready() or self._closed, timeout)
            waiting = self._ready()
            if not waiting:
                return None
            i = min(waiting)[1]
            item, self._items[i], self._order[i] = self._items[i], None, 0
            self._held[i] = hold
            return i, item

    def done(self, cameras) -> None:
        """Release the cameras a taker held (:meth:`take`'s ``hold``)."""
        with self._cond:
            for i in cameras:
                self._held[i] = False
            self._cond.notify_all()

    def take_many(self, timeout: Optional[float] = None, wait_s: float = 0.0,
                  hold: bool = False, at_least: int = 1) -> List[Tuple[int, Any]]:
        """Return every camera's waiting frame, the oldest arrival first ([] : none in time).

        Waits up to ``timeout`` s for a first frame; then, with ``wait_s`` > 0,
        up to ``wait_s`` more for the cameras that have none yet (a batch's
        timeout: DeepStream nvstreammux's ``batched-push-timeout``). A camera
        that sends again meanwhile replaces its frame (a drop, as always).
        ``hold``: as :meth:`take`'s, for every camera taken. Fewer than
        ``at_least`` waiting then: only the oldest is taken (a batch too small
        to pay is left to the other takers, frame by frame).
        """
        with self._cond:
            if not self._ready() and not self._closed:
                self._cond.wait_for(lambda: self._ready() or self._closed, timeout)
            free = [i for i, held in enumerate(self._held) if not held]
            if self._ready() and wait_s > 0:
                end = time.monotonic() + wait_s
                self._cond.wait_for(lambda: all(self._order[i] for i in free) or
                                    self._closed or time.monotonic() >= end, wait_s)
            taken = sorted(self._ready())
            if len(taken) < at_least:
                taken = taken[:1]
            out = [(i, self._items[i]) for _, i in taken]
            for _, i in taken:
                self._items[i], self._order[i], self._held[i] = None, 0, hold
            return out

    def clear(self) -> List[int]:
        """Discard every pending frame (and holds); return the cameras that had one."""
        with self._cond:
            had = [i for i, o in enumerate(self._order) if o]
            self._items = [None] * len(self._items)
            self._order = [0] * len(self._order)
            self._held = [False] * len(self._held)
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


class LatestSlot:
    """A one-element mailbox between the subscription and the inference worker."""

    def __init__(self):
        self._slots = Slots(1)

    def put(self, item: Any) -> bool:
        """Store ``item``; return True when it replaced a frame nobody took (a drop)."""
        return self._slots.put(0, item)

    def take(self, timeout: Optional[float] = None) -> Any:
        """Return the newest item, waiting up to ``timeout`` s; None if none or closed."""
        got = self._slots.take(timeout)
        return None if got is None else got[1]

    def clear(self) -> bool:
        """Discard a pending item; return True if there was one."""
        return bool(self._slots.clear())

    def close(self) -> None:
        """Wake a waiting taker for good (it then gets None)."""
        self._slots.close()

    def reopen(self) -> None:
        """Allow waiting again after :meth:`close`."""
        self._slots.reopen()


class StreamStats:
    """Counters and a bounded latency window for one input stream.

    received = processed + dropped + rejected + (at most one in flight);
    ``lost`` counts frames the middleware reported lost before delivery
    (the subscription's message-lost event: e.g. a frame larger than the
    transport carries): they were never received.
    """

    def __init__(self, window: int = 1000, parent: Optional['StreamStats'] = None):
        """``parent``: the node's totals, counted too (one camera's of several)."""
        self._lock = threading.Lock()
        self.parent = parent
        self.received = 0
        self.processed = 0
        self.dropped = 0
        self.rejected = 0
        self.lost = 0               # lost in transport (message-lost event), never received
        self.batched = 0            # processed in one run with other cameras' frames
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
        if self.parent is not None:
            self.parent.count(what, n)

    def reject(self, reason: str) -> None:
        """Count a rejected frame and remember why."""
        with self._lock:
            self.rejected += 1
            self.last_error = reason
            self._rejected_at.append(time.monotonic())
        if self.parent is not None:
            self.parent.reject(reason)

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
        if self.parent is not None:
            self.parent.add_latency(ms, stages)

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
                    'batched': self.batched,
                    'energy_missing': self.energy_missing,
                    'energy_after_stop': self.energy_after_stop, 'last_error': self.last_error,
                    'fallbacks': self.fallbacks}

# Copyright 2026 edge_infer contributors. Apache-2.0.
"""Our own frames and a profile's timed runs never overlap (no ROS).

A profile that runs while the node serves frames (the background profile of
a first start, a drift re-evaluation) would time its candidates on a board
busy with our own inference, and a first start's figures are cached as the
board's profile. The process's :class:`ComputeGate` (its runtime's,
:mod:`..runtime`) keeps the two apart: a frame holds it shared
(several models' frames run side by side, as before); a timed run of a
candidate holds it alone, so it waits for the frames in flight and holds the
next ones back for its length (a few ms; a few hundred for a slow candidate,
such as ncnn on a software Vulkan device). Uncontended, a frame pays one
lock round trip (about a microsecond).

Where the host's share of cores limits the frames that run at once
(:meth:`ComputeGate.set_limit`), the waiting frames go in by ``order``:
``arrival`` (first come, first in), ``longest_first`` (the model whose
frames held the gate longest, as measured here: its mean over recent
frames, first; the makespan of the frames that arrived together is
shortest, so the slowest model, which sets the graph's peak rate, waits
least), ``shortest_first`` (the least mean latency over the models) or
``adaptive``: shortest first while the frames keep the slots less than
``BUSY`` busy (each model's measured hold time over its measured frame
interval, summed, over the limit: every model keeps up, and the light ones
need not wait behind the heavy one), first come first in above it (near
the peak rate shortest first starves the slowest model).
The container's ``frame_order`` parameter sets it; ``edge_infer
benchmark`` compares them on the board.
"""

import contextlib
import itertools
import threading
import time
from typing import Dict, List, Optional, Tuple

ORDERS = ('adaptive', 'arrival', 'longest_first', 'shortest_first')
BUSY = 0.5      # adaptive: shortest first while the frames use under this share of the slots


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
        self.order = 'arrival'  # how waiting frames go in when the limit is reached (ORDERS)
        self._queue: List[Tuple[float, int]] = []     # waiting frames: (rank, ticket)
        self._tickets = itertools.count()
        self._cost: Dict[str, float] = {}             # key -> mean hold, ms (recent frames)
        self._period: Dict[str, Tuple[float, float]] = {}   # key -> (last arrival, mean gap s)
        self._waited: Dict[str, float] = {}           # key -> ms its frames waited, summed

    def set_order(self, order: str) -> None:
        """Let waiting frames go in by ``order`` (one of ORDERS)."""
        if order not in ORDERS:
            raise ValueError(f"frame order '{order}': use one of {', '.join(ORDERS)}")
        self.order = order

    def waited_ms(self, key: str) -> float:
        """Return the time ``key``'s frames waited to go in, summed since the start (ms)."""
        return self._waited.get(key, 0.0)

    def cost_ms(self, key: str) -> float:
        """Return the mean time ``key``'s frames held the gate (NaN: none yet)."""
        return self._cost.get(key, float('nan'))

    def busy(self) -> float:
        """Return the share of the slots in use: each model's hold time over its gap, summed."""
        used = sum(self._cost.get(k, 0.0) / 1e3 / gap for k, (_, gap) in self._period.items()
                   if gap > 0)
        return used / max(1, self._limit)

    def _arrived(self, key: str) -> None:
        now = time.monotonic()
        last, gap = self._period.get(key, (None, 0.0))
        if last is not None:
            dt = min(now - last, 2.0)       # a pause counts as a slow stream, not forever
            gap = dt if gap <= 0 else 0.8 * gap + 0.2 * dt
        self._period[key] = (now, gap)

    def _rank(self, key: Optional[str], ticket: int) -> float:
        if not self._limit:
            return float(ticket)    # nobody waits for a slot: the order is not asked
        cost = self._cost.get(key, 0.0) if key is not None else 0.0
        order = self.order
        if order == 'adaptive':
            order = 'shortest_first' if self.busy() < BUSY else 'arrival'
        if order == 'longest_first':
            return -cost
        if order == 'shortest_first':
            return cost
        return float(ticket)

    def _ahead(self, me: Tuple[float, int]) -> int:
        return sum(1 for other in self._queue if other < me)

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
    def shared(self, key: Optional[str] = None):
        """Hold the gate beside other shared holders (one frame's inference of ``key``).

        ``key`` (a model's name): its frames' hold times are measured, and
        rank it among the waiting frames when the limit is reached.
        """
        with self._cond:
            if key is not None:
                self._arrived(key)
            ticket = next(self._tickets)
            me = (self._rank(key, ticket), ticket)
            self._queue.append(me)
            t_wait = time.perf_counter()
            try:
                while self._exclusive or self._waiting or self._full() or (
                        self._limit and self._ahead(me) >= self._limit - self._shared):
                    self._cond.wait()
            finally:
                self._queue.remove(me)
                if self._limit and self._queue:
                    self._cond.notify_all()     # the next in line may go in beside it
            self._shared += 1
            t0 = time.perf_counter()
            if key is not None:
                self._waited[key] = self._waited.get(key, 0.0) + (t0 - t_wait) * 1e3
        try:
            yield
        finally:
            ms = (time.perf_counter() - t0) * 1e3
            with self._cond:
                self._shared -= 1
                if key is not None:
                    old = self._cost.get(key)
                    self._cost[key] = ms if old is None else 0.8 * old + 0.2 * ms
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

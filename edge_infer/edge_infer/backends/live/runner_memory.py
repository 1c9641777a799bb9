# Copyright 2026 edge_infer contributors. Apache-2.0.
"""The memory the runners-up of a whole process may hold at once (no ROS).

Every model's run-time choice opens its runners-up for a look (a fresh
choice, a load change, a drift alarm, a routine look). Each is a whole
session: 25-80 MB for a small model on OpenVINO. In the four-model
container all four models looked at once (each node's drift alarm fires in
the first seconds, since a model shares the cores there and was profiled
alone), and 8 runners-up held ~200 MB on top of the ~400 MB that serves
(bench/product/memory_parts.py, bench/product/footprint.py). :class:`RunnerMemory` makes the
looks take turns within a budget in MB: a look opens when the runner-up
sessions open in the process, its own included, stay within the asking
node's ``runners_memory_mb``. One look may always run alone, so a budget
smaller than one model's runners-up still lets every model look, in turn.
Waiting looks are granted first come, first served.

A look's size is what opening its runners-up added to the process's RSS
the last time (:meth:`RunnerMemory.measured`); unknown before the first
look, which therefore waits until no other look is open.
"""

import threading
from typing import Dict, Optional
import weakref

import psutil

STALE_ASKS = 50     # a waiting look not asked again while others asked this often: gone


class RunnerMemory:
    """One process's (one manager's): who holds runner-up memory, how much, who waits."""

    def __init__(self):
        self._lock = threading.Lock()
        self._held: Dict[int, tuple] = {}       # id(owner) -> (weakref, MB; 0: not measured)
        self._waiting: Dict[int, tuple] = {}    # id(owner) -> (weakref, tick of its last ask)
        self._tick = 0
        self.grants = 0                         # looks granted (tests, diagnostics)
        self.denials = 0                        # times a look was told to wait

    def _tidy(self) -> None:
        """Drop owners that are gone, and waiting looks that stopped asking (lock held)."""
        for table in (self._held, self._waiting):
            for key in [k for k, (ref, _) in table.items() if ref() is None]:
                del table[key]
        for key in [k for k, (_, t) in self._waiting.items() if self._tick - t > STALE_ASKS]:
            del self._waiting[key]

    def acquire(self, owner: object, want_mb: Optional[float], limit_mb: float) -> bool:
        """Return True when ``owner``'s look may open ``want_mb`` MB of runners-up now.

        ``want_mb``: None when not known yet (it waits until no look is open);
        ``limit_mb``: the owner's budget for all open runners-up in the
        process (0: no limit). A denied owner keeps its place in the queue
        while it keeps asking (a node whose frames stopped leaves it).
        """
        key = id(owner)
        with self._lock:
            self._tick += 1
            self._tidy()
            if key in self._held:
                return True
            if limit_mb > 0:
                self._waiting[key] = (weakref.ref(owner), self._tick)   # keeps its place
                ahead = next(iter(self._waiting)) != key
                used = sum(mb for _, mb in self._held.values())
                fits = not self._held or (want_mb is not None and used + want_mb <= limit_mb)
                if ahead or not fits:
                    self.denials += 1
                    return False
                del self._waiting[key]
            self._held[key] = (weakref.ref(owner), want_mb or 0.0)
            self.grants += 1
            return True

    def measured(self, owner: object, mb: float) -> None:
        """Record what ``owner``'s open runners-up hold (RSS added by opening them)."""
        with self._lock:
            held = self._held.get(id(owner))
            if held is not None:
                self._held[id(owner)] = (held[0], max(0.0, float(mb)))

    def release(self, owner: object) -> None:
        """``owner`` closed its runners-up: its memory is free for the next look."""
        with self._lock:
            self._held.pop(id(owner), None)

    def forget(self, owner: object) -> None:
        """``owner`` is gone: release what it holds and leave the queue."""
        with self._lock:
            self._held.pop(id(owner), None)
            self._waiting.pop(id(owner), None)

    def held_mb(self) -> float:
        """Return the MB the open looks hold (as measured)."""
        with self._lock:
            self._tidy()
            return sum(mb for _, mb in self._held.values())

    def holders(self) -> int:
        """Return how many models have their runners-up open."""
        with self._lock:
            self._tidy()
            return len(self._held)

    def waiting(self) -> int:
        """Return how many looks wait for memory."""
        with self._lock:
            self._tidy()
            return len(self._waiting)


def rss_mb() -> float:
    """Return this process's resident memory in MB."""
    return psutil.Process().memory_info().rss / 1e6

# Copyright 2026 edge_infer contributors. Apache-2.0.
"""The depth frame nearest a result's stamp, within a tolerance (no ROS, thread-safe).

The node's depth subscription ``add``s each frame under its header stamp;
the frame worker asks ``nearest`` with the colour frame's stamp once its
result is ready. One path on every robot: message_filters' Python ``Cache``
(Jazzy 4.11.2) has no nearest lookup (only the newest at or before a stamp
and the oldest at or after it), takes no lock although the subscription and
the worker are different threads, appends without sorting (its comment says
"insert sorted"), and reads ``msg.header.stamp`` from deserialized messages,
where the node subscribes raw (CDR bytes, pixels not copied). See
docs/depth.md.
"""

import bisect
from collections import Counter
import threading
from typing import Any, List, Optional, Tuple


class DepthBuffer:
    """The latest depth frames by stamp, for the frame nearest a result's (thread-safe).

    The depth subscription ``add``s, the frame worker asks ``nearest``; the
    ``capacity`` newest stamps are kept. ``unmatched`` counts the lookups that
    found none, by NO_DEPTH_YET or TOO_FAR.

    A result may be ready before its own depth frame has been taken (the two
    topics are separate subscriptions; a fast model or a busy executor):
    ``nearest(stamp, wait_s)`` then waits up to ``wait_s`` for a frame at or
    after the stamp instead of taking an older one or none. A depth stream
    that is silent costs that wait once: a wait that saw no frame at all
    turns waiting off until the next frame comes.
    """

    NO_DEPTH_YET = 'no depth yet'
    TOO_FAR = 'depth stamp too far'

    def __init__(self, capacity: int = 10, tolerance_s: float = 0.05):
        if capacity < 1:
            raise ValueError(f'capacity {capacity}: must be >= 1')
        if not tolerance_s >= 0:
            raise ValueError(f'tolerance_s {tolerance_s}: must be >= 0')
        self.capacity = int(capacity)
        self.tolerance_s = float(tolerance_s)
        self._stamps: List[float] = []
        self._items: List[Any] = []
        self._lock = threading.Lock()
        self._arrived = threading.Condition(self._lock)
        self._silent = False        # the last wait saw no frame: do not wait again until one
        self._added = 0             # frames added, ever
        self.matched = 0
        self.unmatched: Counter = Counter()

    def __len__(self) -> int:
        with self._lock:
            return len(self._stamps)

    def add(self, stamp_s: float, item: Any) -> None:
        """Keep ``item`` under its stamp (one per stamp: a repeat replaces it)."""
        stamp_s = float(stamp_s)
        with self._lock:
            i = bisect.bisect_left(self._stamps, stamp_s)
            if i < len(self._stamps) and self._stamps[i] == stamp_s:
                self._items[i] = item
                return
            self._stamps.insert(i, stamp_s)
            self._items.insert(i, item)
            if len(self._stamps) > self.capacity:
                del self._stamps[0], self._items[0]
            self._added += 1
            self._silent = False
            self._arrived.notify_all()

    def newest(self) -> Optional[float]:
        """Return the newest frame's stamp (seconds), or None before the first."""
        with self._lock:
            return self._stamps[-1] if self._stamps else None

    def clear(self) -> None:
        """Forget every frame (on deactivation)."""
        with self._lock:
            self._stamps.clear()
            self._items.clear()

    def nearest(self, stamp_s: float, wait_s: float = 0.0) -> Tuple[Optional[Any], str]:
        """Return (the item nearest ``stamp_s`` within the tolerance, '') or (None, why).

        ``wait_s``: while no frame at or after ``stamp_s`` is here, wait up to
        this long (wall seconds) for one; not after a wait that saw no frame.
        """
        stamp_s = float(stamp_s)
        with self._lock:
            if wait_s > 0 and not self._silent and not self._reached(stamp_s):
                added = self._added
                self._arrived.wait_for(lambda: self._reached(stamp_s), timeout=wait_s)
                self._silent = self._added == added
            if not self._stamps:
                self.unmatched[self.NO_DEPTH_YET] += 1
                return None, self.NO_DEPTH_YET
            i = bisect.bisect_left(self._stamps, stamp_s)
            near = [j for j in (i - 1, i) if 0 <= j < len(self._stamps)]
            j = min(near, key=lambda j: abs(self._stamps[j] - stamp_s))
            gap = abs(self._stamps[j] - stamp_s)
            if gap > self.tolerance_s:
                self.unmatched[self.TOO_FAR] += 1
                return None, (f'nearest depth {gap:.3f} s away (tolerance '
                              f'{self.tolerance_s:.3f} s)')
            self.matched += 1
            return self._items[j], ''

    def _reached(self, stamp_s: float) -> bool:
        """Return True once a frame at or after ``stamp_s`` is here (the lock held)."""
        return bool(self._stamps) and self._stamps[-1] >= stamp_s

# Copyright 2026 edge_infer contributors. Apache-2.0.
"""What a perception stream's /diagnostics level says, from its counters over time (no ROS).

The levels are diagnostic_msgs/DiagnosticStatus's (OK 0, WARN 1, ERROR 2,
STALE 3), judged at each diagnostics tick from the node's cumulative
counters, so nothing is added to the per-frame path:

- **STALE**: active, and no result published for ``stale_after_s`` (since
  the last result, or since activation): the node says so itself, as the
  diagnostic_aggregator would of a status that stopped coming. The message
  tells a silent camera from frames that arrive but yield nothing.
- **WARN**: more than ``drop_rate_warn`` of the frames received over the last
  ``window_s`` were dropped (replaced by a newer one before the model took
  them: the model does not keep up with the camera).

:class:`StreamHealth` keeps one counter sample per tick over the window; the
caller adds the other reasons (a failed transition is ERROR, rejected
frames WARN).
"""

from collections import deque
from typing import Deque, List, Tuple

OK, WARN, ERROR, STALE = 0, 1, 2, 3


class StreamHealth:
    """Drop rate over a window and time since the last result, from counter samples."""

    def __init__(self):
        self._samples: Deque[Tuple[float, int, int]] = deque()   # (t, received, dropped)
        self._running = False
        self._processed = -1
        self._progress_t = 0.0      # last result, or activation
        self._received_then = 0     # frames received by then

    def update(self, now: float, running: bool, received: int, dropped: int,
               processed: int) -> None:
        """Take one sample of the counters (each diagnostics tick)."""
        if running and not self._running:   # (re)activated: start afresh
            self._samples.clear()
            self._progress_t, self._processed, self._received_then = now, processed, received
        self._running = running
        if processed != self._processed:
            self._progress_t, self._processed, self._received_then = now, processed, received
        self._samples.append((now, received, dropped))

    def drop_rate(self, now: float, window_s: float) -> Tuple[float, int, int]:
        """Return (dropped / received, received, dropped) over the last ``window_s``."""
        while len(self._samples) > 1 and self._samples[1][0] <= now - window_s:
            self._samples.popleft()     # keep one sample at or before the window's start
        if not self._samples:
            return 0.0, 0, 0
        (_, r0, d0), (_, r1, d1) = self._samples[0], self._samples[-1]
        received, dropped = r1 - r0, d1 - d0
        return (dropped / received if received > 0 else 0.0), received, dropped

    def idle_s(self, now: float) -> float:
        """Return the seconds since the last result (or activation); 0 while inactive."""
        return now - self._progress_t if self._running else 0.0

    def judge(self, now: float, received: int, topic: str, window_s: float,
              drop_rate_warn: float, stale_after_s: float) -> Tuple[int, List[str]]:
        """Return (level, reasons) of the last sample: STALE, WARN or OK (no reasons)."""
        if not self._running:
            return OK, []
        idle = self.idle_s(now)
        if stale_after_s > 0 and idle >= stale_after_s:
            arrived = received - self._received_then
            what = (f'{arrived} frame(s) received on {topic} meanwhile, none processed'
                    if arrived else f'no frame received on {topic}')
            return STALE, [f'no result published for {idle:.1f} s ({what})']
        rate, got, dropped = self.drop_rate(now, window_s)
        if drop_rate_warn > 0 and got and rate > drop_rate_warn:
            return WARN, [f'{dropped} of {got} frames dropped in the last {window_s:g} s '
                          f'({rate:.0%} > {drop_rate_warn:.0%}): the model does not keep up '
                          f'with the camera']
        return OK, []

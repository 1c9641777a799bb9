# Copyright 2026 edge_infer contributors. Apache-2.0.
"""Runtime drift: notice when a model's observed latency stays off its profile.

Seed 004's situation: another process starts loading the accelerator and the
profiled choice is no longer the best. The monitor watches each frame's
inference latency; it fires when, over a window of at least ``window_s``
seconds and ``min_samples`` frames, the MEDIAN latency exceeds
``threshold`` x the profiled p50. One slow frame never fires it. After it
fires it stays quiet for ``cooldown_s`` (the re-evaluation runs meanwhile),
and :meth:`rebase` sets the new expectation.
"""

from collections import deque
import statistics
import time
from typing import Optional


class DriftMonitor:
    """Sliding-window median latency against the profiled p50."""

    def __init__(self, expected_ms: float, threshold: float = 1.5, window_s: float = 5.0,
                 min_samples: int = 10, cooldown_s: float = 30.0):
        if threshold <= 1.0:
            raise ValueError(f'drift threshold must be > 1 (a ratio), got {threshold}')
        if window_s <= 0 or min_samples < 1:
            raise ValueError('drift window and min_samples must be positive')
        self.expected_ms = float(expected_ms)
        self.threshold = float(threshold)
        self.window_s = float(window_s)
        self.min_samples = int(min_samples)
        self.cooldown_s = float(cooldown_s)
        self._samples: deque = deque()
        self._quiet_until = -float('inf')
        self.fired = 0
        self.last_median_ms = float('nan')

    def add(self, latency_ms: float, now: Optional[float] = None) -> bool:
        """Record one frame's latency; return True when drift is detected (now)."""
        now = time.monotonic() if now is None else now
        self._samples.append((now, float(latency_ms)))
        while self._samples and self._samples[0][0] < now - self.window_s:
            self._samples.popleft()
        if now < self._quiet_until or len(self._samples) < self.min_samples:
            return False
        if now - self._samples[0][0] < 0.8 * self.window_s:
            return False    # the window is not yet covered: too early to call it sustained
        self.last_median_ms = statistics.median(v for _, v in self._samples)
        if self.last_median_ms > self.threshold * self.expected_ms:
            self.fired += 1
            self._quiet_until = now + self.cooldown_s
            self._samples.clear()
            return True
        return False

    def rebase(self, expected_ms: float) -> None:
        """Set a new expected latency (after a re-evaluation) and start over."""
        self.expected_ms = float(expected_ms)
        self._samples.clear()

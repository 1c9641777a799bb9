# Copyright 2026 edge_infer contributors. Apache-2.0.
"""Foreign load on a shared-executor device, for tests and benchmarks (not used by the nodes).

:class:`LoadGenerator` queues jobs of real arithmetic on one
:class:`~edge_infer.executor.core.Device`, ahead of the executor's own, as
another application's kernels time-slicing an accelerator would.
"""

import threading
import time
from typing import Optional

import numpy as np

from ..executor.core import Device, Job


class LoadGenerator:
    """Keeps a device busy ``duty`` of the time with foreign jobs.

    As the multi-DNN paper's 0/40/60 % accelerator load.
    """

    def __init__(self, device: Device, duty: float, period_ms: float = 20.0):
        if not 0 <= duty < 1:
            raise ValueError(f'duty cycle must be in [0, 1), got {duty}')
        self.device, self.duty, self.period_ms = device, duty, period_ms
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None
        self.busy_ms = 0.0

    def _burn(self, ms: float) -> None:
        end = time.perf_counter() + ms / 1e3
        a = np.ones((64, 64), np.float32)
        while time.perf_counter() < end:
            a = a @ a * 1e-3 + 1.0       # real arithmetic, as another app's kernels would be
        self.busy_ms += ms

    def _loop(self) -> None:
        busy = self.duty * self.period_ms
        next_t = time.perf_counter()
        self.t_start = next_t
        while not self._stop.is_set():
            self.device.put(Job(None, -1, busy, fn=lambda: self._burn(busy)))
            next_t += self.period_ms / 1e3
            self._stop.wait(max(0.0, next_t - time.perf_counter()))

    def achieved(self) -> float:
        """Return the share of time the foreign work actually ran so far."""
        elapsed = time.perf_counter() - getattr(self, 't_start', time.perf_counter())
        return self.busy_ms / 1e3 / elapsed if elapsed > 0 else 0.0

    def start(self) -> 'LoadGenerator':
        """Start submitting."""
        if self.duty > 0:
            self._thread = threading.Thread(target=self._loop, name='load', daemon=True)
            self._thread.start()
        return self

    def stop(self) -> None:
        """Stop submitting."""
        self._stop.set()
        if self._thread:
            self._thread.join(2.0)

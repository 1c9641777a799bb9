# Copyright 2026 edge_infer contributors. Apache-2.0.
"""A robot weaker than its Triton server, for the fault tests and bench/product/triton_faults.py.

Its only local candidate is ONNX Runtime with 1 thread; the server runs
NanoDet on OpenVINO bf16 (:data:`SERVED`, this machine's fastest library).
So the server wins the profile, as a GPU box would against a small board,
and the faults have something to take away. The handicap is the robot's
choice of libraries, nothing slowed down by hand.
"""

import time
from typing import Callable, List, Tuple

from ..backends.libs.ort import OrtBackend
from ..backends.libs.triton import TritonBackend
from ..backends.live.choice import LiveChoice, LiveSettings
from ..backends.manager import BackendManager

SERVED = 'openvino/cpu/t1/bf16'
LOCAL = 'onnxruntime/cpu/t1'
Served = List[Tuple[float, float, str]]


class CountingOrt(OrtBackend):
    """ONNX Runtime, 1 thread, counting the sessions it opens."""

    def __init__(self):
        super().__init__(intra_op_threads=1)
        self.opened = 0

    def open_session(self, model_path, strict=False, input_spec=None):
        """Open a session and count it."""
        self.opened += 1
        return super().open_session(model_path, strict, input_spec)


class WeakRobot(BackendManager):
    """The robot's manager: :class:`CountingOrt` and one server (``shm`` or plain gRPC)."""

    def __init__(self, cache_dir, url: str, shm: bool = True, timeout_ms: float = 1000.0):
        super().__init__(cache_dir, config={
            'budget_s': 0.4, 'screen_s': 0.2, 'warmup': 1, 'min_runs': 3, 'min_rounds': 2,
            'calibration_frames': 2, 'quiet_foreign_cores': 99.0}, log=lambda s: None)
        self.local = CountingOrt()
        self.url, self.shm, self.timeout_ms = url, shm, timeout_ms

    def candidates(self, spec=None, model_path=None):
        """Return the local candidate and the server's."""
        remote = TritonBackend(self.url, 'nanodet', model_path, self.timeout_ms, shm=self.shm)
        return [self.local, remote]


def start(manager: WeakRobot, spec, path, warn: Callable[[str], None], **settings) -> LiveChoice:
    """Return a LiveChoice that chose the server (AssertionError with the reason if not)."""
    live = LiveChoice(manager, spec, path, settings=LiveSettings(provisional=False, **settings),
                      log=lambda s: None, warn=warn)
    run = live.start(use_cache=False)
    assert (run.chosen or '').startswith('triton/'), run.why
    return live


def feed(live: LiveChoice, frames, served: Served, until: Callable[[], bool],
         limit_s: float) -> None:
    """Feed frames back to back until ``until()`` or ``limit_s``; record (start, end, backend)."""
    end = time.monotonic() + limit_s
    while not until() and time.monotonic() < end:
        t0 = time.monotonic()
        result = live.infer(frames[len(served) % len(frames)])
        assert result.output is not None
        served.append((t0, time.monotonic(), live.backend_name))
        live.after_frame()


def local_open(live: LiveChoice) -> bool:
    """Return whether the local candidate is open beside the chosen one."""
    return LOCAL in live.selector.runners.names()

# Copyright 2026 edge_infer contributors. Apache-2.0.
"""The background threads of the run-time choice: started, joined within a bound (no ROS).

A :class:`.choice.LiveChoice` profiles, re-evaluates and opens runners-up in
threads of its own. A thread inside one measurement (a candidate's session opening and
timing: up to 32 s for ncnn's Vulkan on a software device, longer for a first
TensorRT engine) cannot be interrupted; it ends by itself after it, on the
cancel. So a stop waits for them only so long (:meth:`BackgroundWork.join`)
and the process leaves with ``os._exit`` while one still runs
(:func:`still_running`, nodes/stopping.py): finalizing Python while such a
thread is inside a library's native code aborted the process (ONNX Runtime:
"terminate called without an active exception").
"""

import contextlib
import threading
import time
from typing import Callable, ContextManager, List, Optional

MARK = 'edge_infer_background'      # the attribute that marks these threads


class BackgroundWork:
    """One LiveChoice's background threads.

    ``prefix`` starts each thread's name; ``scope`` (a context manager
    factory) is entered around each thread's work (a node routes the lines
    of the work under itself with it).
    """

    def __init__(self, prefix: str = '',
                 scope: Optional[Callable[[], ContextManager]] = None) -> None:
        self.threads: List[threading.Thread] = []
        self.prefix = prefix
        self.scope = scope or contextlib.nullcontext

    def spawn(self, target: Callable[[], object], name: str) -> threading.Thread:
        """Start ``target`` in a daemon thread ``<prefix>-<name>``; forget the ended ones."""
        def scoped():
            with self.scope():
                target()
        t = threading.Thread(target=scoped, daemon=True,
                             name=f'{self.prefix}-{name}' if self.prefix else name)
        setattr(t, MARK, True)
        self.threads = [x for x in self.threads if x.is_alive()] + [t]
        t.start()
        return t

    def join(self, timeout: float) -> List[str]:
        """Wait up to ``timeout`` s in all (real time); return the names still running."""
        deadline = time.monotonic() + timeout
        for t in self.threads:
            t.join(timeout=max(0.0, deadline - time.monotonic()))
        self.threads = [t for t in self.threads if t.is_alive()]
        return [t.name for t in self.threads]


def still_running() -> List[str]:
    """Return the names of every LiveChoice's background threads alive in this process."""
    return [t.name for t in threading.enumerate() if getattr(t, MARK, False) and t.is_alive()]

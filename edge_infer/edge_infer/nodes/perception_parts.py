# Copyright 2026 edge_infer contributors. Apache-2.0.
"""What a perception node's configure makes, in one place: its :class:`Parts`.

The node composes them (:mod:`.perception_node`), its status reads them
(:mod:`.perception_status`), and its cleanup releases them here, in order.
The backend manager, the power meter and the shared executor are the
process's (its runtime's): a node holds a lease on them and gives it back.
"""

from dataclasses import dataclass, field, fields
from typing import Any, List, Optional

from .cameras import Camera
from ..backends.live.choice import LiveChoice
from ..backends.manager import BackendManager
from ..backends.measure.memory import release_freed_memory
from ..executor.core import SharedExecutor
from ..telemetry.meter import PowerMeter


@dataclass
class Parts:
    """What a perception node's configure made; its cleanup releases them (None: not made)."""

    live: Optional[LiveChoice] = None           # the run-time choice: serves every frame
    manager: Optional[BackendManager] = None    # the process's (shared)
    meter: Optional[PowerMeter] = None          # the process's (energy_metering)
    executor: Optional[SharedExecutor] = None   # the process's (executor_policy set)
    cameras: List[Camera] = field(default_factory=list)    # each one's input and outputs
    report_pub: Any = None                      # ~/backend_report (rclpy: no type information)

    def release(self, node, wait_s: float) -> None:
        """Release every part ``node``'s configure made, and forget them.

        ``wait_s``: how long the run-time choice waits for its cancelled
        background work (a thread inside one measurement ends by itself).
        """
        for cam in self.cameras:
            cam.release(node.destroy_lifecycle_publisher)
        if self.meter is not None:
            node.runtime.meter.release()
        if self.report_pub is not None:
            node.destroy_publisher(self.report_pub)
        if self.live is not None:
            self.live.close(timeout=wait_s)
            release_freed_memory()      # the sessions' heap back to the OS (cleanup's RSS)
        if self.executor is not None:
            node.runtime.executor.release()
        for f in fields(self):
            setattr(self, f.name, [] if f.name == 'cameras' else None)

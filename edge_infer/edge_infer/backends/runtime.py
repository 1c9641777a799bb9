# Copyright 2026 edge_infer contributors. Apache-2.0.
"""What one process's models share at run time: one :class:`Runtime`, passed down (no ROS).

Made once per process by whoever hosts its models (the container, the demo,
a benchmark, a test) and handed to the backend manager, the nodes and each
model's run-time choice; nothing here is a module global, so a test builds
its own. It holds:

- ``gate``: the compute gate (:mod:`.measure.gate`): frames shared, a
  candidate's timed run alone;
- ``openings``: runner-up sessions being opened (:mod:`.live.runners_up`);
  the pacing leaves those stretches out;
- ``settle_queue`` / ``completion_queue`` (:mod:`.measure.settle`): one
  model settles at a time, the lightest first, and the completions after;
- ``runner_memory`` (:mod:`.live.runner_memory`): the runner-up memory the models'
  looks share;
- ``graph`` (:class:`.live.graph_level.GraphModels`): the models this process serves;
- ``reevaluation``: one background re-evaluation at a time (two models
  measuring at once would time each other);
- ``managers``: the backend manager of each profile cache directory
  (:func:`.manager.shared_manager`);
- ``meter`` and ``executor``: the power meter and the shared executor, each
  started by its first user and stopped by its last
  (:mod:`edge_infer.telemetry.process_meter`, :mod:`edge_infer.executor.process_executor`);
- ``log``: where these shared objects' lines go (a ROS process routes them
  under the node they work for: ``nodes.base.SharedLog``).
"""

import threading
from typing import Any, Callable, Dict

from .live.graph_level import GraphModels
from .live.runner_memory import RunnerMemory
from .live.runners_up import Openings
from .measure.gate import ComputeGate
from .measure.settle import SettleQueue
from ..executor.process_executor import ProcessExecutor
from ..telemetry.process_meter import ProcessMeter


class Runtime:
    """The run-time state one process's models share (see the module text)."""

    def __init__(self, log: Callable[[str], None] = print) -> None:
        self.log = log
        self.gate = ComputeGate()
        self.openings = Openings()
        self.settle_queue = SettleQueue()
        self.completion_queue = SettleQueue()
        self.runner_memory = RunnerMemory()
        self.graph = GraphModels()
        self.reevaluation = threading.Lock()
        self.managers: Dict[str, Any] = {}      # cache directory -> BackendManager
        self.managers_lock = threading.Lock()
        self.meter = ProcessMeter()
        self.executor = ProcessExecutor()

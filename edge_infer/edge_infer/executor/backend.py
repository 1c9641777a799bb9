# Copyright 2026 edge_infer contributors. Apache-2.0.
"""The shared executor as a backend like the others: a model instance behind Session.

The backend manager, the run-time choice and the node open, run and close
an executor model as they do any backend's (:mod:`edge_infer.core.backend`):
:class:`ExecutorBackend` adds the model to the process's
:class:`~.core.SharedExecutor`, :class:`ExecutorSession` submits each frame
and hands back the last segment's outputs as views on the executor's
buffers (ROS-free).
"""

import pathlib
import threading
from typing import List, Optional, Sequence

import numpy as np

from .core import ExecutorError, InFlight, SharedExecutor
from .segment_runners import SegmentLibrary
from ..core.backend import Backend, Session


class ExecutorSession(Session):
    """A model instance of the shared executor behind the backend Session interface.

    ``run`` submits the tensor, waits for the last segment, and returns the
    outputs as views on the executor's buffers (no copy); the buffers stay
    the caller's until its next ``run`` (or ``close``). ``segment_devices``
    names the device that ran each segment of the last frame.
    """

    def __init__(self, executor: SharedExecutor, instance: str, timeout_s: float = 30.0,
                 backend_name: str = ''):
        self.executor, self.instance, self.timeout_s = executor, instance, timeout_s
        self.backend_name = backend_name or f'executor/{executor.policy}'
        self.last_frame: Optional[InFlight] = None

    @property
    def segment_devices(self) -> List[str]:
        """Return the device of each segment of the last frame ([] before the first)."""
        return self.last_frame.placement if self.last_frame is not None else []

    def run(self, tensor: np.ndarray) -> List[np.ndarray]:
        """Run one frame through the executor; return the outputs (views)."""
        if self.last_frame is not None:
            self.last_frame.release()
        done = threading.Event()
        box: list = []

        def cb(outputs, frame):
            box.append((outputs, frame))
            done.set()
        self.executor.submit(self.instance, np.ascontiguousarray(tensor, np.float32), cb,
                             hold=True)
        if not done.wait(self.timeout_s):
            raise ExecutorError(f'{self.instance}: no result within {self.timeout_s:g} s')
        outputs, frame = box[0]
        self.last_frame = frame
        if outputs is None:
            raise ExecutorError(f'{self.instance}: {frame.error or "frame failed"}')
        return outputs

    def close(self) -> None:
        """Give the last buffers back and remove the model from the executor."""
        if self.last_frame is not None:
            self.last_frame.release()
            self.last_frame = None
        self.executor.remove_model(self.instance)


class ExecutorBackend(Backend):
    """A backend like the others: ``open_session(path)`` adds the model to a shared executor.

    ``libraries``: what its segments may run on (segment_runners.SegmentLibrary; the
    node passes the backend manager's accepted candidates, best first, so
    the executor runs on the library and precision the manager measured);
    each device keeps the fastest measured one per segment. The name says
    the policy and the first library: ``executor/cost-model/openvino/t1/bf16``.
    """

    library = 'edge_infer-executor'
    device = 'accelerator+cpu'
    tensor_passing = ('zero-copy between segments (ONNX Runtime I/O binding, OpenVINO '
                      'tensors wrapped in place)')

    def __init__(self, executor: SharedExecutor, instance: str,
                 libraries: Sequence[SegmentLibrary] = ()):
        self.executor, self.instance = executor, instance
        self.libraries = list(libraries) or [SegmentLibrary('onnxruntime', executor.threads)]
        self.precision = self.libraries[0].precision
        self.name = f'executor/{executor.policy}/{self.libraries[0].name}'

    def open_session(self, model_path, strict: bool = False, input_spec=None) -> ExecutorSession:
        """Partition and add the model; return its session.

        The signature is :meth:`Backend.open_session`'s; neither argument applies (the
        executor places segments on its devices by design; float input).
        """
        self.executor.add_model(self.instance, pathlib.Path(model_path), self.libraries)
        return ExecutorSession(self.executor, self.instance, backend_name=self.name)

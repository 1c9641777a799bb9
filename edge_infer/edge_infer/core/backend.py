# Copyright 2026 edge_infer contributors. Apache-2.0.
"""Inference backends behind one small interface.

A :class:`Backend` names a library and device and opens a :class:`Session` per
model file; a session runs one input tensor and returns the outputs in the
model's output order. For now the only backend is ONNX Runtime on the CPU; the
backend manager (probing and measured choice) plugs in more behind the same
interface.
"""

import os
import pathlib
from typing import List, Optional

import numpy as np


class BackendError(RuntimeError):
    """A backend cannot load or run a model; the message says why."""


class Session:
    """An opened model on one backend."""

    backend_name: str = ''
    input_name: str = ''
    output_names: List[str] = []

    def run(self, tensor: np.ndarray) -> List[np.ndarray]:
        """Run one input tensor; outputs may be reused buffers (consume before next run)."""
        raise NotImplementedError

    def close(self) -> None:
        """Free the session's memory."""


class Backend:
    """A library + device that can open sessions."""

    name: str = ''

    def load(self, model_path: pathlib.Path) -> Session:
        """Load ``model_path`` and return a ready session."""
        raise NotImplementedError


class OrtSession(Session):
    """ONNX Runtime session with IO binding into buffers allocated once.

    The input tensor is bound by pointer (no copy) and static-shape outputs are
    written into preallocated numpy arrays, so a frame allocates nothing here.
    """

    def __init__(self, sess, backend_name: str):
        import onnxruntime as ort
        self._ort = ort
        self._sess = sess
        self.backend_name = backend_name
        inputs = sess.get_inputs()
        if len(inputs) != 1:
            raise BackendError(f'model has {len(inputs)} inputs; edge_infer feeds one image')
        self.input_name = inputs[0].name
        self.output_names = [o.name for o in sess.get_outputs()]
        self._binding = sess.io_binding()
        self._outputs: Optional[List[np.ndarray]] = []
        for o in sess.get_outputs():
            if not all(isinstance(d, int) and d > 0 for d in o.shape) or \
                    o.type != 'tensor(float)':
                self._outputs = None    # dynamic or non-float output: let ORT allocate
                break
            self._outputs.append(np.empty(o.shape, np.float32))
        if self._outputs is not None:
            for name, buf in zip(self.output_names, self._outputs):
                self._binding.bind_output(name, 'cpu', 0, np.float32, buf.shape,
                                          buf.ctypes.data)
        self._bound_ptr = None

    def run(self, tensor: np.ndarray) -> List[np.ndarray]:
        """Run the model on ``tensor`` (C-contiguous float32)."""
        if self._outputs is None:
            return self._sess.run(None, {self.input_name: tensor})
        ptr = tensor.ctypes.data
        if ptr != self._bound_ptr:
            self._binding.bind_input(self.input_name, 'cpu', 0, np.float32,
                                     tensor.shape, ptr)
            self._bound_ptr = ptr
        self._sess.run_with_iobinding(self._binding)
        return self._outputs

    def close(self) -> None:
        """Drop the ORT session (frees weights and arenas)."""
        self._binding = None
        self._sess = None
        self._outputs = None


class OrtCpuBackend(Backend):
    """ONNX Runtime, CPU execution provider."""

    def __init__(self, intra_op_threads: int = 0, inter_op_threads: int = 1):
        self.intra_op_threads = int(intra_op_threads)
        self.inter_op_threads = int(inter_op_threads)
        self.name = 'onnxruntime/cpu'
        if self.intra_op_threads:
            self.name += f'/t{self.intra_op_threads}'

    def load(self, model_path: pathlib.Path) -> Session:
        """Open ``model_path`` on the CPU EP; BackendError on a missing or bad file."""
        import onnxruntime as ort
        path = pathlib.Path(model_path)
        if not path.is_file():
            raise BackendError(f'model file {path} not found')
        so = ort.SessionOptions()
        so.intra_op_num_threads = self.intra_op_threads
        so.inter_op_num_threads = self.inter_op_threads
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        so.log_severity_level = 3
        if self.intra_op_threads:
            # Several sessions share few cores: do not let idle workers spin.
            so.add_session_config_entry('session.intra_op.allow_spinning', '0')
        try:
            sess = ort.InferenceSession(os.fspath(path), so,
                                        providers=['CPUExecutionProvider'])
        except Exception as exc:  # ORT raises several types for bad files
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise BackendError(f'cannot load model {path.name}: {first}') from None
        return OrtSession(sess, self.name)

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
from typing import Dict, List, Optional, Tuple

import numpy as np


class BackendError(RuntimeError):
    """A backend cannot load or run a model; the message says why."""


def first_line(exc: BaseException) -> str:
    """Return the first line of an exception's message (its type when empty)."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


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
    """A library + device that can open sessions: one candidate of the backend manager.

    Attributes describe the candidate for reports and the profile cache:
    ``name`` is unique among candidates (e.g. ``onnxruntime/cpu/t2``,
    ``opencv-dnn/opencl-fp16``, ``numpy-blas/cpu``); ``library`` the
    inference library; ``device`` where the work runs (``cpu``, ``gpu:0``,
    ``opencl:<device name>``); ``precision`` the arithmetic (``fp32``,
    ``fp16``, ``int8``); ``tensor_passing`` how inputs and outputs cross into
    the library (``zero-copy io-binding``, ``copy``, ...).
    """

    name: str = ''
    library: str = ''
    device: str = 'cpu'
    precision: str = 'fp32'
    tensor_passing: str = 'copy'

    def options(self) -> Dict[str, object]:
        """Return every setting that changes speed or results (part of the cache key)."""
        return {}

    def versions(self) -> Dict[str, str]:
        """Return the versions of the libraries this backend runs on (part of the cache key)."""
        return {}

    def available(self) -> Tuple[bool, str]:
        """Cheap check that the library and device exist: (ok, what was found or why not).

        The backend manager trusts nothing more than this without running a
        probe model on the backend and comparing it with the CPU reference.
        """
        return True, 'no check'

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


# provider -> (short name, device)
PROVIDERS: Dict[str, Tuple[str, str]] = {
    'CPUExecutionProvider': ('cpu', 'cpu'),
    'CUDAExecutionProvider': ('cuda', 'gpu:0'),
    'TensorrtExecutionProvider': ('tensorrt', 'gpu:0'),
    'OpenVINOExecutionProvider': ('openvino', 'cpu'),
    'ACLExecutionProvider': ('acl', 'cpu'),
    'ArmNNExecutionProvider': ('armnn', 'cpu'),
    'XnnpackExecutionProvider': ('xnnpack', 'cpu'),
    'DnnlExecutionProvider': ('dnnl', 'cpu'),
    'ROCMExecutionProvider': ('rocm', 'gpu:0'),
    'MIGraphXExecutionProvider': ('migraphx', 'gpu:0'),
    'CoreMLExecutionProvider': ('coreml', 'npu'),
    'QNNExecutionProvider': ('qnn', 'npu'),
    'DmlExecutionProvider': ('dml', 'gpu:0'),
    'WebGpuExecutionProvider': ('webgpu', 'gpu:0'),
}
# Listed by PyPI builds but not a local device.
REMOTE = {'AzureExecutionProvider'}


class OrtBackend(Backend):
    """ONNX Runtime with one execution provider (and the CPU EP for nodes it leaves)."""

    library = 'onnxruntime'
    tensor_passing = 'zero-copy io-binding (input by pointer, outputs into preallocated arrays)'

    def __init__(self, provider: str = 'CPUExecutionProvider', intra_op_threads: int = 0,
                 provider_options: Optional[dict] = None, cache_dir: Optional[str] = None,
                 precision: str = 'fp32'):
        self.provider = provider
        self.intra_op_threads = int(intra_op_threads)
        short, self.device = PROVIDERS.get(provider, (provider.replace('ExecutionProvider', '')
                                                      .lower(), 'unknown'))
        self.precision = precision
        self.provider_options = dict(provider_options or {})
        if provider == 'TensorrtExecutionProvider' and cache_dir:
            trt = os.path.join(cache_dir, 'tensorrt')
            self.provider_options.setdefault('trt_engine_cache_enable', 'True')
            self.provider_options.setdefault('trt_engine_cache_path', trt)
            self.provider_options.setdefault('trt_timing_cache_enable', 'True')
            self.provider_options.setdefault('trt_timing_cache_path', trt)
        self.name = f'onnxruntime/{short}'
        if self.intra_op_threads:
            self.name += f'/t{self.intra_op_threads}'
        if precision != 'fp32':
            self.name += f'/{precision}'
        if provider != 'CPUExecutionProvider':
            self.tensor_passing = 'copy to device by the provider (CPU-side io-binding)'

    def options(self) -> Dict[str, object]:
        """Return provider, threads and provider options."""
        return {'provider': self.provider, 'intra_op_threads': self.intra_op_threads,
                'provider_options': {k: str(v) for k, v in sorted(self.provider_options.items())
                                     if not k.endswith('_path')}}

    def versions(self) -> Dict[str, str]:
        """Return the onnxruntime version (and build flavour)."""
        try:
            import onnxruntime as ort
        except ImportError:
            return {}
        return {'onnxruntime': ort.__version__, 'onnxruntime_device': ort.get_device()}

    def available(self) -> Tuple[bool, str]:
        """Check that onnxruntime imports and lists the provider."""
        try:
            import onnxruntime as ort
        except ImportError as exc:
            return False, f'onnxruntime not importable: {exc}'
        listed = ort.get_available_providers()
        if self.provider not in listed:
            return False, (f'{self.provider} not in this onnxruntime {ort.__version__} build '
                           f'(lists {", ".join(listed)})')
        return True, f'onnxruntime {ort.__version__} lists {self.provider}'

    def load(self, model_path: pathlib.Path, strict: bool = False) -> Session:
        """Open the model; BackendError on a bad file or when the provider did not take it.

        ``strict``: disable the CPU fallback (every node must run on the
        provider); the probe uses it.
        """
        import onnxruntime as ort
        path = pathlib.Path(model_path)
        if not path.is_file():
            raise BackendError(f'model file {path} not found')
        so = ort.SessionOptions()
        so.intra_op_num_threads = self.intra_op_threads
        so.inter_op_num_threads = 1
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        so.log_severity_level = 3
        if self.intra_op_threads:
            # Several sessions share few cores: do not let idle workers spin.
            so.add_session_config_entry('session.intra_op.allow_spinning', '0')
        providers: list = [(self.provider, self.provider_options)]
        if self.provider != 'CPUExecutionProvider':
            if strict:
                so.add_session_config_entry('session.disable_cpu_ep_fallback', '1')
            else:
                providers.append('CPUExecutionProvider')
        if self.provider == 'TensorrtExecutionProvider' and 'trt_engine_cache_path' in \
                self.provider_options:
            os.makedirs(self.provider_options['trt_engine_cache_path'], exist_ok=True)
        try:
            sess = ort.InferenceSession(os.fspath(path), so, providers=providers)
        except Exception as exc:  # ORT raises several types for bad files / failed EPs
            raise BackendError(f'{self.name}: cannot load {path.name}: {first_line(exc)}') \
                from None
        used = sess.get_providers()
        if not used or used[0] != self.provider:
            raise BackendError(f'{self.name}: asked for {self.provider}, the session runs on '
                               f'{", ".join(used) or "nothing"} (silent fallback)')
        return OrtSession(sess, self.name)


class OrtCpuBackend(OrtBackend):
    """ONNX Runtime, CPU execution provider (the reference backend)."""

    def __init__(self, intra_op_threads: int = 0):
        super().__init__('CPUExecutionProvider', intra_op_threads=intra_op_threads)

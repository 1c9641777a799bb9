# Copyright 2026 edge_infer contributors. Apache-2.0.
"""ONNX Runtime execution providers as backend candidates.

Every provider the installed onnxruntime build lists becomes a candidate
(the CPU EP once per thread setting), except remote ones (Azure). The trap
this guards against, measured on these machines: onnxruntime-gpu lists CUDA
and TensorRT, then quietly runs everything on the CPU when libcublas / the
driver is missing; asking a CPU-only build for CUDA does the same with a
warning. So a non-CPU session is created with CPU fallback DISABLED for the
probe model (any node it cannot take fails the session), and every session
is checked afterwards: the requested provider must be the first one the
session actually uses, or the load fails with that reason.
"""

import os
import pathlib
from typing import Dict, List, Optional, Tuple

import numpy as np

from . import installed, rebatch
from ...core.backend import Backend, BackendError, first_line, Session

# the distributions that install the ``onnxruntime`` module, most specific first
DISTRIBUTIONS = ('onnxruntime-gpu', 'onnxruntime-openvino', 'onnxruntime-directml',
                 'onnxruntime-qnn', 'onnxruntime-training', 'onnxruntime')
_state: Dict[str, Optional[pathlib.Path]] = {}


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
        self._bound_ptr: Optional[int] = None

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
    """ONNX Runtime with one execution provider (and the CPU EP for nodes it leaves).

    ``allow_fallback``: a non-CPU provider's session may hand the nodes it
    cannot take to the CPU EP (the default); False: every node must run on
    the provider, or the load fails. A load with ``strict`` (the probe's)
    never falls back, whatever this says.
    """

    library = 'onnxruntime'
    batches = True
    tensor_passing = 'zero-copy io-binding (input by pointer, outputs into preallocated arrays)'

    def __init__(self, provider: str = 'CPUExecutionProvider', intra_op_threads: int = 0,
                 provider_options: Optional[dict] = None, cache_dir: Optional[str] = None,
                 precision: str = 'fp32', allow_fallback: bool = True):
        self.provider = provider
        self.allow_fallback = bool(allow_fallback)
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
        """Return provider, threads, provider options; ``allow_fallback`` too when off."""
        out = {'provider': self.provider, 'intra_op_threads': self.intra_op_threads,
               'provider_options': {k: str(v) for k, v in sorted(self.provider_options.items())
                                    if not k.endswith('_path')}}
        if not self.allow_fallback:     # only then: the default's cache keys stay as they were
            out['allow_fallback'] = False
        return out

    def versions(self) -> Dict[str, str]:
        """Return the onnxruntime version and build (distribution), read without importing it."""
        dist, version = build()
        return {'onnxruntime': version, 'onnxruntime_build': dist} if dist else {}

    def available(self) -> Tuple[bool, str]:
        """Check that onnxruntime is installed and its build lists the provider."""
        dist, version = build()
        if not dist:
            return False, 'onnxruntime not installed (pip install onnxruntime)'
        listed = listed_providers()
        if not listed:
            return False, f'{dist} {version} is installed but does not import'
        if self.provider not in listed:
            return False, (f'{self.provider} not in this onnxruntime {version} build '
                           f'(lists {", ".join(listed)})')
        return True, f'onnxruntime {version} lists {self.provider}'

    def open_session(self, model_path: pathlib.Path, strict: bool = False,
                     input_spec=None, batch: int = 1) -> Session:
        """Open the model; BackendError on a bad file or when the provider did not take it.

        ``strict``: no CPU fallback for this load (see ``allow_fallback``);
        ``input_spec`` is not needed (float input). ``batch`` > 1: the graph
        re-made for that many frames a run (:mod:`.rebatch`).
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
            if self.allow_fallback and not strict:
                providers.append('CPUExecutionProvider')
            else:
                so.add_session_config_entry('session.disable_cpu_ep_fallback', '1')
        if self.provider == 'TensorrtExecutionProvider' and 'trt_engine_cache_path' in \
                self.provider_options:
            os.makedirs(self.provider_options['trt_engine_cache_path'], exist_ok=True)
        try:
            source = os.fspath(path) if batch == 1 else rebatch.onnx_bytes(path, batch)
            sess = ort.InferenceSession(source, so, providers=providers)
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


def build() -> Tuple[str, str]:
    """Return the installed onnxruntime build's distribution and version (('', '') if none)."""
    return installed.dist_version(*DISTRIBUTIONS)


def listed_providers() -> List[str]:
    """Return the providers the installed onnxruntime build lists ([] if not importable).

    Asked of onnxruntime once per build: kept in the cache folder
    (``ort_providers.json``) so that a process ORT does not serve never
    imports it (:mod:`.installed`).
    """
    dist, version = build()
    if not dist:
        return []
    key = {'build': dist, 'version': version,
           'native': installed.native_stamp('onnxruntime', 'capi/onnxruntime_pybind11_state*')}

    def ask() -> List[str]:
        got = installed.asked_apart(
            'onnxruntime', 'import json, onnxruntime as o; '
            'print(json.dumps(o.get_available_providers()))')
        if isinstance(got, list):
            return got
        try:
            import onnxruntime as ort
        except ImportError:
            return []
        return list(ort.get_available_providers())
    return [str(p) for p in installed.kept(_state.get('providers_file'), key, ask) or []]


def ort_candidates(thread_options=(1, 2), cache_dir: Optional[str] = None,
                   include_unlisted=('CUDAExecutionProvider', 'TensorrtExecutionProvider',
                                     'OpenVINOExecutionProvider')) -> List[OrtBackend]:
    """Return one candidate per listed provider (CPU: one per thread setting).

    ``include_unlisted``: providers worth naming even when this build lacks
    them, so the report says why they are unavailable.
    """
    if cache_dir is not None:
        _state['providers_file'] = pathlib.Path(cache_dir) / 'ort_providers.json'
    listed = listed_providers()
    out: List[OrtBackend] = []
    for threads in thread_options:
        out.append(OrtBackend('CPUExecutionProvider', intra_op_threads=threads))
    names = [p for p in listed if p not in REMOTE and p != 'CPUExecutionProvider']
    names += [p for p in include_unlisted if p not in names]
    for p in names:
        out.append(OrtBackend(p, cache_dir=cache_dir))
    return out

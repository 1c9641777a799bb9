# Copyright 2026 edge_infer contributors. Apache-2.0.
"""OpenVINO (PyPI ``openvino``) as backend candidates: CPU at f32 and at its native precision.

OpenVINO reads our ONNX files directly. Its CPU plugin runs on oneDNN on
x86 and on Arm Compute Library executors on aarch64
(``libopenvino_arm_cpu_plugin.so``): the "ArmCL / NEON" path of the papers,
from a pip wheel, on Odroid, Raspberry Pi and Jetson CPUs.

Candidates (``openvino_candidates``):

- ``openvino/cpu/tN``: ``INFERENCE_PRECISION_HINT=f32``; level with ONNX
  Runtime here, outputs within 1e-5;
- ``openvino/cpu/tN/<native>``: the precision the device itself picks when
  not told (``bf16`` on x86 cores with AVX512-BF16/AMX, ``fp16`` on ARMv8.2+
  cores, per the CPU device's documentation); measured here at about half of
  ONNX Runtime's time. Reduced precision changes results, so this candidate
  is admitted only through the manager's accuracy check, never by rule. Where
  the device's native precision is f32 there is no second candidate;
- ``openvino/cpu/tN[/<native>]+pre``: the same, with the preprocessing in the
  compiled graph (``openvino.preprocess.PrePostProcessor``): the session
  takes the resized uint8 frame (NHWC, the model's colour order) and the
  graph converts it to float, subtracts the mean, divides by the std and
  changes the layout. The CPU then only resizes (``cv2.INTER_AREA``: the
  graph's own resize has no area interpolation, and linear changed results,
  see core/preprocess.py). The manager ranks candidates on CPU
  preprocessing + run, so this one wins only where it saves a frame's time.

Traps, each handled here:

- the default precision is NOT f32 (bf16 / f16, see above): every candidate
  sets the hint explicitly and the session checks what the compiled model
  reports;
- the LATENCY hint turns ``ENABLE_CPU_PINNING`` on, and two models in one
  process can then be pinned to the same core (and a robot's other processes
  lose that core): pinning is switched off;
- ``ov.Tensor(array, shared_memory=True)`` wraps our preprocessed buffer
  without a copy (re-wrapped only when the buffer changes); output tensors
  are views on the request's own memory, stable from run to run;
- **telemetry**: ``import openvino`` imports its model converter
  (``openvino.tools.ovc``), which starts Google Analytics telemetry with the
  opt-in dialog disabled: unless ``~/intel/openvino_telemetry`` says ``0`` it
  writes a client id and usage counter under ``~/intel`` and forks a process
  to send events (seen from inside a perception node here). edge_infer never
  asked for that: this module makes ``openvino_telemetry`` unimportable in the
  process before OpenVINO loads, so the converter falls back to its own no-op
  stub. Nothing is written to the user's home.
"""

import functools
import os
import pathlib
import sys
from typing import Dict, List, Optional, Tuple

import numpy as np

from . import rebatch
from ...core.backend import Backend, BackendError, first_line, Session

# OpenVINO element type name -> the short precision names used across edge_infer.
if 'openvino' not in sys.modules:       # see "telemetry" above
    # None in sys.modules makes an import fail at once: what blocks the telemetry
    sys.modules.setdefault('openvino_telemetry', None)   # type: ignore[arg-type]


def telemetry_blocked() -> bool:
    """Return True when OpenVINO's converter runs with its no-op telemetry stub."""
    ovc = sys.modules.get('openvino.tools.ovc.telemetry_utils')
    return sys.modules.get('openvino_telemetry', 0) is None and (
        ovc is None or getattr(ovc, 'tm', None) is None or
        ovc.tm.__name__.endswith('telemetry_stub'))


_PRECISION = {'f32': 'fp32', 'float32': 'fp32', 'f16': 'fp16', 'float16': 'fp16',
              'bf16': 'bf16', 'bfloat16': 'bf16', 'i8': 'int8', 'int8': 'int8'}
_HINT = {'fp32': 'f32', 'fp16': 'f16', 'bf16': 'bf16'}
INSTALL = 'pip install openvino'


def _core():
    import openvino as ov
    return ov, ov.Core()


@functools.lru_cache(maxsize=None)
def _device_facts(device: str) -> Tuple[str, Tuple[str, ...], str, str]:
    """Return (version, devices listed, the device's full name, native precision), asked once.

    ImportError when openvino is missing; the runtime's own error when it
    cannot start. Asked 44 times per cold start of four models (a Core
    and its device list each time: 0.16 s of a 2-core EPYC's start).
    """
    ov, core = _core()
    devices = tuple(core.available_devices)
    if device not in devices:
        return ov.__version__, devices, '', ''
    return (ov.__version__, devices, str(core.get_property(device, 'FULL_DEVICE_NAME')),
            native_precision(device)[0])


def precision_name(ov_type) -> str:
    """Return edge_infer's name ('fp32', 'bf16', 'fp16', ...) of an OpenVINO element type."""
    text = str(getattr(ov_type, 'type_name', None) or ov_type)
    text = text.replace("<Type: '", '').replace("'>", '').strip().lower()
    return _PRECISION.get(text, text)


def native_precision(device: str = 'CPU') -> Tuple[str, str]:
    """Return (precision the device uses when not told, what reported it)."""
    try:
        _, core = _core()
        hint = core.get_property(device, 'INFERENCE_PRECISION_HINT')
    except Exception as exc:  # not installed, or no such device
        return '', first_line(exc)
    return precision_name(hint), f'{device} INFERENCE_PRECISION_HINT default = {hint}'


def cpu_plugin_library() -> str:
    """Return the file name of the loaded CPU plugin (the Arm Compute Library one on aarch64)."""
    try:
        with open('/proc/self/maps') as f:
            for line in f:
                if 'libopenvino' in line and 'cpu_plugin' in line:
                    return os.path.basename(line.split()[-1])
    except OSError:
        pass
    return ''


class OpenVinoSession(Session):
    """A compiled model and one infer request; input bound by pointer, outputs read in place."""

    def __init__(self, compiled, backend_name: str):
        import openvino as ov
        self._ov = ov
        self._compiled = compiled
        self._request = compiled.create_infer_request()
        self.backend_name = backend_name
        if len(compiled.inputs) != 1:
            raise BackendError(f'model has {len(compiled.inputs)} inputs; edge_infer feeds one '
                               'image')
        self.input_name = compiled.inputs[0].get_any_name()
        self.output_names = [o.get_any_name() for o in compiled.outputs]
        self._n_out = len(compiled.outputs)
        self._bound: Optional[np.ndarray] = None
        self._dtype: np.dtype = np.dtype(np.float32)

    def run(self, tensor: np.ndarray) -> List[np.ndarray]:
        """Run one C-contiguous tensor (float32; uint8 for ``+pre``); outputs are views."""
        if tensor is not self._bound:
            if not (tensor.flags['C_CONTIGUOUS'] and tensor.dtype == self._dtype):
                tensor = np.ascontiguousarray(tensor, self._dtype)
            self._request.set_input_tensor(self._ov.Tensor(tensor, shared_memory=True))
            self._bound = tensor
        self._request.infer()
        return [self._request.get_output_tensor(i).data for i in range(self._n_out)]

    def close(self) -> None:
        """Drop the request and the compiled model (frees weights and buffers)."""
        self._request = None
        self._compiled = None
        self._bound = None


class OpenVinoBackend(Backend):
    """OpenVINO on one device ('CPU'), with a thread count and an inference precision."""

    library = 'openvino'
    batches = True
    tensor_passing = ('zero-copy (input wrapped by pointer with ov.Tensor(shared_memory=True), '
                      'outputs read in place from the infer request)')

    def __init__(self, intra_op_threads: int = 1, precision: str = 'fp32',
                 device: str = 'CPU', cache_dir: Optional[str] = None,
                 graph_preprocessing: bool = False):
        if precision not in _HINT:
            raise ValueError(f"OpenVINO precision {precision!r}: use one of {', '.join(_HINT)}")
        self.intra_op_threads = int(intra_op_threads)
        self.precision = precision
        self.ov_device = device
        self.device = device.lower()
        self.cache_dir = cache_dir
        self.name = f'openvino/{self.device}/t{self.intra_op_threads}'
        if precision != 'fp32':
            self.name += f'/{precision}'
        self.graph_preprocessing = bool(graph_preprocessing)
        if self.graph_preprocessing:
            self.name += '+pre'
            self.input_kind = 'u8'
            self.tensor_passing += '; u8 frame in, preprocessing in the graph'

    def config(self) -> Dict[str, object]:
        """Return the properties passed to compile_model."""
        cfg: Dict[str, object] = {
            'PERFORMANCE_HINT': 'LATENCY',
            'INFERENCE_PRECISION_HINT': _HINT[self.precision],
            'ENABLE_CPU_PINNING': False,
            'NUM_STREAMS': 1,
        }
        if self.intra_op_threads:
            cfg['INFERENCE_NUM_THREADS'] = self.intra_op_threads
        return cfg

    def options(self) -> Dict[str, object]:
        """Return the device and compile properties."""
        out: Dict[str, object] = {
            'device': self.ov_device,
            'config': {k: str(v) for k, v in sorted(self.config().items())}}
        if self.graph_preprocessing:
            out['graph_preprocessing'] = 'u8 NHWC -> f32, mean, scale, layout'
        return out

    def versions(self) -> Dict[str, str]:
        """Return the OpenVINO version."""
        try:
            import openvino as ov
        except ImportError:
            return {}
        return {'openvino': ov.__version__}

    def available(self) -> Tuple[bool, str]:
        """Check that openvino imports, lists the device and supports the precision."""
        try:
            version, devices, name, native = _device_facts(self.ov_device)
        except ImportError as exc:
            return False, f'openvino not installed ({exc}): {INSTALL}'
        except Exception as exc:  # the runtime failed to initialise
            return False, f'openvino cannot start: {first_line(exc)}'
        if self.ov_device not in devices:
            return False, f'OpenVINO {version} lists no {self.ov_device} device ' \
                          f'(lists {", ".join(devices) or "none"})'
        if self.precision != 'fp32' and native != self.precision:
            return False, (f'{self.ov_device} {name!r} runs {native or "?"} natively, not '
                           f'{self.precision}')
        return True, f'OpenVINO {version} {self.ov_device} {name!r}'

    def open_session(self, model_path: pathlib.Path, strict: bool = False,
                     input_spec=None, batch: int = 1) -> Session:
        """Compile the ONNX model; BackendError on a bad file or when the precision differs.

        ``+pre`` candidates need ``input_spec`` (the model's InputSpec): its
        mean, std and layout go into the graph. Every load is strict: the
        model compiles on the device named, or the load fails. ``batch`` > 1:
        the graph re-made for that many frames a run (:mod:`.rebatch`).
        """
        path = pathlib.Path(model_path)
        if not path.is_file():
            raise BackendError(f'model file {path} not found')
        try:
            _, core = _core()
        except ImportError as exc:
            raise BackendError(f'{self.name}: openvino not installed ({exc}): {INSTALL}') \
                from None
        if self.graph_preprocessing and input_spec is None:
            raise BackendError(f"{self.name}: needs the model's input spec (mean, std, layout)")
        try:
            model = _read(core, path)
            if batch > 1:
                model = rebatch.openvino_model(model, batch)
            if self.graph_preprocessing:
                model = _with_graph_preprocessing(model, input_spec)
            compiled = core.compile_model(model, self.ov_device, self.config())
        except Exception as exc:  # OpenVINO raises RuntimeError for bad files and devices
            raise BackendError(f'{self.name}: cannot load {path.name}: {reason(exc)}') \
                from None
        got = precision_name(compiled.get_property('INFERENCE_PRECISION_HINT'))
        if got != self.precision:
            raise BackendError(f'{self.name}: asked for {self.precision}, the compiled model '
                               f'runs {got}')
        session = OpenVinoSession(compiled, self.name)
        if self.graph_preprocessing:
            session.input_kind, session._dtype = 'u8', np.dtype(np.uint8)
        return session


def _read(core, path: pathlib.Path):
    """Return the model read by the ONNX frontend alone (``core.read_model`` else).

    ``core.read_model`` tries every frontend on a file ONNX cannot parse:
    TensorFlow's then prints "Error parsing text-format tensorflow.GraphDef"
    lines on stderr, about a file the user gave as ONNX.
    """
    if path.suffix.lower() != '.onnx':
        return core.read_model(os.fspath(path))
    from openvino.frontend import FrontEndManager
    onnx = FrontEndManager().load_by_framework('onnx')
    return onnx.convert(onnx.load(os.fspath(path)))


def reason(exc: BaseException) -> str:
    """Return the line of an OpenVINO error that says what is wrong.

    Its first lines only name source files ("Exception from src/...",
    "Check '...' failed at ...", "FrontEnd API failed with GeneralFailure:").
    """
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    said = [ln for ln in lines if not ln.startswith(('Exception from ', 'Check ', 'FrontEnd API'))]
    return (said or lines or [type(exc).__name__])[0]


def _with_graph_preprocessing(model, spec):
    """Return ``model`` taking 1 x H x W x 3 uint8 (model colour order) with its normalisation."""
    from openvino import Layout, Type
    from openvino.preprocess import PrePostProcessor
    if len(model.inputs) != 1:
        raise BackendError(f'model has {len(model.inputs)} inputs; edge_infer feeds one image')
    ppp = PrePostProcessor(model)
    ppp.input().tensor().set_element_type(Type.u8).set_layout(Layout('NHWC'))
    ppp.input().model().set_layout(Layout(spec.layout))
    steps = ppp.input().preprocess().convert_element_type(Type.f32)
    if any(float(m) for m in spec.mean):
        steps.mean([float(m) for m in spec.mean])
    if any(float(s) != 1.0 for s in spec.std):
        steps.scale([float(s) for s in spec.std])
    return ppp.build()


def openvino_candidates(thread_options=(1, 2), device: str = 'CPU', native: bool = True,
                        graph_preprocessing: bool = True) -> List[OpenVinoBackend]:
    """Return f32 candidates per thread count and, with ``native``, the native-precision ones.

    With ``graph_preprocessing``, each of the device's best precision (the
    native one, else f32) also comes as a ``+pre`` twin. Without openvino
    installed the f32 candidates are still returned, so the report says why
    they are unavailable.
    """
    out = [OpenVinoBackend(t, 'fp32', device) for t in thread_options]
    best = 'fp32'
    if native:
        prec, _ = native_precision(device)
        if prec and prec != 'fp32' and prec in _HINT:
            out += [OpenVinoBackend(t, prec, device) for t in thread_options]
            best = prec
    if graph_preprocessing:
        out += [OpenVinoBackend(t, best, device, graph_preprocessing=True)
                for t in thread_options]
    return out

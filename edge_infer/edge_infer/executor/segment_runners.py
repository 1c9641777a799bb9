# Copyright 2026 edge_infer contributors. Apache-2.0.
"""Segment runners: one segment of a model on one device and library, zero-copy in and out.

The shared executor runs each segment where it is measured fastest: per
device, every library in its :class:`SegmentLibrary` list opens the segment
(:func:`open_segment_runner`), :meth:`SharedExecutor.measure_costs` times each one,
and the fastest runs it. The libraries come from the backend manager's own
choice for the model (the node passes its accepted candidates), so the
executor runs on the library and precision the manager measured best, and
ONNX Runtime stays as the reference.

- :class:`OrtSegmentRunner`: an ONNX Runtime session with I/O binding
  (CPU, or CUDA with device-mapped buffers on a Jetson);
- :class:`OpenVinoSegmentRunner`: an OpenVINO compiled segment; inputs and
  outputs are ``ov.Tensor(shared_memory=True)`` over the executor's own
  buffers, so OpenVINO reads and writes them in place.

Inputs are bound by pointer, outputs go into buffers allocated once (a small
pool per segment, one slot per frame in flight): nothing is copied between
segments, and each runner counts any copy it had to make (``copied``).
"""

from dataclasses import dataclass
import importlib
from typing import Any, Dict, List, Optional

import numpy as np


class SegmentError(RuntimeError):
    """A segment cannot be opened or run on a library."""


@dataclass(frozen=True)
class SegmentLibrary:
    """A library a segment may run on: 'onnxruntime' or 'openvino', threads, precision."""

    library: str = 'onnxruntime'
    threads: int = 1
    precision: str = 'fp32'         # OpenVINO: 'fp32', 'bf16' or 'fp16'

    @property
    def name(self) -> str:
        """Return a short label, e.g. ``openvino/t1/bf16``."""
        prec = '' if self.precision == 'fp32' else f'/{self.precision}'
        return f'{self.library}/t{self.threads}{prec}'


def libraries_of(candidates, threads: int = 1) -> List[SegmentLibrary]:
    """Return the segment libraries for accepted backend candidates (in their order), + ORT.

    ``candidates``: CandidateResult-like objects (``library``, ``device``,
    ``precision``) the manager accepted. CPU candidates of ONNX Runtime and
    OpenVINO can run segments; ONNX Runtime fp32 is always kept last (the
    reference, and what runs where nothing else can).
    """
    out: List[SegmentLibrary] = []
    for c in candidates:
        if c.device != 'cpu' or c.library not in ('onnxruntime', 'openvino'):
            continue
        lib = SegmentLibrary(c.library, threads, c.precision if c.library == 'openvino'
                             else 'fp32')
        if c.library == 'onnxruntime' and c.precision != 'fp32':
            continue        # ORT's fp16/int8 are variants of the model file, not of a segment
        if lib not in out:
            out.append(lib)
    ort = SegmentLibrary('onnxruntime', threads, 'fp32')
    if ort not in out:
        out.append(ort)
    return out


class OrtSegmentRunner:
    """A segment's ONNX Runtime session on one device, with I/O binding."""

    def __init__(self, segment, threads: int = 1, slots: int = 2,
                 provider: str = 'CPUExecutionProvider', buffers=None):
        import onnxruntime as ort
        from .buffers import BufferProvider
        so = ort.SessionOptions()
        so.intra_op_num_threads = threads
        so.inter_op_num_threads = 1
        so.log_severity_level = 3
        so.add_session_config_entry('session.intra_op.allow_spinning', '0')
        self.segment = segment
        self.library = SegmentLibrary('onnxruntime', threads)
        self.sess = ort.InferenceSession(segment.model.SerializeToString(), so,
                                         providers=[provider])
        meta = {o.name: o for o in self.sess.get_outputs()}
        self.out_names = list(segment.outputs)
        # On a CUDA device the buffers are pinned host memory mapped into the GPU
        # (cuda-mapped provider): ORT gets their device pointers, the CPU side
        # reads the same memory. On the CPU: plain numpy.
        self.buffers = buffers or BufferProvider()
        self.where = 'cuda' if provider == 'CUDAExecutionProvider' else 'cpu'
        self.slots = [[self.buffers.empty(meta[n].shape, np.float32) for n in self.out_names]
                      for _ in range(slots)]
        self._staging: Dict[str, np.ndarray] = {}
        self.binding = self.sess.io_binding()
        self.copied = 0     # bytes ORT had to copy (a moved output buffer); should stay 0

    def input_shape(self) -> list:
        """Return the shape of the segment's first input."""
        return list(self.sess.get_inputs()[0].shape)

    def run(self, inputs: Dict[str, np.ndarray], slot: int) -> Dict[str, np.ndarray]:
        """Run on ``inputs`` (C-contiguous float32, bound by pointer) into buffer ``slot``."""
        b = self.binding
        for name in self.segment.inputs:
            arr = _checked(self.segment, name, inputs[name])
            b.bind_input(name, self.where, 0, np.float32, arr.shape, self._pointer(name, arr))
        bufs = self.slots[slot]
        for name, buf in zip(self.out_names, bufs):
            b.bind_output(name, self.where, 0, np.float32, buf.shape, self._pointer(None, buf))
        self.sess.run_with_iobinding(b)
        for name, buf, ov in zip(self.out_names, bufs, b.get_outputs()):
            if ov.data_ptr() != buf.ctypes.data:     # ORT allocated elsewhere: count it
                np.copyto(buf, ov.numpy())
                self.copied += buf.nbytes
        return dict(zip(self.out_names, bufs))

    def _pointer(self, name: Optional[str], arr: np.ndarray) -> int:
        """Return the address the device uses for ``arr`` (staging it if it is not mapped)."""
        if self.where == 'cpu':
            return arr.ctypes.data
        ptr = self.buffers.device_pointer(arr)
        if ptr is None and name is not None:    # e.g. the preprocessed frame: one copy
            ptr = _staged(self, name, arr)
        if ptr is None:
            raise SegmentError(f'{self.segment.name}: buffer not mapped for the device')
        return ptr


class OpenVinoSegmentRunner:
    """A segment compiled by OpenVINO for the CPU; tensors wrapped in place, never copied."""

    _HINT = {'fp32': 'f32', 'bf16': 'bf16', 'fp16': 'f16'}

    def __init__(self, segment, threads: int = 1, slots: int = 2, precision: str = 'fp32'):
        import openvino as ov
        if precision not in self._HINT:
            raise SegmentError(f'OpenVINO precision {precision!r}: use one of '
                               f"{', '.join(self._HINT)}")
        self._ov = ov
        self.segment = segment
        self.library = SegmentLibrary('openvino', threads, precision)
        core = ov.Core()
        try:
            model = core.read_model(segment.model.SerializeToString())
            self._compiled = core.compile_model(model, 'CPU', {
                'PERFORMANCE_HINT': 'LATENCY', 'INFERENCE_PRECISION_HINT': self._HINT[precision],
                'ENABLE_CPU_PINNING': False, 'NUM_STREAMS': 1, 'INFERENCE_NUM_THREADS': threads})
        except Exception as exc:  # OpenVINO raises RuntimeError for ops it cannot compile
            raise SegmentError(f'{segment.name} on {self.library.name}: '
                               f'{str(exc).strip().splitlines()[0] if str(exc).strip() else exc}'
                               ) from None
        self._request = self._compiled.create_infer_request()
        self.out_names = list(segment.outputs)
        shapes = [tuple(self._compiled.output(n).get_shape()) for n in self.out_names]
        self.slots = [[np.empty(s, np.float32) for s in shapes] for _ in range(slots)]
        self.copied = 0

    def input_shape(self) -> list:
        """Return the shape of the segment's first input."""
        return list(self._compiled.inputs[0].get_shape())

    def run(self, inputs: Dict[str, np.ndarray], slot: int) -> Dict[str, np.ndarray]:
        """Run on ``inputs`` (C-contiguous float32, wrapped in place) into buffer ``slot``."""
        ov, req = self._ov, self._request
        for name in self.segment.inputs:
            req.set_tensor(name, ov.Tensor(_checked(self.segment, name, inputs[name]),
                                           shared_memory=True))
        bufs = self.slots[slot]
        for name, buf in zip(self.out_names, bufs):
            req.set_tensor(name, ov.Tensor(buf, shared_memory=True))
        req.infer()
        for name, buf in zip(self.out_names, bufs):
            got = req.get_tensor(name).data
            if got.ctypes.data != buf.ctypes.data:   # written elsewhere: count the copy
                np.copyto(buf, got)
                self.copied += buf.nbytes
        return dict(zip(self.out_names, bufs))


def _staged(runner, name: str, arr: np.ndarray) -> Optional[int]:
    """Copy ``arr`` into the runner's mapped staging buffer for ``name`` (counted).

    Return the buffer's device address.
    """
    stage = runner._staging.get(name)
    if stage is None or stage.shape != arr.shape:
        stage = runner._staging[name] = runner.buffers.empty(arr.shape, np.float32)
    np.copyto(stage, arr)
    runner.copied += arr.nbytes
    return runner.buffers.device_pointer(stage)


def release_buffers(runner) -> None:
    """Hand a runner's output and staging buffers back to its provider (it runs no more).

    Pinned, device-mapped memory is kept by its provider (to find a buffer's
    device address): a runner dropped without this would hold it for the
    process's life.
    """
    buffers = getattr(runner, 'buffers', None)
    if buffers is None:
        return
    for arr in [a for slot in runner.slots for a in slot] + list(runner._staging.values()):
        buffers.release(arr)
    runner._staging.clear()


def _checked(segment, name: str, arr: np.ndarray) -> np.ndarray:
    if not arr.flags.c_contiguous or arr.dtype != np.float32:
        raise SegmentError(f'{segment.name}: input {name} must be C-contiguous float32 (got '
                           f'{arr.dtype}, contiguous {arr.flags.c_contiguous})')
    return arr


class TorchSegmentRunner:
    """A segment converted by onnx2torch, run by PyTorch on the GPU (device 'torch-cuda').

    ``mapped=True`` (the executor's path): inputs that lie in the executor's
    pinned buffers are wrapped as CUDA tensors and read by the kernels in
    place; the outputs, which PyTorch allocates in GPU memory, are copied by
    the GPU into the slot's pinned buffer (counted in ``copied``: PyTorch
    cannot be given an output address). ``mapped=False``: the discrete-GPU
    habit, one host-to-device copy per input and one device-to-host copy
    per output (all counted).
    """

    def __init__(self, segment, slots: int = 2, buffers=None, mapped: bool = True,
                 device: str = 'cuda'):
        from .buffers import as_cuda_tensor
        from ..backends.libs.torch_cuda import convert, cuda_torch
        from ..core.backend import BackendError
        torch: Any
        if device == 'cuda':
            torch, found = cuda_torch()
            if torch is None:
                raise SegmentError(f'{segment.name}: {found}')
        else:   # 'cpu': the same conversion and wiring, testable without a GPU
            try:
                torch = importlib.import_module('torch')
            except ImportError as exc:
                raise SegmentError(f'{segment.name}: torch not importable ({exc})') from None
        if mapped and (buffers is None or device != 'cuda'):
            raise SegmentError(f'{segment.name}: a mapped torch runner needs CUDA and pinned '
                               'buffers')
        self.torch, self.segment, self.mapped, self.device = torch, segment, mapped, device
        self.library = SegmentLibrary('torch', 1, 'fp32')
        self._wrap = as_cuda_tensor
        try:
            self.module = convert(segment.model, f'torch segment {segment.name}',
                                  segment.name).to(device)
        except BackendError as exc:
            raise SegmentError(str(exc)) from None
        g = segment.model.graph
        inits = {i.name for i in g.initializer}
        self.in_names = [i.name for i in g.input if i.name not in inits]
        self.out_names = [o.name for o in g.output]     # the module's output order
        self.buffers = buffers
        self._staging: Dict[str, np.ndarray] = {}
        self.copied = 0
        with torch.inference_mode():    # one run on zeros gives the output shapes
            outs = self._forward([torch.zeros(_dims(g, n), device=device)
                                  for n in self.in_names])
        alloc = buffers.empty if buffers is not None else np.empty
        self.slots = [[alloc(tuple(o.shape), np.float32) for o in outs] for _ in range(slots)]
        # each slot's buffers as tensors once (the GPU's view of the pinned memory, or the
        # CPU's), so that a frame only copies the outputs into them
        self._targets = [[as_cuda_tensor(torch, buffers.device_pointer(b), b.shape) if mapped
                          else torch.from_numpy(b) for b in bufs] for bufs in self.slots]

    def input_shape(self) -> list:
        """Return the shape of the segment's first input."""
        return _dims(self.segment.model.graph, self.in_names[0])

    def _forward(self, xs) -> list:
        out = self.module(*xs)
        return list(out) if isinstance(out, (list, tuple)) else [out]

    def _device_input(self, name: str, arr: np.ndarray):
        torch = self.torch
        if not self.mapped:
            self.copied += arr.nbytes if self.device == 'cuda' else 0
            return torch.from_numpy(arr).to(self.device)
        ptr = self.buffers.device_pointer(arr)
        if ptr is None:         # e.g. the preprocessed frame: one copy into pinned memory
            ptr = _staged(self, name, arr)
        return self._wrap(torch, ptr, arr.shape)

    def run(self, inputs: Dict[str, np.ndarray], slot: int) -> Dict[str, np.ndarray]:
        """Run on ``inputs`` (C-contiguous float32) into buffer ``slot``."""
        torch = self.torch
        with torch.inference_mode():
            xs = [self._device_input(n, _checked(self.segment, n, inputs[n]))
                  for n in self.in_names]
            outs = self._forward(xs)
            bufs = self.slots[slot]
            for buf, dst, o in zip(bufs, self._targets[slot], outs):
                dst.copy_(o)
                self.copied += buf.nbytes
            if self.device == 'cuda':
                torch.cuda.synchronize()
        return dict(zip(self.out_names, bufs))


def _dims(graph, name: str) -> list:
    vi = next(i for i in graph.input if i.name == name)
    return [d.dim_value or 1 for d in vi.type.tensor_type.shape.dim]


def open_segment_runner(segment, library: SegmentLibrary, slots: int = 2,
                        provider: str = 'CPUExecutionProvider', buffers=None):
    """Return a runner of ``segment`` on ``library`` (SegmentError when it cannot)."""
    if provider == 'torch-cuda':
        if library.library != 'torch':
            raise SegmentError(f'{library.name} does not run on the torch-cuda device')
        return TorchSegmentRunner(segment, slots, buffers)
    if library.library == 'openvino':
        if provider != 'CPUExecutionProvider':
            raise SegmentError(f'{library.name} runs on the CPU only, not {provider}')
        return OpenVinoSegmentRunner(segment, library.threads, slots, library.precision)
    return OrtSegmentRunner(segment, library.threads, slots, provider, buffers)

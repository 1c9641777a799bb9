# Copyright 2026 edge_infer contributors. Apache-2.0.
"""ncnn (PyPI ``ncnn``) as backend candidates: CPU fp32 / fp16 and Vulkan fp32 / fp16.

Models are converted from ONNX with the ``pnnx`` binary, once per model
file, cached and checksummed, and run once in a separate process before
this one opens them (:mod:`.pnnx`).

Candidates (:func:`ncnn_candidates`):

- ``ncnn/cpu/tN``: fp32, N threads; ``use_fp16_packed/storage/arithmetic``
  switched off (ncnn's default turns fp16 storage on even on x86: logits
  differ by 7e-3 with it, 1e-5 without);
- ``ncnn/cpu/tN/fp16``: fp16 storage and arithmetic, admitted only through
  the manager's accuracy check;
- ``ncnn/vulkan:<device>`` and ``ncnn/vulkan:<device>/fp16``: ncnn's Vulkan
  compute on each device it sees (Mali via libmali / PanVK, Jetson's L4T
  Vulkan, Raspberry Pi v3dv, Mesa lavapipe on a machine without a GPU: a
  software device, correct but 15-47x ONNX Runtime's time here). The first
  run compiles the shaders (0.25-10 s). Named even when there is no device,
  so the report says why they are unavailable.

Traps, each handled here:

- ncnn bundles GNU libgomp, which stalls 0.24-1.5 s (up to 91x the median)
  at 2 threads when the cores are shared; ``opt.openmp_blocktime`` has no
  effect on libgomp, ``OMP_WAIT_POLICY=PASSIVE`` read when the library
  loads removes the stalls. This module sets it (``setdefault``: a value
  from the environment wins) before ncnn is imported, imports ncnn lazily,
  and when ncnn was imported before this module could set it, says so in
  :meth:`NcnnBackend.options` and :meth:`NcnnBackend.available`. The
  variable applies to every libgomp the process loads afterwards.
- With ``use_vulkan_compute`` and no usable Vulkan device ncnn quietly runs
  on the CPU (it resets the option): a Vulkan session checks that the net
  kept Vulkan on and holds a device, and fails otherwise.
- ``ncnn.Mat(numpy_array)`` does not copy: the session keeps the array it
  wrapped alive until the next run (outputs are garbage otherwise). Such a
  Mat's channel stride is the channel's size, while ncnn aligns channels to
  16 bytes: with an input whose H x W is not a multiple of 4 the Vulkan
  upload reads garbage (measured on lavapipe: errors of 18 to 7e33; the CPU
  path copes). Such inputs are copied into an aligned Mat allocated once.
- Outputs: ``np.asarray(mat)`` is a view holding the Mat. With ncnn
  1.0.20261020 (CPU) a held view stayed intact, but a net's local pool
  allocator warns "pool allocator destroyed too early" when a net dies
  with Mats out: outputs are copied into arrays allocated once per session
  (1.8 MB for NanoDet, < 1 % of a run), the Mats released in ``run``.
"""

import os
import pathlib
import platform
import sys
import threading
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from . import installed, vulkan as vk
from .ncnn_session import NcnnSession, OnnxIO
from .pnnx import (convert, first_run_verdict, INSTALL_PNNX, param_graph, pnnx_binary,
                   pnnx_version)
from ...core.backend import Backend, BackendError, first_line, Session, UnsupportedModel

# Before ncnn (and its libgomp) loads; see the module docstring.
_NCNN_PRELOADED = 'ncnn' in sys.modules
os.environ.setdefault('OMP_WAIT_POLICY', 'PASSIVE')

NCNN_PIN = '1.0.20261020'
INSTALL_NCNN = f'pip install ncnn=={NCNN_PIN}'
INSTALL_VULKAN = ("install mesa-vulkan-drivers libvulkan1 (lavapipe) or the board's "
                  'Vulkan driver')
# Vulkan devices that are the CPU in disguise (Mesa lavapipe, SwiftShader).
SOFTWARE_GPUS = ('llvmpipe', 'lavapipe', 'swiftshader')
PRECISIONS = ('fp32', 'fp16')
Log = Callable[[str], object]

_lock = threading.Lock()
_state: Dict[str, object] = {}


# ------------------------------------------------------------------ the library
def _ncnn():
    """Import ncnn (first call: note the OpenMP wait policy its libgomp starts with)."""
    with _lock:
        if 'omp_wait_policy' not in _state:
            _state['omp_wait_policy'] = _policy_at_load()
    import ncnn
    return ncnn


def _policy_at_load() -> str:
    """Return the OMP_WAIT_POLICY ncnn's libgomp reads when ncnn loads now, or why unknown."""
    if not _NCNN_PRELOADED:
        return (os.environ.get('OMP_WAIT_POLICY') or 'unset').upper()
    try:     # the process's environment at exec: it applied to any library loaded since
        with open('/proc/self/environ', 'rb') as f:
            env = dict(kv.split(b'=', 1) for kv in f.read().split(b'\0') if b'=' in kv)
        start = env.get(b'OMP_WAIT_POLICY')
    except OSError:
        start = None
    if start:
        return start.decode(errors='replace').upper()
    return ('unknown: ncnn was imported before edge_infer.backends.libs.ncnn could set '
            'OMP_WAIT_POLICY=PASSIVE')


def omp_wait_policy() -> str:
    """Return the wait policy of ncnn's libgomp ('PASSIVE', 'ACTIVE', 'UNSET', 'unknown: ...')."""
    try:
        _ncnn()     # loads ncnn now if not yet: the policy is then fixed and recorded
    except ImportError:
        return _policy_at_load()
    return str(_state['omp_wait_policy'])


def ncnn_version() -> str:
    """Return the installed ncnn version ('' if none), without loading ncnn (:mod:`.installed`)."""
    version = installed.dist_version('ncnn')[1]
    if version:
        return version
    try:
        return str(_ncnn().__version__)
    except ImportError:
        return ''


OPTION_DEFAULTS = ('use_bf16_storage', 'use_packing_layout', 'use_winograd_convolution',
                   'use_sgemm_convolution', 'use_int8_inference', 'lightmode',
                   'openmp_blocktime')


def option_defaults() -> Dict[str, object]:
    """Return ncnn's ``Option()`` defaults a profile depends on, kept in ncnn_options.json."""
    version = ncnn_version()
    if not version:
        return {}

    def ask() -> Dict[str, object]:
        got = installed.asked_apart(
            'ncnn', 'import json, sys, ncnn; o = ncnn.Option(); '
            'print(json.dumps({k: getattr(o, k, None) for k in sys.argv[1:]}))',
            *OPTION_DEFAULTS)
        if isinstance(got, dict):
            return got
        try:
            opt = _ncnn().Option()
        except ImportError:
            return {}
        return {k: getattr(opt, k, None) for k in OPTION_DEFAULTS}
    file = _state.get('options_file')
    key = {'ncnn': version, 'machine': platform.machine()}
    return dict(installed.kept(file if isinstance(file, pathlib.Path) else None, key, ask) or {})


def vulkan_devices() -> List[Tuple[int, str, str]]:
    """Return (index, full name, short name) of every Vulkan device ncnn sees (:mod:`.vulkan`).

    Kept in the cache folder between starts: ncnn's Vulkan instance (and
    with it every Vulkan driver) is created only when the drivers changed.
    """
    return vk.devices(_ncnn, ncnn_version())


class NcnnBackend(Backend):
    """ncnn on the CPU (N threads) or on one Vulkan device, at fp32 or fp16."""

    library = 'ncnn'

    def __init__(self, device: str = 'cpu', threads: int = 1, precision: str = 'fp32',
                 cache_dir: Optional[pathlib.Path] = None, gpu_index: Optional[int] = None,
                 log: Log = print):
        """Describe one candidate.

        :param device: 'cpu' or 'vulkan'.
        :param threads: ncnn ``num_threads`` (Vulkan: for the layers left on the CPU).
        :param precision: 'fp32' (fp16 packing, storage and arithmetic off) or
            'fp16' (all three on).
        :param cache_dir: where converted models go (``<cache_dir>/ncnn/``);
            default the data home's cache.
        :param gpu_index: Vulkan device index (default: ncnn's default device).
        :param log: gets a line when a model is converted or reconverted.
        """
        if device not in ('cpu', 'vulkan'):
            raise ValueError(f"ncnn device {device!r}: use 'cpu' or 'vulkan'")
        if precision not in PRECISIONS:
            raise ValueError(f'ncnn precision {precision!r}: use one of {", ".join(PRECISIONS)}')
        if cache_dir is None:
            from ... import paths
            cache_dir = paths.data_home() / 'cache'
        self.cache_dir = pathlib.Path(cache_dir)
        self.threads = max(1, int(threads))
        self.precision = precision
        self.log = log
        self.gpu_index: Optional[int] = None
        self.gpu_name = ''
        if device == 'cpu':
            self.device = 'cpu'
            self.name = f'ncnn/cpu/t{self.threads}'
            self.tensor_passing = ('input wrapped without a copy (ncnn.Mat over the numpy '
                                   'buffer; copied into an aligned Mat allocated once when a '
                                   'channel is not a multiple of 16 bytes); outputs copied '
                                   "from ncnn's Mats into arrays allocated once")
        else:
            gpus = vulkan_devices()
            if gpu_index is None and gpus:
                gpu_index = vk.default_index(_ncnn, ncnn_version())
            found = [g for g in gpus if g[0] == gpu_index]
            if found:
                self.gpu_index, self.gpu_name, short = found[0]
                self.device = f'vulkan:{short}'
            else:
                self.gpu_index = gpu_index
                self.device = 'vulkan' if gpu_index is None else f'vulkan:{gpu_index}'
            self.name = f'ncnn/{self.device}'
            self.tensor_passing = ('copy: input wrapped without a copy (as on the CPU), '
                                   'uploaded to the Vulkan device and outputs downloaded by '
                                   'ncnn (staging buffers) each run, then copied into arrays '
                                   'allocated once')
        if precision != 'fp32':
            self.name += f'/{precision}'

    @property
    def vulkan(self) -> bool:
        """Return whether this candidate runs on a Vulkan device."""
        return self.device.startswith('vulkan')

    def options(self) -> Dict[str, object]:
        """Return every ncnn option set here and the OpenMP / Vulkan settings that matter."""
        fp16 = self.precision == 'fp16'
        out: Dict[str, object] = {
            'device': self.device, 'gpu_index': self.gpu_index, 'num_threads': self.threads,
            'use_vulkan_compute': self.vulkan, 'use_fp16_packed': fp16,
            'use_fp16_storage': fp16, 'use_fp16_arithmetic': fp16,
            'pnnx': 'fp16=0 optlevel=2 (weights stored fp32)',
            # the policy ncnn starts with; read without loading it (:mod:`.installed`)
            'OMP_WAIT_POLICY': (omp_wait_policy() if 'ncnn' in sys.modules
                                else _policy_at_load()),
            'GOMP_SPINCOUNT': os.environ.get('GOMP_SPINCOUNT', ''),
        }
        if self.vulkan:
            out['LP_NUM_THREADS'] = os.environ.get('LP_NUM_THREADS', '')
        out.update(option_defaults())
        return out

    def versions(self) -> Dict[str, str]:
        """Return the ncnn and pnnx versions, and the Vulkan device's driver if it uses one."""
        out = {'ncnn': ncnn_version(), 'pnnx': pnnx_version() if pnnx_binary() else ''}
        if self.vulkan and self.gpu_name:
            drv = vk.driver(_ncnn, ncnn_version(), self.gpu_index)
            out['vulkan_device'] = f'{self.gpu_name} ({drv})' if drv else self.gpu_name
        return out

    def available(self) -> Tuple[bool, str]:
        """Check ncnn, the pnnx binary and (Vulkan) the device; no model is run."""
        try:
            ncnn = _ncnn()
        except ImportError as exc:
            return False, f'ncnn not installed: {INSTALL_NCNN} ({first_line(exc)})'
        exe = pnnx_binary()
        if exe is None:
            return False, f'pnnx converter binary not found: {INSTALL_PNNX}'
        if not os.access(exe, os.X_OK):
            return False, f'pnnx binary {exe} is not executable (chmod +x it)'
        found = f'ncnn {ncnn.__version__}, pnnx {pnnx_version()}'
        if not self.vulkan:
            found += f', CPU, {self.threads} thread(s)'
            policy = omp_wait_policy()
            if self.threads > 1 and policy != 'PASSIVE':
                found += (f"; OMP_WAIT_POLICY {policy}: ncnn's libgomp may stall "
                          '0.2-1.5 s per run on shared cores')
            return True, found
        if not hasattr(ncnn, 'get_gpu_count'):
            return False, f'this ncnn {ncnn.__version__} build has no Vulkan support'
        gpus = vulkan_devices()
        if not gpus:
            return False, f'no Vulkan device (ncnn.get_gpu_count() == 0): {INSTALL_VULKAN}'
        match = [g for g in gpus if g[0] == self.gpu_index]
        if not match:
            return False, (f'Vulkan device {self.device} not found (ncnn sees '
                           f'{", ".join(g[1] for g in gpus)})')
        full = match[0][1]
        found += f', Vulkan device {self.gpu_index}: {full}'
        if any(s in full.lower() for s in SOFTWARE_GPUS):
            found += " (a software Vulkan device on the CPU: expect 15-50x ONNX Runtime's time)"
        return True, found

    def open_session(self, model_path: pathlib.Path, strict: bool = False,
                     input_spec=None) -> Session:
        """Convert (cached) and open the model; BackendError saying why when it cannot.

        Every load is strict: a Vulkan net that ncnn turns back to the CPU
        fails. ``input_spec`` is not needed (float input).
        """
        path = pathlib.Path(model_path)
        if not path.is_file():
            raise BackendError(f'{self.name}: model file {path} not found')
        ok, why = self.available()
        if not ok:
            raise BackendError(f'{self.name}: {why}')
        io = OnnxIO(path, self.name)
        files = convert(path, self.cache_dir, io.input_shape, log=self.log, who=self.name)
        ncnn = _ncnn()
        types, blobs = param_graph(files.param)
        unknown = sorted({t for t in types if ncnn.layer_to_index(t) < 0})
        if unknown:
            raise UnsupportedModel(f'{self.name}: ncnn has no layer for {", ".join(unknown)} '
                                   f'(pnnx output for {path.name})')
        wanted = ['in0'] + [f'out{k}' for k in range(len(io.output_names))]
        missing = [b for b in wanted if b not in blobs]
        if missing:
            raise UnsupportedModel(f'{self.name}: the converted {path.name} lacks blobs '
                                   f'{", ".join(missing)} (pnnx names the input in0 and the '
                                   f'{len(io.output_names)} outputs out0..)')
        crashed = first_run_verdict(files, io.input_shape, len(io.output_names))
        if crashed:
            raise BackendError(f'{self.name}: {crashed}')
        net = ncnn.Net()
        opt = net.opt
        opt.num_threads = self.threads
        fp16 = self.precision == 'fp16'
        opt.use_fp16_packed = fp16
        opt.use_fp16_storage = fp16
        opt.use_fp16_arithmetic = fp16
        opt.use_vulkan_compute = self.vulkan
        if self.vulkan:
            net.set_vulkan_device(int(self.gpu_index or 0))
        if net.load_param(os.fspath(files.param)) != 0 or \
                net.load_model(os.fspath(files.bin)) != 0:
            net.clear()
            raise BackendError(f'{self.name}: ncnn could not load {files.param.name} / .bin')
        if self.vulkan and (not net.opt.use_vulkan_compute or net.vulkan_device() is None):
            net.clear()
            raise BackendError(f'{self.name}: ncnn turned Vulkan off while loading and would '
                               'run on the CPU (silent fallback)')
        return NcnnSession(net, self.name, io, wanted[1:], _ncnn())


def ncnn_candidates(cache_dir: Optional[pathlib.Path] = None, threads: Sequence[int] = (1, 2),
                    fp16: bool = True, vulkan: bool = True,
                    log: Log = print) -> List[NcnnBackend]:
    """Return the ncnn candidates (Vulkan ones even without a device: the report says why).

    CPU fp32 per thread count, CPU fp16 at the largest thread count
    (``fp16``), and per Vulkan device fp32 and fp16 (``vulkan``; one
    thread for the layers ncnn leaves on the CPU). Making the Vulkan
    candidates reads the device list kept in ``cache_dir``, or creates ncnn's
    Vulkan instance (:mod:`.vulkan`).
    """
    if cache_dir is not None:
        vk.use_cache(pathlib.Path(cache_dir) / 'vulkan_devices.json')
        _state['options_file'] = pathlib.Path(cache_dir) / 'ncnn_options.json'
    out = [NcnnBackend('cpu', t, 'fp32', cache_dir, log=log) for t in threads]
    if fp16 and threads:
        out.append(NcnnBackend('cpu', max(threads), 'fp16', cache_dir, log=log))
    if vulkan:
        precisions = PRECISIONS if fp16 else ('fp32',)
        gpus: List[Optional[int]] = [g[0] for g in vulkan_devices()] or [None]
        for index in gpus:
            for p in precisions:
                out.append(NcnnBackend('vulkan', 1, p, cache_dir, gpu_index=index, log=log))
    return out

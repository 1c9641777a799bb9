# Copyright 2026 edge_infer contributors. Apache-2.0.
"""Experiment 1: SGEMM throughput (float32 C = A.B, n x n) by library and matrix size.

    ./run.sh exec python bench/papers/exp1_sgemm.py [--sizes 64 128 ...] [--repeats 11]
        [--min-seconds 0.5] [--quick]

Reproduces Lee & Shin 2019, Fig. 4: GFLOP/s of SGEMM per
device-library pair as the matrices grow. Libraries, each probed first and
listed with the reason when it cannot run here (never replaced by another):

- numpy -> the BLAS numpy was built with (OpenBLAS in the wheels), with its
  own thread count and with 1 thread (set through OpenBLAS's
  ``openblas_set_num_threads``, found in the loaded library at run time);
- ONNX Runtime, a one-node MatMul model (built with onnx.helper, A and B
  graph inputs, IO binding into a preallocated C), CPU execution provider
  with intra-op threads = all CPUs of this process, and 1;
- OpenCL: CLBlast through pyclblast (+ pyopencl buffers), on the first
  OpenCL device (a GPU when there is one);
- CUDA: ONNX Runtime's CUDA execution provider (same model, A, B and C on
  the device through IO binding) and cupy.matmul (cuBLAS).

Per size, every library runs side by side (same inputs, same background
load): ``--repeats`` timed calls after 2 warm-ups (more while under
``--min-seconds``), device libraries synchronised inside the timed call, their
inputs already on the device (copies not timed, as in a GEMM benchmark).
GFLOP/s = 2 n^3 / t; reported: median, min and max over the calls. Each
library's product is compared once per size with numpy's float64 product; a
library off by more than ``TOLERANCE`` (relative to max |C|) is marked wrong
and left out of the winners and of the peak.

Peak ("physical limit" line): the best median GFLOP/s measured over all
libraries and sizes. Beside it, a bound computed only from what
/proc/cpuinfo (and cpufreq) say at run time: physical cores x clock x SIMD
float32 lanes (from the avx512f / avx / sse / asimd flags) x 2 when the fma
flag is there, per FMA pipe (the pipe count is not readable, so 1- and
2-pipe figures are both given).
"""

import argparse
import ctypes
import glob
import os
import pathlib
import sys
import time
from typing import Callable, Dict, List, Optional, Tuple

import benchlib
import numpy as np

SIZES = [64, 96, 128, 192, 256, 384, 512, 768, 1024, 1536, 2048]
QUICK_SIZES = [64, 128, 256]
TOLERANCE = 1e-4          # max |C - C_float64| / max |C_float64| accepted


def gflops(n: int, ms: float) -> float:
    """Return GFLOP/s of one n x n x n SGEMM that took ``ms`` milliseconds (2 n^3 flops)."""
    return 2.0 * float(n) ** 3 / (ms * 1e-3) / 1e9


def cpu_count() -> int:
    """Return the CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:      # not Linux
        return os.cpu_count() or 1


class OpenBlas:
    """numpy's OpenBLAS, reached with ctypes: thread count, core type, configuration."""

    NAMES = {'get': 'get_num_threads', 'set': 'set_num_threads', 'core': 'get_corename',
             'config': 'get_config'}

    def __init__(self):
        self.path, self.reason, self._fn = None, '', {}
        libs = self._loaded()
        if not libs:
            self.reason = ("no OpenBLAS library loaded with numpy (numpy's BLAS is "
                           f'{blas_name()}); its thread count cannot be read or set')
            return
        for path in libs:
            try:
                lib = ctypes.CDLL(path)
            except OSError as exc:
                self.reason = f'cannot open {path}: {exc}'
                continue
            for key, base in self.NAMES.items():
                for pre in ('openblas_', 'scipy_openblas_'):
                    for suf in ('', '64_', '_64'):
                        f = getattr(lib, pre + base + suf, None)
                        if f is not None and key not in self._fn:
                            self._fn[key] = f
            if 'get' in self._fn and 'set' in self._fn:
                self.path = path
                self._fn['get'].restype = ctypes.c_int
                self._fn['set'].argtypes = [ctypes.c_int]
                for k in ('core', 'config'):
                    if k in self._fn:
                        self._fn[k].restype = ctypes.c_char_p
                return
            self._fn = {}
            self.reason = f'{path} has no openblas_get/set_num_threads'

    @staticmethod
    def _loaded() -> List[str]:
        out = []      # numpy is imported, so its BLAS is mapped
        try:
            for line in pathlib.Path('/proc/self/maps').read_text().splitlines():
                p = line.split()[-1]
                if 'openblas' in os.path.basename(p).lower() and '.so' in p and p not in out:
                    out.append(p)
        except OSError:     # not Linux: look beside numpy
            root = pathlib.Path(np.__file__).parent.parent
            out = sorted(glob.glob(str(root / 'numpy*libs' / '*openblas*')))
        return out

    @property
    def ok(self) -> bool:
        """Say whether the thread count can be read and set."""
        return self.path is not None

    def threads(self) -> Optional[int]:
        """Return OpenBLAS's current thread count (None when unknown)."""
        return int(self._fn['get']()) if self.ok else None

    def set_threads(self, n: int) -> None:
        """Set OpenBLAS's thread count."""
        if self.ok:
            self._fn['set'](int(n))

    def core(self) -> str:
        """Return the kernel set OpenBLAS picked for this CPU (e.g. Haswell), or ''."""
        f = self._fn.get('core')
        return f().decode(errors='replace').strip() if f else ''


def blas_name() -> str:
    """Return the name and version of numpy's BLAS, where numpy says."""
    try:
        blas = np.show_config(mode='dicts')['Build Dependencies']['blas']
        return f"{blas.get('name', '?')} {blas.get('version', '')}".strip()
    except Exception:  # numpy < 1.26 has no mode='dicts'
        return 'unknown BLAS'


class Library:
    """One SGEMM implementation: probe it, bind it to A and B, time it, fetch C."""

    library = '?'
    device = 'cpu'

    def __init__(self, threads: Optional[int] = None):
        self.threads = threads

    @property
    def label(self) -> str:
        """Return the name shown in the table and the plot."""
        return self.library + (f' {self.threads}T' if self.threads else '')

    def probe(self) -> Tuple[bool, str]:
        """Return (usable here, detail or the reason it is not)."""
        return True, ''

    def bind(self, a: np.ndarray, b: np.ndarray) -> Callable[[], None]:
        """Return the timed call computing C = A.B (synchronised; inputs already in place)."""
        raise NotImplementedError

    def fetch(self) -> np.ndarray:
        """Return the last product on the host."""
        raise NotImplementedError

    def close(self) -> None:
        """Free what bind() made."""


class NumpyBlas(Library):
    """numpy.matmul into a preallocated C, OpenBLAS threads set for the call."""

    device = 'cpu'

    def __init__(self, threads: Optional[int], blas: OpenBlas):
        super().__init__(threads)
        self.blas = blas
        self.library = f'numpy/{blas_name().split()[0]}'
        self.c = None

    def probe(self):
        """Say whether numpy's BLAS thread count can be set to the one asked for."""
        if self.threads is not None and not self.blas.ok:
            return False, self.blas.reason
        return True, f'{blas_name()} core {self.blas.core() or "?"}'

    def bind(self, a, b):
        """Set the thread count and return the matmul call."""
        if self.threads is not None:
            self.blas.set_threads(self.threads)
        self.c = np.empty((a.shape[0], b.shape[1]), np.float32)
        c = self.c
        return lambda: np.matmul(a, b, out=c)

    def fetch(self):
        """Return C."""
        return self.c


def matmul_model(n: int):
    """Return a one-node ONNX model C = MatMul(A, B) with A, B float32 [n, n] inputs."""
    from onnx import helper, TensorProto
    vi = helper.make_tensor_value_info
    graph = helper.make_graph([helper.make_node('MatMul', ['A', 'B'], ['C'])], f'sgemm{n}',
                              [vi('A', TensorProto.FLOAT, [n, n]),
                               vi('B', TensorProto.FLOAT, [n, n])],
                              [vi('C', TensorProto.FLOAT, [n, n])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid('', 17)])
    model.ir_version = 8
    return model


class OrtMatMul(Library):
    """ONNX Runtime MatMul through IO binding (CPU or CUDA execution provider)."""

    EP = {'cpu': 'CPUExecutionProvider', 'cuda': 'CUDAExecutionProvider'}

    def __init__(self, threads: Optional[int] = None, device: str = 'cpu'):
        super().__init__(threads if device == 'cpu' else None)
        self.device = device
        self.library = f'onnxruntime/{device}'
        self.sess = self.binding = self.c = self.c_dev = None

    def probe(self):
        """Say whether the execution provider is listed by this ONNX Runtime."""
        try:
            import onnxruntime as ort
        except ImportError as exc:
            return False, f'onnxruntime not importable ({exc})'
        listed = ort.get_available_providers()
        if self.EP[self.device] not in listed:
            return False, (f'{self.EP[self.device]} not in this onnxruntime {ort.__version__} '
                           f'(providers: {", ".join(listed)}); a GPU build is needed')
        return True, f'onnxruntime {ort.__version__} {self.EP[self.device]}'

    def bind(self, a, b):
        """Build the session for this n, bind A, B and C, return the run call."""
        import onnxruntime as ort
        self.close()
        n = a.shape[0]
        so = ort.SessionOptions()
        so.log_severity_level = 3
        so.inter_op_num_threads = 1
        if self.threads:
            so.intra_op_num_threads = int(self.threads)
        ep = self.EP[self.device]
        self.sess = ort.InferenceSession(matmul_model(n).SerializeToString(), so,
                                         providers=[ep])
        if ep not in self.sess.get_providers():
            raise RuntimeError(f'{ep} was requested but the session runs on '
                               f'{self.sess.get_providers()}')
        bd = self.sess.io_binding()
        if self.device == 'cpu':
            self.c = np.empty((n, n), np.float32)
            bd.bind_cpu_input('A', a)
            bd.bind_cpu_input('B', b)
            bd.bind_ortvalue_output('C', ort.OrtValue.ortvalue_from_numpy(self.c))
        else:
            self._a = ort.OrtValue.ortvalue_from_numpy(a, 'cuda', 0)
            self._b = ort.OrtValue.ortvalue_from_numpy(b, 'cuda', 0)
            self.c_dev = ort.OrtValue.ortvalue_from_shape_and_type([n, n], np.float32,
                                                                   'cuda', 0)
            bd.bind_ortvalue_input('A', self._a)
            bd.bind_ortvalue_input('B', self._b)
            bd.bind_ortvalue_output('C', self.c_dev)
        self.binding = bd
        sess = self.sess
        return lambda: sess.run_with_iobinding(bd)   # Run() synchronises the EP's stream

    def fetch(self):
        """Return C (copied from the device for CUDA)."""
        return self.c if self.device == 'cpu' else self.c_dev.numpy()

    def close(self):
        """Drop the session and the bound buffers."""
        self.sess = self.binding = self.c = self.c_dev = None
        self._a = self._b = None


class ClBlast(Library):
    """CLBlast SGEMM through pyclblast on pyopencl arrays (OpenCL)."""

    library = 'clblast/opencl'
    device = 'opencl'

    def __init__(self):
        super().__init__(None)
        self.ctx = self.queue = None
        self.bufs = None

    def probe(self):
        """Import pyopencl and pyclblast and find an OpenCL device (a GPU first)."""
        try:
            import pyopencl as cl
        except ImportError as exc:
            return False, f'pyopencl not importable ({exc}); pip install pyopencl'
        try:
            import pyclblast  # noqa: F401
        except ImportError as exc:
            return False, f'pyclblast not importable ({exc}); pip install pyclblast'
        try:
            devs = [d for p in cl.get_platforms() for d in p.get_devices()]
        except Exception as exc:  # no ICD loader / no platform: pyopencl raises LogicError
            return False, f'no OpenCL platform ({str(exc).splitlines()[0]})'
        if not devs:
            return False, 'OpenCL platforms list no device'
        gpus = [d for d in devs if d.type & cl.device_type.GPU]
        dev = (gpus or devs)[0]
        self.ctx = cl.Context([dev])
        self.queue = cl.CommandQueue(self.ctx)
        self.device = f'opencl:{dev.name.strip()}'
        return True, f'{dev.platform.name.strip()} / {dev.name.strip()}'

    def bind(self, a, b):
        """Copy A and B to the device and return the gemm call (finished inside)."""
        import pyclblast
        from pyopencl.array import Array, to_device
        n, k, m = a.shape[0], a.shape[1], b.shape[1]
        ca, cb = to_device(self.queue, a), to_device(self.queue, b)
        cc = Array(self.queue, (n, m), np.float32)
        self.bufs = (ca, cb, cc)
        q = self.queue

        def call():
            pyclblast.gemm(q, n, m, k, ca, cb, cc, a_ld=k, b_ld=m, c_ld=m)
            q.finish()
        return call

    def fetch(self):
        """Return C copied to the host."""
        return self.bufs[2].get()

    def close(self):
        """Drop the device arrays."""
        self.bufs = None


class Cupy(Library):
    """cupy.matmul (cuBLAS) on device arrays, synchronised per call."""

    library = 'cupy/cuda'
    device = 'cuda'

    def __init__(self):
        super().__init__(None)
        self.bufs = None

    def probe(self):
        """Import cupy and find a CUDA device."""
        try:
            import cupy
        except ImportError as exc:
            return False, f'cupy not importable ({exc}); pip install cupy-cudaXXx'
        try:
            count = cupy.cuda.runtime.getDeviceCount()
        except Exception as exc:  # no driver: CUDARuntimeError
            return False, f'no CUDA device ({str(exc).splitlines()[0]})'
        if not count:
            return False, 'CUDA lists no device'
        name = cupy.cuda.runtime.getDeviceProperties(0)['name']
        return True, name.decode() if isinstance(name, bytes) else str(name)

    def bind(self, a, b):
        """Copy A and B to the device and return the matmul call."""
        import cupy
        ca, cb = cupy.asarray(a), cupy.asarray(b)
        cc = cupy.empty((a.shape[0], b.shape[1]), cupy.float32)
        self.bufs = (ca, cb, cc)
        sync = cupy.cuda.Stream.null.synchronize

        def call():
            cupy.matmul(ca, cb, out=cc)
            sync()
        return call

    def fetch(self):
        """Return C copied to the host."""
        return self.bufs[2].get()

    def close(self):
        """Drop the device arrays."""
        self.bufs = None


def libraries(blas: OpenBlas, cores: int) -> List[Library]:
    """Return every library configuration this experiment tries, in table order."""
    threads = [cores] + ([1] if cores > 1 else [])
    out: List[Library] = [NumpyBlas(t, blas) for t in threads]
    out += [OrtMatMul(t) for t in threads]
    out += [ClBlast(), OrtMatMul(device='cuda'), Cupy()]
    return out


# -- the cpuinfo-derived bound -------------------------------------------------------------

def parse_cpuinfo(text: str) -> List[Dict[str, str]]:
    """Split /proc/cpuinfo text into one dict per processor block."""
    blocks, cur = [], {}
    for line in text.splitlines():
        if not line.strip():
            if cur:
                blocks.append(cur)
            cur = {}
            continue
        if ':' in line:
            k, v = line.split(':', 1)
            cur[k.strip()] = v.strip()
    if cur:
        blocks.append(cur)
    return [b for b in blocks if 'processor' in b and b['processor'].isdigit()]


def cpu_bound(cpuinfo: str, cpus, max_khz: Optional[Dict[int, int]] = None) -> dict:
    """Return the float32 peak bound from cpuinfo text (only what it and cpufreq say).

    ``cpus``: the CPU numbers this process runs on; ``max_khz``: cpufreq's
    cpuinfo_max_freq per CPU (used where cpuinfo has no 'cpu MHz', as on ARM).
    Returns cores, mhz, lanes, flops per lane per instruction, the GFLOP/s
    per FMA pipe and the sources; or {'reason': ...}.
    """
    blocks = [b for b in parse_cpuinfo(cpuinfo) if int(b['processor']) in set(cpus)]
    if not blocks:
        return {'reason': 'no processor of this process found in /proc/cpuinfo'}
    if all('core id' in b for b in blocks):
        cores = len({(b.get('physical id', '0'), b['core id']) for b in blocks})
        core_src = 'distinct (physical id, core id)'
    else:
        cores = len(blocks)
        core_src = 'processor entries (no core id)'
    mhz = [float(b['cpu MHz']) for b in blocks if 'cpu MHz' in b]
    if mhz:
        clock, clock_src = max(mhz), "cpuinfo 'cpu MHz' (current clock as reported)"
    elif max_khz:
        vals = [max_khz[int(b['processor'])] for b in blocks if int(b['processor']) in max_khz]
        if not vals:
            return {'reason': 'no clock: cpuinfo has no cpu MHz, cpufreq none for these CPUs'}
        clock, clock_src = max(vals) / 1e3, 'cpufreq cpuinfo_max_freq'
    else:
        return {'reason': "no clock: cpuinfo has no 'cpu MHz' and cpufreq gives none"}
    flags = set((blocks[0].get('flags') or blocks[0].get('Features') or '').split())
    if 'avx512f' in flags:
        lanes, isa = 16, 'avx512f'
    elif 'avx' in flags:
        lanes, isa = 8, 'avx2' if 'avx2' in flags else 'avx'
    elif 'asimd' in flags or 'neon' in flags:
        lanes, isa = 4, 'asimd' if 'asimd' in flags else 'neon'
    elif 'sse' in flags:
        lanes, isa = 4, 'sse'
    else:
        return {'reason': f'no SIMD flag known here in {sorted(flags)[:12]}...'}
    fma = bool(flags & {'fma', 'asimd', 'vfpv4'})
    per_op = 2 if fma else 1
    return {'cores': cores, 'mhz': clock, 'lanes': lanes, 'isa': isa, 'fma': fma,
            'gflops_per_pipe': cores * clock * 1e6 * lanes * per_op / 1e9,
            'source': f'cores: {core_src}; clock: {clock_src}; lanes: {isa} flag'
                      f'{"; x2 (fma)" if fma else ""}'}


def cpu_bound_here() -> dict:
    """Return cpu_bound() for this machine, read now."""
    try:
        text = pathlib.Path('/proc/cpuinfo').read_text()
    except OSError as exc:
        return {'reason': f'/proc/cpuinfo not readable ({exc})'}
    try:
        cpus = sorted(os.sched_getaffinity(0))
    except AttributeError:
        cpus = list(range(os.cpu_count() or 1))
    khz = {}
    for c in cpus:
        p = pathlib.Path(f'/sys/devices/system/cpu/cpu{c}/cpufreq/cpuinfo_max_freq')
        try:
            khz[c] = int(p.read_text().strip())
        except (OSError, ValueError):
            pass
    return cpu_bound(text, cpus, khz)


# -- measuring ---------------------------------------------------------------------------

def rel_err(c: np.ndarray, ref: np.ndarray) -> float:
    """Return max |c - ref| / max |ref|."""
    return float(np.abs(c.astype(np.float64) - ref).max() / max(np.abs(ref).max(), 1e-30))


def measure(lib: Library, a: np.ndarray, b: np.ndarray, ref: np.ndarray, repeats: int,
            min_seconds: float) -> dict:
    """Time one library on one size; return the row (status 'ok', 'wrong' or 'failed')."""
    n = a.shape[0]
    row = {'library': lib.library, 'device': lib.device, 'threads': lib.threads or '',
           'label': lib.label, 'n': n}
    try:
        call = lib.bind(a, b)
        ms = benchlib.time_calls(call, repeats, warmup=2, min_seconds=min_seconds)
        err = rel_err(lib.fetch(), ref)
    except Exception as exc:  # a library failing at one size: recorded, the others go on
        why = f'{type(exc).__name__}: {str(exc).splitlines()[0][:160]}'
        return dict(row, status='failed', reason=why)
    finally:
        lib.close()
    s = benchlib.summary(ms)
    p10, p90 = (float(v) for v in np.percentile(ms, [10, 90]))
    row.update(ms_median=s['median'], ms_min=s['min'], ms_max=s['max'], runs=s['n'],
               gflops_median=gflops(n, s['median']), gflops_min=gflops(n, s['max']),
               gflops_max=gflops(n, s['min']), gflops_p10=gflops(n, p90),
               gflops_p90=gflops(n, p10), rel_err=err,
               status='ok' if err <= TOLERANCE else 'wrong')
    return row


def unavailable_row(lib: Library, reason: str) -> dict:
    """Return the row recording that ``lib`` could not run here, and why."""
    return {'library': lib.library, 'device': lib.device, 'threads': lib.threads or '',
            'label': lib.label, 'n': '', 'status': 'unavailable', 'reason': reason}


def loadavg() -> str:
    """Return the 1/5/15-minute load average, or '?'."""
    try:
        return ' '.join(pathlib.Path('/proc/loadavg').read_text().split()[:3])
    except OSError:
        return '?'


# -- notes -------------------------------------------------------------------------------

def winners(rows: List[dict]) -> List[Tuple[int, str, float, Optional[str], float]]:
    """Return per size: (n, best label, its GFLOP/s, runner-up label, best / runner-up)."""
    out = []
    for n in sorted({r['n'] for r in rows if r.get('status') == 'ok'}):
        rs = sorted((r for r in rows if r.get('status') == 'ok' and r['n'] == n),
                    key=lambda r: -r['gflops_median'])
        second = rs[1] if len(rs) > 1 else None
        out.append((n, rs[0]['label'], rs[0]['gflops_median'],
                    second['label'] if second else None,
                    rs[0]['gflops_median'] / second['gflops_median'] if second else float('nan')))
    return out


def winner_ranges(win) -> List[str]:
    """Group consecutive sizes won by the same library: ['numpy 2T at n=64-128 (...)', ...]."""
    out, i = [], 0
    while i < len(win):
        j = i
        while j + 1 < len(win) and win[j + 1][1] == win[i][1]:
            j += 1
        ratios = [w[4] for w in win[i:j + 1] if w[4] == w[4]]
        span = f'n={win[i][0]}' if i == j else f'n={win[i][0]}-{win[j][0]}'
        lead = ''
        if ratios:
            lo, hi = min(ratios), max(ratios)
            lead = (f' (x{lo:.2f} the runner-up)' if f'{lo:.2f}' == f'{hi:.2f}' else
                    f' (x{lo:.2f}-x{hi:.2f} the runner-up)')
            if hi < 1.05:
                lead += ', a tie within 5%'
        out.append(f'{win[i][1]} at {span}{lead}')
        i = j + 1
    return out


def add_notes(res: benchlib.Results, rows: List[dict], bound: dict, blas: OpenBlas,
              cores: int, load0: str, load1: str) -> Optional[dict]:
    """Write the computed notes; return the peak row (best median GFLOP/s) or None."""
    ok = [r for r in rows if r.get('status') == 'ok']
    res.note('GFLOP/s = 2 n^3 / t: n^3 multiply-adds of 2 flops each for C[n,n] = A[n,n] '
             'B[n,n] (Lee & Shin 2019 eq. 3 with m = n = k), t = wall time of one call; median, '
             'min and max over the timed calls (GFLOP/s min comes from the slowest call: on '
             'a shared machine one preempted call among thousands of short ones; the plot '
             'band is the 10th-90th percentile).')
    res.note(f'numpy BLAS: {blas_name()}'
             + (f', kernel set {blas.core()}, {blas.threads()} threads by default '
                f'(read from {os.path.basename(blas.path)})' if blas.ok
                else f'; threads: {blas.reason}')
             + f'; this process may use {cores} CPU(s).')
    for r in rows:
        if r.get('status') in ('unavailable', 'failed'):
            res.note(f'{r["label"]}: {r["status"]}{" at n=" + str(r["n"]) if r["n"] else ""}'
                     f' - {r["reason"]}')
    wrong = [r for r in rows if r.get('status') == 'wrong']
    for r in wrong:
        res.note(f'{r["label"]} n={r["n"]}: WRONG product (rel. error {r["rel_err"]:.2e} > '
                 f'{TOLERANCE:g}); left out of winners and peak.')
    if ok:
        worst = max(ok, key=lambda r: r['rel_err'])
        res.note(f'Every other product matched numpy float64 within {worst["rel_err"]:.1e} '
                 f'(relative to max |C|; worst: {worst["label"]} n={worst["n"]}).')
    if not ok:
        return None
    win = winners(rows)
    res.note('Fastest per size (median GFLOP/s): ' + '; '.join(winner_ranges(win)) + '.')
    for label in dict.fromkeys(r['label'] for r in ok):
        rs = sorted((r for r in ok if r['label'] == label), key=lambda r: r['n'])
        best = max(rs, key=lambda r: r['gflops_median'])
        res.note(f'{label}: peak {best["gflops_median"]:.1f} GFLOP/s at n={best["n"]} '
                 f'(min-max {best["gflops_min"]:.1f}-{best["gflops_max"]:.1f}); '
                 f'{rs[0]["gflops_median"]:.1f} at n={rs[0]["n"]}, '
                 f'{rs[-1]["gflops_median"]:.1f} at n={rs[-1]["n"]} '
                 f'(x{rs[-1]["gflops_median"] / rs[0]["gflops_median"]:.2f} from smallest '
                 f'to largest).')
    if cores > 1:
        for lib in dict.fromkeys(r['library'] for r in ok):
            both = {r['n'] for r in ok if r['library'] == lib and r['threads'] == cores} & \
                {r['n'] for r in ok if r['library'] == lib and r['threads'] == 1}
            if both:
                n = max(both)
                g = {r['threads']: r['gflops_median'] for r in ok
                     if r['library'] == lib and r['n'] == n}
                res.note(f'{lib}: {cores} threads / 1 thread at n={n}: '
                         f'x{g[cores] / g[1]:.2f}.')
    peak = max(ok, key=lambda r: r['gflops_median'])
    line = (f'Peak measured (dashed line): {peak["gflops_median"]:.1f} GFLOP/s, '
            f'{peak["label"]} at n={peak["n"]} (best single call over all: '
            f'{max(r["gflops_max"] for r in ok):.1f}).')
    if 'gflops_per_pipe' in bound:
        g = bound['gflops_per_pipe']
        line += (f' Bound from /proc/cpuinfo read now: {bound["cores"]} core(s) x '
                 f'{bound["mhz"]:.0f} MHz x {bound["lanes"]} fp32 lanes'
                 f'{" x 2 (FMA)" if bound["fma"] else ""} = {g:.1f} GFLOP/s per FMA pipe, '
                 f'{2 * g:.1f} with two pipes (dotted lines; the pipe count is not in '
                 f'cpuinfo, and a VM may report its base clock, not its boost): the measured '
                 f'peak is {peak["gflops_median"] / g:.0%} of the 1-pipe and '
                 f'{peak["gflops_median"] / (2 * g):.0%} of the 2-pipe figure '
                 f'({bound["source"]}).')
        if peak['gflops_median'] > 2 * g:
            mhz = bound['mhz'] * peak['gflops_median'] / (2 * g)
            line += (f' The measured peak is above the 2-pipe figure: the cores ran faster '
                     f'than the {bound["mhz"]:.0f} MHz cpuinfo reports (2 pipes would need '
                     f'{mhz:.0f} MHz).')
    else:
        line += f' No cpuinfo-derived bound: {bound["reason"]}.'
    res.note(line)
    res.note(f'Load average (1/5/15 min) at start: {load0}; at end: {load1} - the machine '
             'may be shared; min/max show the spread.')
    res.note('Lee & Shin 2019 Fig. 4 (Pi3, XU3, TX2; OpenBLAS 4 threads, CLBlast, cuBLAS): every '
             'library got faster as the matrices grew; OpenBLAS was fast on small matrices '
             'but gained little with size; GPU libraries beat the CPU except CLBlast; '
             'cuBLAS on TX2 was far ahead of all others.')
    return peak


def plot_fn(peak: Optional[dict], bound: dict):
    """Return the plot callback: GFLOP/s vs n per library, peak dashed, bound dotted."""
    def plot(plt, rows):
        fig, ax = plt.subplots(figsize=(8, 5))
        ok = [r for r in rows if r.get('status') == 'ok']
        for label in dict.fromkeys(r['label'] for r in ok):
            rs = sorted((r for r in ok if r['label'] == label), key=lambda r: r['n'])
            ns = [r['n'] for r in rs]
            line, = ax.plot(ns, [r['gflops_median'] for r in rs], marker='o', label=label)
            ax.fill_between(ns, [r['gflops_p10'] for r in rs], [r['gflops_p90'] for r in rs],
                            color=line.get_color(), alpha=0.15)
        if peak is not None:
            ax.axhline(peak['gflops_median'], color='k', ls='--', lw=1,
                       label=f'peak measured {peak["gflops_median"]:.0f} ({peak["label"]})')
        if 'gflops_per_pipe' in bound:
            for k, ls in ((1, ':'), (2, '-.')):
                ax.axhline(k * bound['gflops_per_pipe'], color='grey', ls=ls, lw=1,
                           label=f'cpuinfo bound, {k} FMA pipe{"s" if k > 1 else ""}: '
                                 f'{k * bound["gflops_per_pipe"]:.0f}')
        ax.set_xscale('log', base=2)
        ax.set_xlabel('n (C[n,n] = A[n,n] B[n,n], float32)')
        ax.set_ylabel('GFLOP/s (median; band: 10th-90th percentile of calls)')
        ax.grid(True, which='both', alpha=0.3)
        ax.legend(fontsize=7)
    return plot


def main(argv=None) -> int:
    """Measure every library at every size; write the table, notes and plot."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--sizes', type=int, nargs='+', default=None,
                    help=f'matrix sizes n (default {SIZES}; --quick: {QUICK_SIZES})')
    ap.add_argument('--repeats', type=int, default=None,
                    help='timed calls per library and size (default 11; --quick 3)')
    ap.add_argument('--min-seconds', type=float, default=None,
                    help='keep timing a configuration this long at least (default 0.5; '
                         '--quick 0)')
    benchlib.common_args(ap)
    args = ap.parse_args(argv)
    sizes = args.sizes or (QUICK_SIZES if args.quick else SIZES)
    repeats = args.repeats or (3 if args.quick else 11)
    min_s = args.min_seconds if args.min_seconds is not None else (0.0 if args.quick else 0.5)
    res = benchlib.Results('exp1_sgemm', 'SGEMM throughput by library and matrix size',
                           'Lee & Shin 2019 Fig. 4', machine=args.machine, out_dir=args.out)
    load0 = loadavg()
    cores = cpu_count()
    blas = OpenBlas()
    default_threads = blas.threads()
    libs, rows = [], []
    for lib in libraries(blas, cores):
        ok, why = lib.probe()
        print(f'{lib.label}: {"available, " + why if ok else "UNAVAILABLE: " + why}',
              flush=True)
        if ok:
            libs.append(lib)
        else:
            rows.append(res.add(**unavailable_row(lib, why)))
    rng = np.random.default_rng(0)
    t_start = time.monotonic()
    try:
        for n in sizes:
            a = rng.standard_normal((n, n)).astype(np.float32)
            b = rng.standard_normal((n, n)).astype(np.float32)
            ref = a.astype(np.float64) @ b.astype(np.float64)
            for lib in libs:
                row = res.add(**measure(lib, a, b, ref, repeats, min_s))
                rows.append(row)
                if row['status'] == 'failed':
                    print(f'n={n} {lib.label}: FAILED {row["reason"]}', flush=True)
                else:
                    print(f'n={n:5d} {lib.label:28s} {row["ms_median"]:9.3f} ms  '
                          f'{row["gflops_median"]:7.1f} GFLOP/s  err {row["rel_err"]:.1e}',
                          flush=True)
    finally:
        if default_threads:
            blas.set_threads(default_threads)
    print(f'measured in {time.monotonic() - t_start:.0f} s', flush=True)
    bound = cpu_bound_here()
    peak = add_notes(res, rows, bound, blas, cores, load0, loadavg())
    md = [dict(r, status_text=f'{r["status"]}: {r["reason"]}'.replace('|', '/')
               if r.get('reason') else r['status']) for r in rows]
    res.write(['label', 'device', 'threads', 'n', 'ms_median', 'gflops_median', 'gflops_min',
               'gflops_max', 'rel_err', 'status_text'],
              ['library', 'device', 'threads', 'n', 'median ms', 'GFLOP/s median',
               'GFLOP/s min', 'GFLOP/s max', 'rel. error vs float64', 'status'],
              plot=plot_fn(peak, bound), md_rows=md)
    return 0 if any(r.get('status') == 'ok' for r in rows) else 1


if __name__ == '__main__':
    sys.exit(main())

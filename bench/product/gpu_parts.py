# Copyright 2026 edge_infer contributors. Apache-2.0.
"""The measuring parts of bench/product/gpu_check.py: NVML energy, a GPU load, experiments 4 and 5.

A library for bench/product/gpu_check.py (no main of its own): each
``*_lines`` function returns Markdown lines, which gpu_check.py writes with
benchlib's machine record and command; where the GPU part it needs is not
usable it returns one line saying why (what CI and a machine without a GPU
show). Medians, minima and maxima are benchlib.summary's.
"""

import functools
import multiprocessing as mp
import pathlib
import subprocess
import threading
import time
from typing import Dict, List, Sequence, Tuple

import benchlib
from edge_infer import paths
import numpy as np


def nvidia_smi(query: str = 'name,driver_version,memory.total,power.limit,clocks.max.sm') -> str:
    """Return nvidia-smi's answer for ``query``, or why it is not there."""
    try:
        out = subprocess.run(['nvidia-smi', f'--query-gpu={query}', '--format=csv,noheader'],
                             capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f'nvidia-smi not runnable: {exc}'
    return out.stdout.strip() or out.stderr.strip() or f'exit {out.returncode}'


def gpu_name() -> str:
    """Return the GPU's name, or 'none' with the reason."""
    text = nvidia_smi('name')
    return text if 'not runnable' not in text else f'none ({text})'


class NvmlEnergy:
    """NVML's energy counter of GPU 0 (mJ since the driver loaded; Volta and newer)."""

    def __init__(self):
        self.why = ''
        self._h = None
        try:
            import pynvml
            pynvml.nvmlInit()
            self._nvml = pynvml
            self._h = pynvml.nvmlDeviceGetHandleByIndex(0)
            pynvml.nvmlDeviceGetTotalEnergyConsumption(self._h)
        except Exception as exc:  # no pynvml, no driver, or a GPU without the counter
            self._h, self.why = None, f'NVML energy counter not usable: {exc}'

    @property
    def ok(self) -> bool:
        """Return whether the counter can be read."""
        return self._h is not None

    def mj(self) -> float:
        """Return the counter in mJ (NaN without it)."""
        if self._h is None:
            return float('nan')
        return float(self._nvml.nvmlDeviceGetTotalEnergyConsumption(self._h))

    def watts(self) -> float:
        """Return the board power now (NaN without NVML)."""
        if self._h is None:
            return float('nan')
        return self._nvml.nvmlDeviceGetPowerUsage(self._h) / 1e3

    def idle_w(self, seconds: float = 1.0) -> float:
        """Return the average draw over ``seconds`` of doing nothing."""
        e0, t0 = self.mj(), time.monotonic()
        time.sleep(seconds)
        return (self.mj() - e0) / 1e3 / (time.monotonic() - t0)


def machine_lines() -> List[str]:
    """Return the GPU, driver, torch/CUDA, NVML, Vulkan and pinned-memory findings."""
    from edge_infer.backends.libs.torch_cuda import cuda_torch
    from edge_infer.executor.buffers import TorchMappedBuffers
    from edge_infer.executor.devices import default_devices
    from edge_infer.telemetry.sources import NvmlSource
    lines = [f'- nvidia-smi (name, driver, memory, power limit, max SM clock): {nvidia_smi()}']
    torch, found = cuda_torch()
    lines.append(f'- PyTorch CUDA: {found}')
    try:
        from importlib import metadata
        import onnx2torch  # noqa: F401
        lines.append(f'- onnx2torch {metadata.version("onnx2torch")}')
    except Exception as exc:  # ImportError, or installed without metadata
        lines.append(f'- onnx2torch: {type(exc).__name__}: {exc}')
    ok, why = TorchMappedBuffers().available()
    lines.append(f'- pinned host memory read in place by the GPU: {"yes" if ok else "no"}: {why}')
    src = NvmlSource()
    ok, why = src.probe()
    src.close()
    lines.append(f'- edge_infer telemetry, NVML source: {"yes" if ok else "no"}: {why}')
    e = NvmlEnergy()
    lines.append('- NVML energy counter: ' + (f'yes, idle draw {e.idle_w(1.0):.1f} W'
                                              if e.ok else e.why))
    try:
        from edge_infer.backends.libs.ncnn import ncnn_version, vulkan_devices
        devs = vulkan_devices()
        lines.append(f'- ncnn {ncnn_version()} Vulkan devices: '
                     + (', '.join(f'{i}: {n}' for i, n, _ in devs) or 'none'))
    except Exception as exc:  # ncnn missing or its Vulkan instance failing
        lines.append(f'- ncnn Vulkan: not usable ({type(exc).__name__}: {exc})')
    said: List[str] = []
    devices = default_devices(log=said.append)
    lines.append('- shared executor: ' + '; '.join(said) + ' -> '
                 + ', '.join(f'{n}={p}' for n, _, p in devices))
    return lines


# ----------------------------------------------------------------- inputs
@functools.lru_cache(maxsize=None)
def photo_tensors(name: str, kind: str = 'float', n: int = 4) -> List[np.ndarray]:
    """Return model ``name``'s input tensors for the bundled photos (random frames without).

    Made once per model and kind (the callers only read them).
    """
    import cv2
    from edge_infer.core.image import Frame
    from edge_infer.core.preprocess import Preprocessor
    from edge_infer.core.registry import load_registry
    spec = load_registry(paths.config_dir() / 'models.yaml')[name]
    pre = Preprocessor(spec.input_spec, kind)
    pics = sorted((paths.data_home() / 'cache' / 'photos').glob('*.png'))[:n]
    imgs = [cv2.imread(str(p)) for p in pics]
    rng = np.random.default_rng(5)
    imgs = [i for i in imgs if i is not None] or [
        rng.integers(0, 256, (480, 640, 3), np.uint8) for _ in range(n)]
    return [np.array(pre(Frame(img, 'bgr'))[0]) for img in imgs]


def model_path(name: str) -> pathlib.Path:
    """Return the bundled model file."""
    return paths.models_dir() / f'{name}.onnx'


def rel_err(out, ref) -> float:
    """Return the largest difference relative to the reference's scale."""
    return max(float(np.abs(np.asarray(a, np.float32) - b).max() / max(1.0, np.abs(b).max()))
               for a, b in zip(out, ref))


def ort_refs(name: str, xs) -> list:
    """Return ONNX Runtime CPU's outputs for each tensor (the reference)."""
    import onnxruntime as ort
    sess = ort.InferenceSession(str(model_path(name)), providers=['CPUExecutionProvider'])
    return [sess.run(None, {sess.get_inputs()[0].name: x}) for x in xs]


def pct(values, q: float) -> float:
    """Return the q-th percentile."""
    return float(np.percentile(values, q)) if len(values) else float('nan')


# ----------------------------------------------------------------- energy
def energy_lines(models: Sequence[str], seconds: float = 1.5, rounds: int = 3) -> List[str]:
    """Time and NVML energy per inference of each GPU candidate and ORT CPU, interleaved."""
    from edge_infer.backends.manager import BackendManager
    from edge_infer.core.backend import input_kind, open_session
    from edge_infer.core.registry import load_registry
    e = NvmlEnergy()
    if not e.ok:
        return [f'not measured: {e.why}']
    mgr = BackendManager(paths.data_home() / 'cache', log=lambda s: None)
    reg = load_registry(paths.config_dir() / 'models.yaml')
    lines = ['Each candidate runs back to back for the round time; rounds alternate the '
             'order. Energy: the GPU board only (NVML counter), total and above the idle '
             'draw measured just before. ORT CPU shows what the GPU draws while idle.', '',
             '| model | candidate | ms/inference p50 | p90 | max | mJ/inference (GPU board) '
             '| above idle | max rel. diff vs ORT CPU |', '|---|---|---|---|---|---|---|---|']
    for name in models:
        sessions: Dict[str, object] = {}
        for b in mgr.candidates():
            if not (b.device != 'cpu' or b.name == 'onnxruntime/cpu/t1'):
                continue
            ok, why = mgr.probe(b)
            if not ok:
                continue
            try:
                sessions[b.name] = (open_session(b, model_path(name), reg[name].input_spec),
                                    photo_tensors(name, input_kind(b)))
            except Exception as exc:  # a candidate that fails on this model: one line
                lines.append(f'| {name} | {b.name} | failed to load: {exc} | | | | | |')
        refs = ort_refs(name, photo_tensors(name))
        times: Dict[str, List[float]] = {k: [] for k in sessions}
        mj: Dict[str, List[float]] = {k: [] for k in sessions}
        above: Dict[str, List[float]] = {k: [] for k in sessions}
        err: Dict[str, float] = {}
        for k, (sess, xs) in sessions.items():          # accuracy (outputs may be reused
            err[k] = (rel_err(sess.run(xs[0]), refs[0])   # buffers: compared at once), warm-up
                      if sess.input_kind == 'float' else float('nan'))
            for x in xs:
                sess.run(x)
        idle = e.idle_w(1.0)
        order = list(sessions)
        for r in range(rounds):
            for k in (order if r % 2 == 0 else order[::-1]):
                sess, xs = sessions[k]
                n, e0, t0 = 0, e.mj(), time.monotonic()
                while time.monotonic() - t0 < seconds:
                    t = time.perf_counter()
                    sess.run(xs[n % len(xs)])
                    times[k].append((time.perf_counter() - t) * 1e3)
                    n += 1
                wall = time.monotonic() - t0
                total = e.mj() - e0
                mj[k].append(total / n)
                above[k].append((total - idle * 1e3 * wall) / n)
        for k in order:
            t = benchlib.summary(times[k])
            lines.append(f'| {name} | {k} | {t["median"]:.3f} | {pct(times[k], 90):.3f} '
                         f'| {t["max"]:.3f} | {benchlib.summary(mj[k])["median"]:.2f} '
                         f'| {benchlib.summary(above[k])["median"]:.2f} | {err[k]:.2g} |')
            sessions[k][0].close()
    lines += ['', f'Idle draw before the rounds: {idle:.1f} W; NVML counter resolution 1 mJ.']
    return lines


# ----------------------------------------------------------------- GPU load
def _burn(duty: float, period_ms: float, stop, busy_ms, started) -> None:
    """Keep the GPU busy ``duty`` of every period with matrix products (another process)."""
    try:
        import cupy as xp
        sync = xp.cuda.Stream.null.synchronize
    except ImportError:
        import torch
        xp = None
        sync = torch.cuda.synchronize
    if xp is not None:
        a = xp.ones((2048, 2048), xp.float32)
    else:
        import torch
        a = torch.ones((2048, 2048), device='cuda')
    started.set()
    nxt = time.perf_counter()
    while not stop.is_set():
        end = nxt + duty * period_ms / 1e3
        t = time.perf_counter()
        while time.perf_counter() < end:
            a = (a @ a) * (1.0 / 2048)      # stays all ones: no overflow
            sync()
        busy_ms.value += (time.perf_counter() - t) * 1e3
        nxt += period_ms / 1e3
        time.sleep(max(0.0, nxt - time.perf_counter()))


class GpuLoad:
    """A process keeping the GPU busy a given share of the time (Kim 2021's background load)."""

    def __init__(self, duty: float, period_ms: float = 20.0):
        self.duty, self.period_ms = duty, period_ms
        ctx = mp.get_context('spawn')      # CUDA does not survive fork
        self.stop, self.started = ctx.Event(), ctx.Event()
        self.busy_ms = ctx.Value('d', 0.0)
        self.proc = None
        if duty > 0:
            self.proc = ctx.Process(target=_burn, args=(duty, period_ms, self.stop,
                                                        self.busy_ms, self.started), daemon=True)

    def __enter__(self):
        if self.proc is not None:
            self.proc.start()
            if not self.started.wait(60):
                raise RuntimeError('the GPU load process did not start')
        self.t0 = time.monotonic()
        self.busy0 = self.busy_ms.value
        return self

    def achieved(self) -> float:
        """Return the busy share since the last :meth:`mark`."""
        return (self.busy_ms.value - self.busy0) / 1e3 / max(1e-9, time.monotonic() - self.t0)

    def mark(self) -> None:
        """Start a new window for :meth:`achieved`."""
        self.t0, self.busy0 = time.monotonic(), self.busy_ms.value

    def __exit__(self, *exc):
        self.stop.set()
        if self.proc is not None:
            self.proc.join(10)
            if self.proc.is_alive():
                self.proc.kill()


# ----------------------------------------------------------------- experiment 5
INSTANCES = [('nanodet#1', 'nanodet'), ('mobilenet_v2', 'mobilenet_v2'), ('nanodet#2', 'nanodet')]


def open_executor(devices):
    """Return a shared executor with the three instances (segment costs measured now)."""
    from edge_infer.executor.core import SharedExecutor
    ex = SharedExecutor('cost-model', devices=devices, log=lambda s: None)
    for inst, name in INSTANCES:
        ex.add_model(inst, model_path(name))
    return ex


def run_executor(ex, policy: str, tensors, refs, frames: int, energy: NvmlEnergy) -> dict:
    """Feed every instance from its own thread through ``ex`` under ``policy``."""
    ex.policy = policy
    before = ex.bytes_copied
    lat: List[float] = []
    err = [0.0]
    jobs = dict.fromkeys(ex.devices, 0)
    done = threading.Semaphore(0)
    lock = threading.Lock()

    def feed(inst, name):
        xs, rs = tensors[name], refs[name]
        for i in range(frames):
            def cb(out, frame, ref=rs[i % len(rs)]):
                with lock:
                    lat.append((time.perf_counter() - frame.t_submit) * 1e3)
                    err[0] = max(err[0], rel_err(out, ref) if out is not None else 1.0)
                    for _, dev, *_ in frame.trace:
                        jobs[dev] += 1
                done.release()
            ex.submit(inst, xs[i % len(xs)], cb)
    e0, t0 = energy.mj(), time.perf_counter()
    threads = [threading.Thread(target=feed, args=i) for i in INSTANCES]
    [t.start() for t in threads]
    [t.join() for t in threads]
    n = frames * len(INSTANCES)
    for _ in range(n):
        done.acquire()
    wall = time.perf_counter() - t0
    mj = (energy.mj() - e0) / n
    copied = (ex.bytes_copied - before) / n
    return {'fps': n / wall, 'p95': pct(lat, 95), 'mj': mj, 'copied': copied, 'err': err[0],
            'placement': ' '.join(f'{d}:{k}' for d, k in jobs.items())}


def run_cpu_sessions(tensors, frames: int, energy: NvmlEnergy) -> dict:
    """Each instance whole on its own ONNX Runtime CPU session (1 thread), fed in parallel."""
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    sess = {inst: ort.InferenceSession(str(model_path(name)), so,
                                       providers=['CPUExecutionProvider'])
            for inst, name in INSTANCES}
    lat: List[float] = []

    def feed(inst, name):
        s, xs = sess[inst], tensors[name]
        for i in range(frames):
            t = time.perf_counter()
            s.run(None, {s.get_inputs()[0].name: xs[i % len(xs)]})
            lat.append((time.perf_counter() - t) * 1e3)
    e0, t0 = energy.mj(), time.perf_counter()
    threads = [threading.Thread(target=feed, args=i) for i in INSTANCES]
    [t.start() for t in threads]
    [t.join() for t in threads]
    n = frames * len(INSTANCES)
    wall = time.perf_counter() - t0
    return {'fps': n / wall, 'p95': pct(lat, 95), 'mj': (energy.mj() - e0) / n, 'copied': 0.0,
            'err': 0.0, 'placement': 'cpu sessions'}


def exp5_lines(loads: Sequence[float], frames: int = 20, repeats: int = 3) -> List[str]:
    """Experiment 5 with a real GPU as the accelerator and a real background GPU load."""
    from edge_infer.executor.core import POLICIES
    from edge_infer.executor.devices import default_devices
    said: List[str] = []
    devices = default_devices(log=said.append)
    if devices[0][2] == 'CPUExecutionProvider':
        return ['not run: ' + '; '.join(said)]
    energy = NvmlEnergy()
    tensors = {n: photo_tensors(n) for n in {m for _, m in INSTANCES}}
    refs = {n: ort_refs(n, xs) for n, xs in tensors.items()}
    lines = ['Instances: ' + ', '.join(i for i, _ in INSTANCES) + f'; {frames} frames each per '
             f'run, {repeats} runs per cell (median; min-max), policies interleaved on one '
             'executor per load (segment costs measured under that load). '
             f'Devices: {", ".join(f"{n}={p}" for n, _, p in devices)}. The load is another '
             'process running 2048x2048 matrix products for its duty share of every 20 ms.', '',
             '| GPU load (set / achieved) | policy | frames/s median | min-max | p95 ms '
             '| vs accelerator-only | mJ/frame (GPU board) | bytes copied/frame '
             '| max rel. diff | placement (jobs) |',
             '|---|---|---|---|---|---|---|---|---|---|']
    summary: Dict[Tuple[float, str], float] = {}
    for load in loads:
        cells: Dict[str, List[dict]] = {p: [] for p in ('cpu-sessions',) + POLICIES}
        with GpuLoad(load) as gl:
            ex = open_executor(devices)         # started under this load, as a node would be
            gl.mark()
            order = list(cells)
            for r in range(repeats):
                for pol in (order if r % 2 == 0 else order[::-1]):
                    if pol == 'cpu-sessions':
                        cells[pol].append(run_cpu_sessions(tensors, frames, energy))
                    else:
                        cells[pol].append(run_executor(ex, pol, tensors, refs, frames,
                                                       energy))
            achieved = gl.achieved() if load else 0.0
            ex.close()
        base = benchlib.summary([c['fps'] for c in cells['accelerator-only']])['median']
        for pol, runs in cells.items():
            fps = benchlib.summary([c['fps'] for c in runs])
            med = fps['median']
            summary[(load, pol)] = med
            lines.append(f'| {load:.0%} / {achieved:.0%} | {pol} | {med:.1f} | '
                         f'{fps["min"]:.1f}-{fps["max"]:.1f} | '
                         f'{benchlib.summary([c["p95"] for c in runs])["median"]:.1f} | '
                         f'{med / base:.2f} | '
                         f'{benchlib.summary([c["mj"] for c in runs])["median"]:.1f} | '
                         f'{max(c["copied"] for c in runs):.0f} | '
                         f'{max(c["err"] for c in runs):.2g} | {runs[-1]["placement"]} |')
    lo, hi = min(loads), max(loads)
    if lo != hi:
        lines.append('')
        for pol in POLICIES:
            lines.append(f'- {pol}: {1 - summary[(hi, pol)] / summary[(lo, pol)]:.0%} fewer '
                         f'frames/s at {hi:.0%} GPU load than at {lo:.0%}')
    return lines


# ----------------------------------------------------------------- experiment 4
def exp4_lines(models: Sequence[str], frames: int = 20, repeats: int = 5,
               seconds: float = 1.0) -> List[str]:
    """Segments on the GPU reading pinned memory in place vs copying, vs the whole model."""
    from edge_infer.backends.libs.torch_cuda import TorchCudaBackend
    from edge_infer.executor.buffers import TorchMappedBuffers
    from edge_infer.executor.partition import partition
    from edge_infer.executor.segment_runners import TorchSegmentRunner
    import onnx
    pinned = TorchMappedBuffers()
    ok, why = pinned.available()
    if not ok:
        return [f'not run: {why}']
    energy = NvmlEnergy()
    lines = ['Modes, interleaved pass by pass: **mapped** = every segment on the GPU, its '
             'kernels reading the pinned input in place, outputs copied by the GPU into pinned '
             'buffers; **pinned + copy** = a host-to-device copy of each segment input and a '
             'device-to-host copy of each output; **whole model** = one module on the GPU, one '
             'copy in and one out (what a discrete GPU should do). On a discrete GPU "mapped" '
             'reads cross PCIe; Lee & Kang 2016 measured a unified-memory Jetson TK1.', '',
             '| model | segments | mode | ms/frame p50 | p90 | max | mJ/frame (GPU board) '
             '| bytes copied/frame | max rel. diff vs ORT CPU |',
             '|---|---|---|---|---|---|---|---|---|']
    for name in models:
        segs = partition(model_path(name), min_nodes=3)
        xs = photo_tensors(name)
        refs = ort_refs(name, xs)
        staged = []
        for x in xs:                # the preprocessing would write into pinned memory
            p = pinned.empty(x.shape, np.float32)
            p[...] = x
            staged.append(p)
        chains = {'mapped': [TorchSegmentRunner(s, 2, pinned, mapped=True) for s in segs],
                  'pinned + copy': [TorchSegmentRunner(s, 2, None, mapped=False)
                                    for s in segs]}
        whole = TorchCudaBackend().open_session(model_path(name))
        in_name = segs[0].inputs[0]
        out_names = [o.name for o in onnx.load(str(model_path(name)),
                                               load_external_data=False).graph.output]

        def chain(mode, x):
            vals = {in_name: x}
            for r in chains[mode]:
                vals.update(r.run(vals, 0))
            return [vals[o] for o in out_names]
        runs = {'mapped': lambda i: chain('mapped', staged[i % len(staged)]),
                'pinned + copy': lambda i: chain('pinned + copy', xs[i % len(xs)]),
                'whole model': lambda i: whole.run(xs[i % len(xs)])}
        err = {k: rel_err(fn(0), refs[0]) for k, fn in runs.items()}
        times: Dict[str, List[float]] = {k: [] for k in runs}
        mj: Dict[str, List[float]] = {k: [] for k in runs}
        copied0 = {k: sum(r.copied for r in c) for k, c in chains.items()}
        order = list(runs)
        count = dict.fromkeys(runs, 0)
        for r in range(repeats):
            for k in (order if r % 2 == 0 else order[::-1]):
                # at least `frames` frames and `seconds`: NVML's counter moves in steps
                e0, t0, i = energy.mj(), time.monotonic(), 0
                while i < frames or time.monotonic() - t0 < seconds:
                    t = time.perf_counter()
                    runs[k](i)
                    times[k].append((time.perf_counter() - t) * 1e3)
                    i += 1
                mj[k].append((energy.mj() - e0) / i)
                count[k] += i
        for k in order:
            c = (sum(r.copied for r in chains[k]) - copied0[k]) / count[k] if k in chains else \
                sum(x.nbytes for x in xs[:1]) + sum(o.nbytes for o in refs[0])
            t = benchlib.summary(times[k])
            lines.append(f'| {name} | {len(segs)} | {k} | {t["median"]:.3f} | '
                         f'{pct(times[k], 90):.3f} | {t["max"]:.3f} | '
                         f'{benchlib.summary(mj[k])["median"]:.2f} | {c:.0f} | {err[k]:.2g} |')
        whole.close()
    return lines

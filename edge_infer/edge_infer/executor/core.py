# Copyright 2026 edge_infer contributors. Apache-2.0.
"""One process-wide executor for several DNNs: segments as jobs, placed on devices.

Pieces (the design of Kim 2021, CPU-GPU collaborative scheduling; ROS-free):

- segment runners (segment_runners.py): one segment on one device, on ONNX Runtime
  (I/O binding) or OpenVINO (tensors wrapped in place). Inputs are bound by
  pointer, outputs go into buffers allocated once (a small pool per
  segment, one slot per frame in flight): nothing is copied between
  segments, and each runner checks it by pointer. Per device, each segment
  runs on the library measured fastest for it (:meth:`measure_costs`),
  among the libraries the executor was given for the model (the backend
  manager's accepted candidates: the library and precision it measured).
- :class:`Device`: a worker thread with a FIFO job queue and an estimate of
  its backlog (sum of the expected costs of queued jobs); a busy
  accelerator shared with other work is a device whose queue also holds
  foreign jobs (tests and benchmarks make them with
  ``edge_infer.testing.load.LoadGenerator``).
- The controller (:meth:`SharedExecutor.submit` / ``_done``) releases
  segment i+1 of a frame only when segment i has finished, wiring i's
  output buffers to i+1's inputs; a frame never sees another frame's
  tensors (each in-flight frame owns a buffer slot).
- The distributor (:meth:`SharedExecutor._place`) picks the device of each
  job by policy: ``accelerator-only`` (baseline), ``by-layer-type`` (Kim
  2021: conv segments to the accelerator, light ones to the CPU) or
  ``cost-model`` (per-segment cost measured on every device, plus the
  device's current backlog: the device where the job would finish first).

Copies are counted per frame (``bytes_copied``): zero on this path, beyond
the one preprocessing pass that writes the input tensor. A model of the
executor as a backend candidate, with its session: backend.py.
"""

from collections import deque
from dataclasses import dataclass, field
import itertools
import pathlib
import queue
import statistics
import threading
import time
from typing import Callable, Dict, List, Optional, Sequence

import numpy as np

from .devices import device_buffers
from .partition import partition, Segment
from .segment_runners import (open_segment_runner, release_buffers, SegmentError,
                              SegmentLibrary)

POLICIES = ('accelerator-only', 'by-layer-type', 'cost-model')
TORCH = SegmentLibrary('torch', 1, 'fp32')     # what a 'torch-cuda' device runs segments on


class ExecutorError(RuntimeError):
    """A job failed on every device that could run it."""


@dataclass
class Job:
    """One segment of one frame (or a foreign job from the load generator)."""

    frame: Optional['InFlight']
    seg: int
    cost_ms: float
    device: str = ''
    t_queued: float = 0.0
    t_start: float = 0.0
    t_end: float = 0.0
    fn: Optional[Callable[[], None]] = None      # foreign work


@dataclass
class InFlight:
    """A frame in flight through one model's segments."""

    fid: int
    model: str
    slot: int
    env: Dict[str, np.ndarray]
    callback: Callable
    t_submit: float
    trace: List[tuple] = field(default_factory=list)   # (segment, device, wait ms, run ms)
    error: Optional[str] = None
    hold: bool = False              # keep the buffer slot until release() (outputs in use)
    _free: Optional[Callable[[], None]] = None

    def release(self) -> None:
        """Give the frame's output buffers back (after reading them); idempotent."""
        free, self._free = self._free, None
        if free is not None:
            free()

    @property
    def placement(self) -> List[str]:
        """Return the device of each segment, in segment order."""
        return [dev for _, dev, *_ in sorted(self.trace)]


class Device:
    """A worker thread with a FIFO queue; ``backlog_ms`` estimates the wait for a new job."""

    def __init__(self, name: str, role: str):
        self.name, self.role = name, role
        # (priority, seq, job): foreign work (another app's kernels) goes ahead of
        # queued jobs, as a device time-slicing two contexts would; FIFO otherwise
        self.q: 'queue.PriorityQueue' = queue.PriorityQueue()
        self._seq = itertools.count()
        self._lock = threading.Lock()
        self._pending_ms = 0.0
        self._current_end = 0.0
        self.busy_s = 0.0
        self.jobs = 0
        self.failed: Optional[str] = None
        self.thread: Optional[threading.Thread] = None

    def backlog_ms(self) -> float:
        """Return the expected time until a job queued now would start, ms."""
        with self._lock:
            running = max(0.0, self._current_end - time.perf_counter()) * 1e3
            return self._pending_ms + running

    def put(self, job: Job) -> None:
        """Queue a job."""
        with self._lock:
            self._pending_ms += job.cost_ms
        job.t_queued = time.perf_counter()
        self.q.put((0 if job.fn is not None else 1, next(self._seq), job))

    def get(self) -> Optional[Job]:
        """Return the next job (None: stop)."""
        return self.q.get()[2]

    def stop(self) -> None:
        """Ask the worker to stop after its current job."""
        self.q.put((-1, next(self._seq), None))

    def _took(self, job: Job) -> None:
        with self._lock:
            self._pending_ms = max(0.0, self._pending_ms - job.cost_ms)
            self._current_end = time.perf_counter() + job.cost_ms / 1e3


class SharedExecutor:
    """Segments of several models as jobs on a CPU and an 'accelerator' device."""

    def __init__(self, policy: str = 'cost-model', threads_per_device: int = 1,
                 slots: int = 2,
                 devices: Sequence[tuple] = (('accelerator', 'accelerator'), ('cpu', 'cpu')),
                 min_nodes: int = 3, log: Callable[[str], None] = print,
                 transfer_ms: float = 0.0):
        if policy not in POLICIES:
            raise ValueError(f"policy '{policy}': use one of {', '.join(POLICIES)}")
        self.policy = policy
        self.log = log
        # cost of handing a segment's outputs to another device, ms: 0 on one
        # memory (zero-copy); the cost model adds it when the device changes
        self.transfer_ms = float(transfer_ms)
        specs = [tuple(d) + ('CPUExecutionProvider',) * (3 - len(d)) for d in devices]
        self.devices = {name: Device(name, role) for name, role, _ in specs}
        self.providers = {name: provider for name, _, provider in specs}
        self._buffers = {}
        for name, provider in self.providers.items():
            buffers, why = device_buffers(provider)
            if why:
                raise ExecutorError(f'device {name}: {why}')
            if buffers is not None:
                self._buffers[name] = buffers
        self.threads, self.slots, self.min_nodes = threads_per_device, slots, min_nodes
        self.models: Dict[str, dict] = {}
        self._ids = itertools.count()
        self._stopping = False
        self.frames_done = 0
        self.bytes_copied = 0
        for d in self.devices.values():
            d.thread = threading.Thread(target=self._worker, args=(d,), name=f'dev-{d.name}',
                                        daemon=True)
            d.thread.start()

    # ------------------------------------------------------------------ models
    def add_model(self, name: str, model_path: pathlib.Path,
                  libraries: Sequence[SegmentLibrary] = ()) -> List[Segment]:
        """Partition the model, open every segment on every device and library; measure.

        ``libraries``: what a segment may run on (default: ONNX Runtime with
        the executor's threads); per device and segment the fastest measured
        one is kept (:meth:`measure_costs`), the others are closed.
        """
        segments = partition(model_path, min_nodes=self.min_nodes)
        libs = list(libraries) or [SegmentLibrary('onnxruntime', self.threads)]
        options: Dict[str, List[list]] = {}
        # CPU segments write into the accelerator's mapped memory too, so
        # that hand-offs between the two need no copy either way
        mapped = next(iter(self._buffers.values()), None)
        for d in self.devices:
            options[d] = []
            dev_libs = [TORCH] if self.providers[d] == 'torch-cuda' else libs
            for s in segments:
                opened = []
                for lib in dev_libs:
                    try:
                        opened.append(open_segment_runner(s, lib, self.slots,
                                                          self.providers[d],
                                                          self._buffers.get(d, mapped)))
                    except SegmentError as exc:
                        self.log(f'executor: {name} {exc}; not used there')
                if not opened:
                    raise ExecutorError(f'{name}: segment {s.name} opens on no library '
                                        f'on device {d}')
                options[d].append(opened)
        runners = {d: [opts[0] for opts in options[d]] for d in self.devices}
        import onnx
        g = onnx.load(str(model_path), load_external_data=False).graph
        inits = {i.name for i in g.initializer}
        inp = next(i for i in g.input if i.name not in inits)
        self.models[name] = {
            'segments': segments, 'runners': runners,
            'input': inp.name, 'outputs': [o.name for o in g.output],
            'free': deque(range(self.slots)), 'cond': threading.Condition(),
            'cost': {d: [1.0] * len(segments) for d in self.devices},
            'options': options}
        self.measure_costs(name)
        return segments

    def libraries(self, name: str) -> Dict[str, List[str]]:
        """Return {device: the library running each segment} of model ``name``."""
        return {d: [r.library.name for r in rs] for d, rs in self.models[name]['runners'].items()}

    def remove_model(self, name: str) -> None:
        """Forget a model: its sessions are freed with it, its buffers handed back."""
        m = self.models.pop(name, None)
        for runners in (m or {}).get('runners', {}).values():
            for r in runners:
                release_buffers(r)

    def measure_costs(self, name: str, runs: int = 5) -> Dict[str, List[float]]:
        """Time every segment alone on every device (median ms): the cost model's input.

        Where a segment opened on several libraries, each is timed in
        interleaved rounds and the fastest runs it on that device from now on
        (the others are closed once a model's first measurement chose).
        """
        m = self.models[name]
        shape = m['runners'][next(iter(self.devices))][0].input_shape()
        x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
        options = m.pop('options', None) or {d: [[r] for r in rs]
                                             for d, rs in m['runners'].items()}
        for dev, per_seg in options.items():
            env = {m['input']: x}
            for i, opts in enumerate(per_seg):
                times: List[List[float]] = [[] for _ in opts]
                out: Dict[str, np.ndarray] = {}
                for _ in range(runs):
                    for k, r in enumerate(opts):
                        t = time.perf_counter()
                        got = r.run(env, 0)
                        times[k].append((time.perf_counter() - t) * 1e3)
                        out = got if k == 0 else out
                medians = [statistics.median(t) for t in times]
                best = min(range(len(opts)), key=medians.__getitem__)
                m['runners'][dev][i] = opts[best]
                for k, r in enumerate(opts):
                    if k != best:       # closed: its buffers go back
                        release_buffers(r)
                m['cost'][dev][i] = medians[best]
                env = {**env, **{k: v.copy() for k, v in out.items()}}
        return m['cost']

    # --------------------------------------------------------------- controller
    def submit(self, name: str, tensor: np.ndarray, callback: Callable,
               hold: bool = False) -> int:
        """Start one frame; ``callback(outputs list, frame)`` runs when its last segment ends.

        Blocks while every buffer slot of the model is in flight (backpressure).
        The outputs are views on the slot's buffers: with ``hold`` the slot stays
        taken until ``frame.release()`` (read them without copying), otherwise it
        is reused as soon as the callback returns.
        """
        m = self.models[name]
        with m['cond']:
            while not m['free']:
                m['cond'].wait()
            slot = m['free'].popleft()
        frame = InFlight(next(self._ids), name, slot, {m['input']: tensor}, callback,
                         time.perf_counter(), hold=hold)
        self._release(frame, 0)
        return frame.fid

    def _release(self, frame: 'InFlight', seg: int) -> None:
        prev = frame.trace[-1][1] if frame.trace else None
        dev = self._place(frame.model, seg, prev)
        cost = self.models[frame.model]['cost'][dev][seg]
        self.devices[dev].put(Job(frame, seg, cost, device=dev))

    def _done(self, job: Job, outputs: Optional[Dict[str, np.ndarray]]) -> None:
        frame = job.frame
        if frame is None:       # a foreign job: nothing waits for it
            return
        m = self.models[frame.model]
        frame.trace.append((job.seg, job.device, (job.t_start - job.t_queued) * 1e3,
                            (job.t_end - job.t_start) * 1e3))
        if outputs is not None:
            frame.env.update(outputs)
        if outputs is not None and job.seg + 1 < len(m['segments']):
            self._release(frame, job.seg + 1)
            return
        result = None if outputs is None else [frame.env[n] for n in m['outputs']]

        def free():
            with m['cond']:
                m['free'].append(frame.slot)
                m['cond'].notify()
        frame._free = free
        try:
            frame.callback(result, frame)
        finally:
            frame.env.clear()
            if not frame.hold or result is None:
                frame.release()
            self.frames_done += 1

    # -------------------------------------------------------------- distributor
    def _place(self, name: str, seg: int, prev: Optional[str] = None) -> str:
        m = self.models[name]
        live = {n: d for n, d in self.devices.items() if d.failed is None}
        if not live:
            raise ExecutorError('every device has failed')
        accel = next((n for n, d in live.items() if d.role == 'accelerator'), None)
        cpu = next((n for n, d in live.items() if d.role == 'cpu'), None)
        first = accel or cpu or next(iter(live))
        if self.policy == 'accelerator-only':
            return first
        if self.policy == 'by-layer-type':
            want = accel if m['segments'][seg].kind == 'conv' else cpu
            return want or first
        # cost-model: where would it finish first (backlog + its measured cost +
        # the hand-over when the previous segment ran elsewhere)?
        return min(live, key=lambda n: live[n].backlog_ms() + m['cost'][n][seg] + (
            self.transfer_ms if prev not in (None, n) else 0.0))

    # ------------------------------------------------------------------ workers
    def _worker(self, dev: Device) -> None:
        while True:
            job = dev.get()
            if job is None:
                return
            dev._took(job)
            job.t_start = time.perf_counter()
            if job.fn is not None:          # foreign load
                job.fn()
                dev.busy_s += time.perf_counter() - job.t_start
                continue
            frame = job.frame
            if frame is None:
                continue
            try:
                if dev.failed is not None:
                    raise ExecutorError(f'device {dev.name} failed earlier')
                runner = self.models[frame.model]['runners'][dev.name][job.seg]
                before = runner.copied
                out = runner.run(frame.env, frame.slot)
                self.bytes_copied += runner.copied - before
            except Exception as exc:  # the device failed: move the job, mark the device
                job.t_end = time.perf_counter()
                if dev.failed is None:
                    dev.failed = f'{type(exc).__name__}: {exc}'
                    self.log(f'WARNING executor: device {dev.name} failed ({dev.failed}); '
                             f'its jobs move to the other devices')
                try:
                    self._release(frame, job.seg)
                except ExecutorError as exc2:
                    frame.error = str(exc2)
                    self._done(job, None)
                self._drain(dev)
                continue
            job.t_end = time.perf_counter()
            dev.busy_s += job.t_end - job.t_start
            dev.jobs += 1
            self._done(job, out)

    def _drain(self, dev: Device) -> None:
        """Move every job still queued on a failed device elsewhere."""
        while True:
            try:
                job = dev.q.get_nowait()[2]
            except queue.Empty:
                return
            if job is None:
                dev.stop()
                return
            dev._took(job)
            if job.frame is not None:
                self._release(job.frame, job.seg)

    def close(self) -> None:
        """Stop the workers."""
        for d in self.devices.values():
            d.stop()
        for d in self.devices.values():
            if d.thread:
                d.thread.join(5.0)

# Copyright 2026 edge_infer contributors. Apache-2.0.
"""Zero-copy vs copy between executor segments (Lee & Kang 2016): time, energy, bytes per frame.

    ./run.sh exec python bench/papers/exp4_zero_copy.py [--device all|cpu|cuda] [--threads 1]
        [--frames 8] [--repeats 9] [--quick] [--out DIR]

Lee & Kang 2016 (Jetson TK1, Caffe GoogLeNet): mapping host memory into the GPU
(cudaHostAlloc + cudaHostGetDevicePointer) instead of staging with
cudaMallocHost + cudaMemcpy gave 10 % less time and 36 % less energy per
image. Here the same pipeline (the bundled nanodet and mobilenet_v2, cut into
segments by the shared executor's partitioner, fed with preprocessed frames of
the demo bag) runs in these modes, interleaved pass by pass (the order
alternating) so background noise hits all of them alike:

- ``zero-copy``: what the executor does (``OrtSegmentRunner``): inputs bound by
  pointer, outputs written by ONNX Runtime into buffers allocated once, the
  next segment reading them in place. Bytes copied = the runners' own count
  (``OrtSegmentRunner.copied``).
- ``copy (host only)``: a naive pipeline on one memory: every segment's
  outputs come back as fresh numpy arrays (``io_binding.copy_outputs_to_cpu``,
  checked once to really be new memory), then are copied into the next
  segment's own input buffer.
- ``copy + staging``: the same plus the host-to-device staging a
  discrete-memory accelerator needs (Lee & Kang 2016's cudaMemcpy): every segment
  input is copied into a separate "device" buffer before the run, and the
  fresh-output copy above is the device-to-host copy. On the CPU this is
  EMULATED: the "device" buffers are ordinary host memory (numpy arrays, and
  ONNX Runtime's own output allocations), so the copies cost host memory
  bandwidth only, not a PCIe transfer. With ``--device cuda`` they are real
  cudaMemcpy's (``OrtValue.update_inplace`` / ``copy_outputs_to_cpu``).

On an NVIDIA machine (onnxruntime-gpu listing CUDAExecutionProvider) it also
runs ``zero-copy (cuda-mapped)`` (the executor's CUDA path: OrtSegmentRunner on
the CUDA EP with pycuda mapped pinned memory) and ``device-resident`` (the
segments chained through preallocated CUDA OrtValues: one copy in, one out;
what a discrete GPU should do). The memory modes of
``edge_infer.executor.buffers`` are probed and listed with their reason where
unavailable; ``opencl-mapped`` buffers, where present, are run with the CPU EP
(ONNX Runtime has no OpenCL EP).

Per model and mode: time per frame (median, min, max over every frame of
every pass), energy per frame (``benchlib.Power`` over each pass; on a
machine without a power sensor ESTIMATED from CPU load), bytes copied per
frame by category (counted as the copies are made), the copy / zero-copy
ratios, and the largest difference of the outputs from the unpartitioned
model's.
"""

import argparse
import sys
import time
from typing import Dict, List, Optional, Tuple

import benchlib
from edge_infer import paths
from edge_infer.executor.buffers import BufferProvider, providers as executor_buffers
from edge_infer.executor.partition import partition
from edge_infer.executor.segment_runners import OrtSegmentRunner
import numpy as np

MODELS = ('nanodet', 'mobilenet_v2')
CATEGORIES = ('h2d', 'd2h', 'handoff', 'runner')
EP = {'cpu': 'CPUExecutionProvider', 'cuda': 'CUDAExecutionProvider'}


class OpenClMappedBuffers(BufferProvider):
    """Host-visible OpenCL buffers mapped for the CPU (pyopencl; Mali-style shared memory)."""

    name = 'opencl-mapped'

    def __init__(self):
        self._cl = None
        self._ctx = None
        self._queue = None
        self._buffers = {}

    def available(self) -> Tuple[bool, str]:
        """Probe pyopencl and a platform with a device."""
        try:
            import pyopencl as cl
        except Exception as exc:
            return False, (f'pyopencl not importable ({exc}); pip install pyopencl and an '
                           "OpenCL ICD (the GPU vendor's, or pocl-opencl-icd)")
        try:
            platforms = cl.get_platforms()
        except Exception as exc:  # no ICD: pyopencl raises LogicError / RuntimeError
            return False, f'no OpenCL platform ({exc})'
        devices = [d for p in platforms for d in p.get_devices()]
        if not devices:
            return False, 'OpenCL platforms without devices'
        dev = devices[0]
        self._cl = cl
        self._ctx = cl.Context([dev])
        self._queue = cl.CommandQueue(self._ctx)
        shared = bool(getattr(dev, 'host_unified_memory', False))
        return True, f'{dev.name} ({"host-unified memory" if shared else "separate memory"})'

    def empty(self, shape, dtype=np.float32) -> np.ndarray:
        """Return a mapped view of a host-visible OpenCL buffer."""
        cl = self._cl
        if cl is None:
            raise RuntimeError('opencl-mapped buffers: call available() first')
        nbytes = int(np.prod(shape)) * np.dtype(dtype).itemsize
        buf = cl.Buffer(self._ctx, cl.mem_flags.READ_WRITE | cl.mem_flags.ALLOC_HOST_PTR,
                        nbytes)
        arr, _ = cl.enqueue_map_buffer(self._queue, buf, cl.map_flags.READ | cl.map_flags.WRITE,
                                       0, shape, dtype)
        self._buffers[arr.ctypes.data] = buf
        return arr


def buffer_providers():
    """Return the executor's buffer providers and mapped OpenCL memory (this bench's own)."""
    return executor_buffers() + [OpenClMappedBuffers()]


def session_options(threads: int):
    """Return ORT options as OrtSegmentRunner sets them (threads, no spinning, quiet)."""
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.log_severity_level = 3
    so.add_session_config_entry('session.intra_op.allow_spinning', '0')
    return so


def bag_tensors(names, n: int) -> Dict[str, List[np.ndarray]]:
    """Return {model: [preprocessed tensor, ...]} from the first n raw frames of the demo bag."""
    from edge_infer.core.bag_read import iter_bag_frames
    from edge_infer.core.cdr import parse_image
    from edge_infer.core.image import from_raw
    from edge_infer.core.preprocess import Preprocessor
    from edge_infer.core.registry import load_registry
    reg = load_registry(paths.config_dir() / 'models.yaml')
    frames = []
    for _, msgtype, _, raw in iter_bag_frames(paths.bags_dir() / 'demo'):
        if not msgtype.endswith('/Image'):
            continue
        f = parse_image(raw)
        frames.append(from_raw(f.encoding, f.height, f.width, f.step, f.data, f.is_bigendian))
        if len(frames) >= n:
            break
    out = {}
    for name in names:
        pre = Preprocessor(reg[name].input_spec)
        out[name] = [np.array(pre(f)[0], dtype=np.float32, copy=True, order='C')
                     for f in frames]
    return out


def graph_io(model_path):
    """Return (input name, [output names]) of the unpartitioned model."""
    import onnx
    g = onnx.load(str(model_path), load_external_data=False).graph
    inits = {i.name for i in g.initializer}
    return next(i.name for i in g.input if i.name not in inits), [o.name for o in g.output]


def whole_outputs(model_path, xs, threads: int = 0) -> List[List[np.ndarray]]:
    """Return the unpartitioned model's outputs (ORT CPU) for every tensor of ``xs``."""
    import onnxruntime as ort
    sess = ort.InferenceSession(str(model_path), session_options(threads),
                                providers=['CPUExecutionProvider'])
    name = sess.get_inputs()[0].name
    return [sess.run(None, {name: x}) for x in xs]


class ZeroCopy:
    """The executor's path: SegmentRunners chained by pointer, one buffer slot."""

    def __init__(self, segments, input_name: str, output_names: List[str], threads: int = 1,
                 provider: str = 'CPUExecutionProvider', buffers=None, label: str = 'zero-copy'):
        self.label = label
        self.input_name, self.output_names = input_name, list(output_names)
        self.runners = [OrtSegmentRunner(s, threads, 1, provider, buffers) for s in segments]
        self.bytes = dict.fromkeys(CATEGORIES, 0)

    def run(self, x: np.ndarray) -> List[np.ndarray]:
        """Run one frame; return the outputs (views on the runners' buffers)."""
        env = {self.input_name: x}
        before = sum(r.copied for r in self.runners)
        for r in self.runners:
            env.update(r.run(env, 0))
        self.bytes['runner'] += sum(r.copied for r in self.runners) - before
        return [env[n] for n in self.output_names]


class DeviceResident:
    """Segments chained through preallocated CUDA OrtValues (no host copy in between).

    ``device='cpu'`` runs the same code on CPU OrtValues (the tests use it to
    check this path on a machine without CUDA).
    """

    def __init__(self, segments, input_name: str, output_names: List[str], threads: int = 1,
                 label: str = 'device-resident (cuda)', device: str = 'cuda'):
        import onnxruntime as ort
        self.label = label
        self.input_name, self.output_names = input_name, list(output_names)
        so = session_options(threads)
        self.sessions = [ort.InferenceSession(s.model.SerializeToString(), so,
                                              providers=[EP[device]])
                         for s in segments]
        shapes = {}
        for sess in self.sessions:
            for v in list(sess.get_inputs()) + list(sess.get_outputs()):
                shapes[v.name] = [d if isinstance(d, int) and d > 0 else 1 for d in v.shape]
        self.dev = {name: ort.OrtValue.ortvalue_from_shape_and_type(shape, np.float32, device, 0)
                    for name, shape in shapes.items()}
        self.bindings = []
        for seg, sess in zip(segments, self.sessions):
            b = sess.io_binding()
            for name in seg.inputs:
                b.bind_ortvalue_input(name, self.dev[name])
            for name in seg.outputs:
                b.bind_ortvalue_output(name, self.dev[name])
            self.bindings.append(b)
        self.bytes = dict.fromkeys(CATEGORIES, 0)

    def run(self, x: np.ndarray) -> List[np.ndarray]:
        """Copy the frame in, run every segment on the device, copy the outputs out."""
        self.dev[self.input_name].update_inplace(x)
        self.bytes['h2d'] += x.nbytes
        for sess, b in zip(self.sessions, self.bindings):
            sess.run_with_iobinding(b)
        outs = [self.dev[n].numpy() for n in self.output_names]
        self.bytes['d2h'] += sum(o.nbytes for o in outs)
        return outs


class Copying:
    """A naive pipeline: fresh output arrays, copied into the next input (+ device staging).

    ``staging``: copy every segment input into a separate "device" buffer first
    (CPU: emulated with host memory; CUDA: a real cudaMemcpy into an OrtValue).
    Without staging (CPU only) the segment reads its host input buffer by pointer.
    ``ortvalues``: stage into OrtValues (default: on CUDA only; the tests use
    it to check the CUDA code path with CPU OrtValues).
    """

    def __init__(self, segments, input_name: str, output_names: List[str], threads: int = 1,
                 device: str = 'cpu', staging: bool = True, label: Optional[str] = None,
                 ortvalues: Optional[bool] = None):
        import onnxruntime as ort
        if device == 'cuda' and not staging:
            raise ValueError('the CUDA EP cannot read host buffers without staging')
        self.ortvalues = device != 'cpu' if ortvalues is None else ortvalues
        self.label = label or ('copy + staging' if staging else 'copy (host only)')
        self.segments, self.device, self.staging = list(segments), device, staging
        self.input_name, self.output_names = input_name, list(output_names)
        so = session_options(threads)
        self.sessions = [ort.InferenceSession(s.model.SerializeToString(), so,
                                              providers=[EP[device]]) for s in segments]
        self.bytes = dict.fromkeys(CATEGORIES, 0)
        # a tensor that later segments read gets one host input buffer (the copy target)
        self.host_in: Dict[str, np.ndarray] = {}
        self.dev_in: List[Dict[str, object]] = []
        self.bindings = []
        for seg, sess in zip(self.segments, self.sessions):
            meta = {i.name: i for i in sess.get_inputs()}
            shapes = {n: [d if isinstance(d, int) and d > 0 else 1 for d in meta[n].shape]
                      for n in seg.inputs}
            for n in seg.inputs:
                if n != input_name and n not in self.host_in:
                    self.host_in[n] = np.empty(shapes[n], np.float32)
            b = sess.io_binding()
            dev = {}
            for n in seg.inputs:
                if not staging:
                    continue
                if self.ortvalues:
                    dev[n] = ort.OrtValue.ortvalue_from_shape_and_type(shapes[n], np.float32,
                                                                       device, 0)
                    b.bind_ortvalue_input(n, dev[n])
                else:
                    dev[n] = np.empty(shapes[n], np.float32)
                    b.bind_input(n, 'cpu', 0, np.float32, dev[n].shape, dev[n].ctypes.data)
            for n in seg.outputs:
                b.bind_output(n, device, 0)     # ORT allocates: the "device" output
            self.dev_in.append(dev)
            self.bindings.append(b)
        self.outputs_are_copies: Optional[bool] = None

    def _check_fresh(self, b, outs) -> None:
        """Check once that copy_outputs_to_cpu returned new memory (so counting it is right)."""
        if self.outputs_are_copies is None:
            ptrs = {ov.data_ptr() for ov in b.get_outputs()}
            self.outputs_are_copies = all(o.ctypes.data not in ptrs for o in outs)
            if not self.outputs_are_copies:
                raise RuntimeError('copy_outputs_to_cpu returned ORT-owned memory: the '
                                   'copy count would be wrong')

    def run(self, x: np.ndarray) -> List[np.ndarray]:
        """Run one frame with every copy a naive pipeline makes; return the outputs."""
        host = {self.input_name: x}
        result = {}
        for seg, sess, b, dev in zip(self.segments, self.sessions, self.bindings, self.dev_in):
            for n in seg.inputs:
                src = host[n]
                if self.staging:                 # host -> "device"
                    if self.ortvalues:
                        dev[n].update_inplace(src)
                    else:
                        np.copyto(dev[n], src)
                    self.bytes['h2d'] += src.nbytes
                else:
                    b.bind_input(n, 'cpu', 0, np.float32, src.shape, src.ctypes.data)
            sess.run_with_iobinding(b)
            outs = b.copy_outputs_to_cpu()       # "device" -> fresh host arrays
            self._check_fresh(b, outs)
            self.bytes['d2h'] += sum(o.nbytes for o in outs)
            for n, arr in zip(seg.outputs, outs):
                if n in self.host_in:            # hand-off into the next segment's input
                    np.copyto(self.host_in[n], arr)
                    self.bytes['handoff'] += arr.nbytes
                    host[n] = self.host_in[n]
                result[n] = arr
        return [result[n] for n in self.output_names]


def max_rel_error(outs, ref) -> float:
    """Return the largest |out - ref| relative to the reference's scale (at least 1)."""
    return max(float(np.abs(np.asarray(a) - b).max() / max(1.0, float(np.abs(b).max())))
               for a, b in zip(outs, ref))


def memory_modes(device: str) -> List[dict]:
    """Probe edge_infer.executor.buffers and ORT; return one dict per device memory mode."""
    try:
        import onnxruntime as ort
        listed = ort.get_available_providers()
    except ImportError as exc:
        listed, why_ort = [], f'onnxruntime not importable: {exc}'
    else:
        why_ort = (f'onnxruntime {ort.__version__} lists {", ".join(listed)} '
                   f'(no CUDAExecutionProvider: install onnxruntime-gpu on an NVIDIA machine)')
    cuda_ep = 'CUDAExecutionProvider' in listed
    modes = []
    for p in buffer_providers():      # the executor's, and mapped OpenCL memory
        try:
            ok, why = p.available()
        except Exception as exc:  # a probe must not take the experiment down
            ok, why = False, f'probe failed: {type(exc).__name__}: {exc}'
        mode = {'memory': p.name, 'provider': p, 'available': ok, 'reason': why}
        if p.name == 'cuda-mapped':
            mode['ep'] = 'CUDAExecutionProvider'
            if ok and not cuda_ep:
                mode['available'], mode['reason'] = False, f'{why}; but {why_ort}'
            mode['wanted'] = device in ('all', 'cuda')
        else:
            mode['ep'] = 'CPUExecutionProvider'
            mode['wanted'] = device in ('all', 'cpu')
        modes.append(mode)
    modes.append({'memory': 'cuda device memory', 'provider': None, 'available': cuda_ep,
                  'reason': 'CUDAExecutionProvider listed' if cuda_ep else why_ort,
                  'ep': 'CUDAExecutionProvider', 'wanted': device in ('all', 'cuda')})
    return modes


def build_pipelines(model_path, segments, modes, threads: int, log=print) -> list:
    """Return the pipelines to compare for one model (failed ones logged and skipped)."""
    inp, outs = graph_io(model_path)
    makers = []
    for m in modes:
        if not (m['available'] and m['wanted']):
            continue
        if m['memory'] == 'host':
            makers += [
                lambda: ZeroCopy(segments, inp, outs, threads),
                lambda: Copying(segments, inp, outs, threads, 'cpu', staging=False),
                lambda: Copying(segments, inp, outs, threads, 'cpu', staging=True)]
        elif m['memory'] == 'opencl-mapped':
            makers.append(lambda p=m['provider']: ZeroCopy(
                segments, inp, outs, threads, buffers=p,
                label='zero-copy (opencl-mapped, CPU EP)'))
        elif m['memory'] == 'cuda-mapped':
            makers.append(lambda p=m['provider']: ZeroCopy(
                segments, inp, outs, threads, 'CUDAExecutionProvider', p,
                label='zero-copy (cuda-mapped)'))
        elif m['memory'] == 'cuda device memory':
            makers += [
                lambda: DeviceResident(segments, inp, outs, threads),
                lambda: Copying(segments, inp, outs, threads, 'cuda', staging=True,
                                label='copy + staging (cuda)')]
    pipes = []
    for make in makers:
        try:
            pipes.append(make())
        except Exception as exc:  # e.g. a CUDA session that will not open: say why, go on
            log(f'WARNING a pipeline could not be built: {type(exc).__name__}: '
                f'{str(exc).splitlines()[0] if str(exc) else ""}')
    return pipes


def passes(pipes, xs, repeats: int, min_pass_s: float, power, log=print) -> List[dict]:
    """Time interleaved passes over ``xs``; return one row per (pipeline, pass)."""
    for p in pipes:                      # warm-up, and a cycle count reaching min_pass_s
        for x in xs:
            p.run(x)
    t = time.perf_counter()
    for x in xs:
        pipes[0].run(x)
    cycles = max(1, int(np.ceil(min_pass_s / max(time.perf_counter() - t, 1e-6))))
    rows = []
    for rep in range(repeats):
        order = pipes if rep % 2 == 0 else pipes[::-1]
        for p in order:
            before = dict(p.bytes)
            times = []
            t0 = time.monotonic()
            for _ in range(cycles):
                for x in xs:
                    t = time.perf_counter()
                    p.run(x)
                    times.append((time.perf_counter() - t) * 1e3)
            t1 = time.monotonic()
            n = len(times)
            joules = power.joules(t0, t1) if power is not None else float('nan')
            row = {'mode': p.label, 'pass': rep, 'frames': n, 'times_ms': times,
                   'energy_mj_per_frame': 1e3 * joules / n, 'avg_w': joules / (t1 - t0)}
            for c in CATEGORIES:
                row[f'{c}_bytes_per_frame'] = (p.bytes[c] - before[c]) / n
            rows.append(row)
    log(f'  {repeats} interleaved passes of {cycles} x {len(xs)} frames per mode')
    return rows


def summarize(model: str, rows: List[dict], errors: Dict[str, float],
              identical: Dict[str, bool]) -> List[dict]:
    """Return one summary row per mode (medians, ranges, ratios to zero-copy)."""
    out = []
    for mode in dict.fromkeys(r['mode'] for r in rows):
        rs = [r for r in rows if r['mode'] == mode]
        t = benchlib.summary([v for r in rs for v in r['times_ms']])
        e = benchlib.summary([r['energy_mj_per_frame'] for r in rs])
        row = {'row': 'summary', 'model': model, 'mode': mode,
               'time_ms_median': t['median'], 'time_ms_min': t['min'], 'time_ms_max': t['max'],
               'frames': t['n'],
               'energy_mj_median': e['median'], 'energy_mj_min': e['min'],
               'energy_mj_max': e['max'], 'avg_w': float(np.median([r['avg_w'] for r in rs]))}
        total = 0.0
        for c in CATEGORIES:
            v = float(np.median([r[f'{c}_bytes_per_frame'] for r in rs]))
            row[f'{c}_bytes'] = v
            total += v
        row['bytes_per_frame'] = total
        for c in CATEGORIES + ('bytes_per_frame',):
            key = c if c == 'bytes_per_frame' else f'{c}_bytes'
            row[key.replace('bytes', 'mb')] = row[key] / 1e6
        row['max_rel_error'] = errors.get(mode, float('nan'))
        row['identical_to_zero_copy'] = identical.get(mode, '')
        out.append(row)
    base = next((r for r in out if r['mode'] == 'zero-copy'), None)
    cuda_base = next((r for r in out if r['mode'] == 'zero-copy (cuda-mapped)'),
                     next((r for r in out if r['mode'] == 'device-resident (cuda)'), None))
    for r in out:
        ref = cuda_base if 'cuda' in r['mode'] and cuda_base is not None else base
        if ref is not None:
            r['time_ratio'] = r['time_ms_median'] / ref['time_ms_median']
            r['energy_ratio'] = r['energy_mj_median'] / ref['energy_mj_median']
            r['baseline'] = ref['mode']
    return out


def check_outputs(pipes, xs, refs, log=print) -> tuple:
    """Return ({mode: max rel error vs the whole model}, {mode: bitwise equal to zero-copy}).

    A pipeline that raises here is removed from ``pipes`` (logged), so that one
    mode failing on a device does not take the others down.
    """
    errors, got = {}, {}
    for p in list(pipes):
        try:
            outs = [[np.array(o, copy=True) for o in p.run(x)] for x in xs]
        except Exception as exc:  # e.g. a CUDA path this machine's build cannot do
            log(f'WARNING {p.label}: failed on the first frames, not measured: '
                f'{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ""}')
            pipes.remove(p)
            continue
        got[p.label] = outs
        errors[p.label] = max(max_rel_error(o, r) for o, r in zip(outs, refs))
    base = got.get('zero-copy')
    identical = {}
    for label, outs in got.items():
        if base is not None and label != 'zero-copy':
            identical[label] = all(np.array_equal(a, b) for oa, ob in zip(outs, base)
                                   for a, b in zip(oa, ob))
    return errors, identical


def plot(plt, rows) -> None:
    """Bar charts: time and energy per frame per model and mode (median, min-max)."""
    summ = [r for r in rows if r.get('row') == 'summary']
    models = list(dict.fromkeys(r['model'] for r in summ))
    modes = list(dict.fromkeys(r['mode'] for r in summ))
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    width = 0.8 / max(1, len(modes))
    for ax, key, unit in ((axes[0], 'time_ms', 'ms per frame'),
                          (axes[1], 'energy_mj', 'mJ per frame (see power source)')):
        for j, mode in enumerate(modes):
            xs, ys, lo, hi = [], [], [], []
            for i, model in enumerate(models):
                r = next((r for r in summ if r['model'] == model and r['mode'] == mode), None)
                if r is None:
                    continue
                xs.append(i + j * width)
                ys.append(r[f'{key}_median'])
                lo.append(r[f'{key}_median'] - r[f'{key}_min'])
                hi.append(r[f'{key}_max'] - r[f'{key}_median'])
            ax.bar(xs, ys, width, yerr=[lo, hi], capsize=3, label=mode)
        ax.set_xticks([i + width * (len(modes) - 1) / 2 for i in range(len(models))])
        ax.set_xticklabels(models)
        ax.set_ylabel(unit)
    axes[0].legend(fontsize=7)


def main(argv=None) -> int:
    """Run the comparison and write the results."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    benchlib.common_args(ap)
    ap.add_argument('--device', choices=('all', 'cpu', 'cuda'), default='all',
                    help='memory modes to run: cpu, cuda, or all that this machine has')
    ap.add_argument('--models', nargs='*', default=list(MODELS))
    ap.add_argument('--threads', type=int, default=1,
                    help='intra-op threads per segment session (the executor uses 1)')
    ap.add_argument('--frames', type=int, default=8, help='bag frames per model')
    ap.add_argument('--repeats', type=int, default=9, help='interleaved passes per mode')
    ap.add_argument('--min-pass-s', type=float, default=0.6,
                    help='a pass cycles over the frames until it lasts this long (energy window)')
    ap.add_argument('--no-power', action='store_true', help='skip the power meter')
    args = ap.parse_args(argv)
    if args.quick:
        args.frames, args.repeats, args.min_pass_s = 3, 3, 0.25
    res = benchlib.Results('exp4_zero_copy', 'Zero-copy vs copy between executor segments',
                           'Lee & Kang 2016 (zero-copy on unified memory: -10 % time, '
                           '-36 % energy per image, Jetson TK1 GoogLeNet)', args.machine,
                           args.out)
    modes = memory_modes(args.device)
    print('device memory modes (edge_infer.executor.buffers + onnxruntime):')
    for m in modes:
        state = 'available' if m['available'] else 'UNAVAILABLE'
        run = 'run' if m['available'] and m['wanted'] else 'not run'
        print(f"  {m['memory']:<20} {state:<12} {run:<8} {m['reason']}")
        res.add(row='memory mode', mode=m['memory'], available=m['available'],
                run=m['available'] and m['wanted'], reason=m['reason'])
        res.note(f"memory mode {m['memory']}: {'available' if m['available'] else 'unavailable'}"
                 f"{'' if m['wanted'] else ' (not requested)'} — {m['reason']}")
    power = benchlib.Power(enabled=not args.no_power)
    res.power = source = power.source
    print(f'power: {source}')
    xs_all = bag_tensors(args.models, args.frames)
    summaries = []
    failures: List[str] = []
    ran_cuda = False
    try:
        for model in args.models:
            path = paths.models_dir() / f'{model}.onnx'
            segments = partition(path)
            print(f'{model}: {len(segments)} segments '
                  f"({' '.join(s.name for s in segments)})")

            def log(line: str, model: str = model) -> None:
                print(line, file=sys.stderr)
                failures.append(f'{model}: {line}')
            pipes = build_pipelines(path, segments, modes, args.threads, log=log)
            xs = xs_all[model]
            refs = whole_outputs(path, xs)
            errors, identical = check_outputs(pipes, xs, refs, log=log)
            if not pipes:
                continue
            ran_cuda |= any('cuda' in p.label for p in pipes)
            rows = passes(pipes, xs, args.repeats, args.min_pass_s,
                          None if args.no_power else power)
            for r in rows:
                t = benchlib.summary(r['times_ms'])
                res.add(row='pass', model=model, mode=r['mode'], repeat=r['pass'],
                        frames=r['frames'], time_ms_median=t['median'], time_ms_min=t['min'],
                        time_ms_max=t['max'], energy_mj_per_frame=r['energy_mj_per_frame'],
                        avg_w=r['avg_w'],
                        **{f'{c}_bytes': r[f'{c}_bytes_per_frame'] for c in CATEGORIES})
            summ = summarize(model, rows, errors, identical)
            for s in summ:
                res.add(**s)
                print(f"  {s['mode']:<34} {s['time_ms_median']:7.2f} ms "
                      f"({s['time_ms_min']:.2f}-{s['time_ms_max']:.2f}) "
                      f"{s['energy_mj_median']:7.2f} mJ  {s['bytes_per_frame'] / 1e6:6.2f} MB "
                      f"copied/frame  x{s.get('time_ratio', float('nan')):.3f} time "
                      f"x{s.get('energy_ratio', float('nan')):.3f} energy  "
                      f"err {s['max_rel_error']:.1e}")
            summaries += summ
    finally:
        power.close()
    res.note('Time: wall time of one frame through every segment (preprocessing excluded: the '
             'same preprocessed bag frames feed every mode); median (min-max) over every frame '
             f'of {args.repeats} passes per mode, modes interleaved pass by pass with the order '
             f'alternating; {args.threads} intra-op thread(s) per segment session as the '
             'executor uses.')
    res.note(f'Energy per frame: {source} over each pass / frames in it; median '
             '(min-max) over passes. '
             + ('' if 'ESTIMATED' not in source else
                'Every mode keeps the same cores busy, so with the estimator '
                'the energy ratio follows the time ratio; it says nothing of the DRAM / '
                'bus energy that copies cost on a board with a power sensor (Lee & Kang 2016 '
                'measured it with a wall power meter). The estimator reads machine-wide CPU time '
                '(/proc/stat): other work on the machine is counted too.'))
    res.note('Bytes copied per frame, counted as the copies are made: h2d = input staging into '
             'the "device" buffer, d2h = outputs returned as fresh arrays '
             '(copy_outputs_to_cpu, verified to be new memory), handoff = copy into the next '
             "segment's input buffer, runner = OrtSegmentRunner.copied (the executor's own count: "
             'ORT writing elsewhere than the bound buffer, or staging an unmapped input for a '
             'CUDA device). The preprocessing pass that writes the input tensor is the same in '
             'every mode and not counted.')
    res.note('copy + staging on the CPU is EMULATED: the "device" buffers are host memory, so '
             'the staging costs host memcpy bandwidth only (no PCIe, no DMA engine, no '
             'synchronisation); on a discrete GPU the same bytes cross PCIe.')
    res.note("Ratios: mode / zero-copy (CUDA modes: / zero-copy (cuda-mapped), Lee & Kang 2016's "
             'baseline, or where that cannot run / device-resident (cuda); column "vs"), '
             'medians measured side by side in this run. max_rel_error: largest '
             '|out - whole model| / max(1, |whole model|) over the frames; the partitioned '
             "model is not bitwise the whole model's (ORT fuses across segment borders "
             'differently), so identical_to_zero_copy says whether a copy mode gives bit for bit '
             "the executor's outputs.")
    for line in failures:
        res.note(line)
    columns = ['model', 'mode', 'time_ms_median', 'time_ms_min', 'time_ms_max',
               'energy_mj_median', 'energy_mj_min', 'energy_mj_max', 'mb_per_frame',
               'h2d_mb', 'd2h_mb', 'handoff_mb', 'runner_mb', 'baseline', 'time_ratio',
               'energy_ratio', 'max_rel_error', 'identical_to_zero_copy']
    headers = ['model', 'mode', 'ms/frame', 'min', 'max', 'mJ/frame', 'min', 'max',
               'MB copied/frame', 'h2d MB', 'd2h (fresh outputs) MB', 'hand-off MB',
               'runner MB', 'vs',
               'time vs zero-copy', 'energy vs zero-copy', 'max rel. error vs whole model',
               'bitwise = zero-copy']
    res.write(columns, headers, plot=plot if summaries else None, md_rows=summaries)
    if args.device == 'cuda' and not ran_cuda:
        print('exp4: --device cuda: no CUDA mode could run here (reasons above)', file=sys.stderr)
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())

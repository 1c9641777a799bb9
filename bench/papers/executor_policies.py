# Copyright 2026 edge_infer contributors. Apache-2.0.
"""Three DNNs at once through the shared executor, per policy and background load.

    ./run.sh exec python bench/papers/executor_policies.py [--frames 30] [--loads 0 0.4 0.6]

Models: nanodet (camera 1), mobilenet_v2, nanodet again (camera 2), fed with
frames of the bundled bag, preprocessed once. For each background load on
the 'accelerator' device (a load generator keeps it busy that share of the
time, as another app's kernels would) it runs:
- naive: one whole-model ONNX Runtime session per model, default threads,
  each in its own thread (what three nodes do without an executor); the
  background load runs on a device thread of its own;
- the executor with each policy (accelerator-only, by-layer-type, cost-model).
It prints throughput (frames/s, all models), p95 latency (submit to result),
bytes copied per frame, and ratios to accelerator-only and to naive, and
checks every output against the unpartitioned model's; the tables go to
``executor_policies.csv`` / ``.md`` (benchlib).

Also a library: experiment 5 (exp5_multi_dnn.py) runs its cells with
:func:`bag_tensors`, :func:`references`, :func:`run_naive` and
:func:`run_policy`.
"""

import argparse
import threading
import time

import benchlib
from edge_infer import paths
from edge_infer.core.bag_read import iter_bag_frames
from edge_infer.core.image import from_raw
from edge_infer.core.preprocess import Preprocessor
from edge_infer.core.registry import load_registry
from edge_infer.executor.core import Device, POLICIES, SharedExecutor
from edge_infer.testing.load import LoadGenerator
import numpy as np
import onnxruntime as ort

INSTANCES = [('nanodet#1', 'nanodet'), ('mobilenet_v2', 'mobilenet_v2'), ('nanodet#2', 'nanodet')]


def bag_tensors(n: int, instances=INSTANCES) -> dict:
    """Return {registry model: [tensor, ...]} from the first n raw frames of the demo bag."""
    from rclpy.serialization import deserialize_message
    from sensor_msgs.msg import Image
    reg = load_registry(paths.config_dir() / 'models.yaml')
    frames = []
    for topic, _, _, raw in iter_bag_frames(paths.bags_dir() / 'demo'):
        if topic.endswith('/compressed'):
            continue
        m = deserialize_message(raw, Image)
        frames.append(from_raw(m.encoding, m.height, m.width, m.step, m.data))
        if len(frames) >= n:
            break
    out = {}
    for name in {m for _, m in instances}:
        pre = Preprocessor(reg[name].input_spec)
        out[name] = [np.array(pre(f)[0], copy=True) for f in frames]
    return out


def references(tensors: dict) -> dict:
    """Whole-model outputs per registry model and frame."""
    refs = {}
    for name, xs in tensors.items():
        sess = ort.InferenceSession(str(paths.models_dir() / f'{name}.onnx'),
                                    providers=['CPUExecutionProvider'])
        refs[name] = [sess.run(None, {sess.get_inputs()[0].name: x}) for x in xs]
    return refs


def check(out, ref) -> float:
    """Return the max abs difference, relative to the reference's scale."""
    return max(float(np.abs(a - b).max() / max(1.0, np.abs(b).max())) for a, b in zip(out, ref))


def run_naive(tensors, refs, load: float, instances=INSTANCES, backends=None) -> dict:
    """One whole session per model instance, each in its own thread.

    ``backends``: {model name: Backend} to open each instance on (the backend
    manager's choice); default a plain ONNX Runtime session.
    """
    sessions = {}
    for inst, name in instances:
        path = paths.models_dir() / f'{name}.onnx'
        if backends:
            sessions[inst] = _Whole(backends[name].open_session(path))
            continue
        so = ort.SessionOptions()
        so.log_severity_level = 3
        sessions[inst] = ort.InferenceSession(str(path), so,
                                              providers=['CPUExecutionProvider'])
    bg = Device('background', 'accelerator')

    def worker():
        while True:
            job = bg.get()
            if job is None:
                return
            bg._took(job)
            job.fn()
    th = threading.Thread(target=worker, daemon=True)
    th.start()
    gen = LoadGenerator(bg, load).start()
    lat, err = [], [0.0]

    def feed(inst, name):
        s = sessions[inst]
        for x, ref in zip(tensors[name], refs[name]):
            t = time.perf_counter()
            out = s.run(None, {s.get_inputs()[0].name: x})
            lat.append((time.perf_counter() - t) * 1e3)
            err[0] = max(err[0], check(out, ref))
    t0 = time.perf_counter()
    threads = [threading.Thread(target=feed, args=i) for i in instances]
    [t.start() for t in threads]
    [t.join() for t in threads]
    wall = time.perf_counter() - t0
    duty = gen.achieved()
    gen.stop()
    bg.stop()
    for s in sessions.values():
        if isinstance(s, _Whole):
            s.close()
    return {'fps': len(lat) / wall, 'p95': float(np.percentile(lat, 95)), 'copied': 0.0,
            'err': err[0], 'placement': '-', 'duty': duty}


class _Whole:
    """An edge_infer Session with ONNX Runtime's run(None, feeds) call."""

    def __init__(self, sess):
        self.sess = sess

    def get_inputs(self):
        return [type('Input', (), {'name': self.sess.input_name})]

    def run(self, _names, feeds):
        return [np.array(o, copy=True) for o in self.sess.run(next(iter(feeds.values())))]

    def close(self):
        self.sess.close()


def run_policy(policy, tensors, refs, load: float, instances=INSTANCES,
               libraries=None) -> dict:
    """Run the executor with ``policy``; every instance fed from its own thread.

    ``libraries``: {model name: [SegmentLibrary]} its segments may run on
    (default ONNX Runtime): the backend manager's accepted candidates.
    """
    ex = SharedExecutor(policy, log=lambda s: None)
    for inst, name in instances:
        ex.add_model(inst, paths.models_dir() / f'{name}.onnx',
                     (libraries or {}).get(name, ()))
    gen = LoadGenerator(ex.devices['accelerator'], load).start()
    lat, err, jobs = [], [0.0], dict.fromkeys(ex.devices, 0)
    n_total = sum(len(tensors[name]) for _, name in instances)
    done = threading.Semaphore(0)
    lock = threading.Lock()

    def feed(inst, name):
        for x, ref in zip(tensors[name], refs[name]):
            def cb(out, frame, ref=ref):
                with lock:
                    lat.append((time.perf_counter() - frame.t_submit) * 1e3)
                    err[0] = max(err[0], check(out, ref))
                    for _, dev, *_ in frame.trace:
                        jobs[dev] += 1
                done.release()
            ex.submit(inst, x, cb)
    t0 = time.perf_counter()
    threads = [threading.Thread(target=feed, args=i) for i in instances]
    [t.start() for t in threads]
    [t.join() for t in threads]
    for _ in range(n_total):
        done.acquire()
    wall = time.perf_counter() - t0
    duty = gen.achieved()
    gen.stop()
    copied = ex.bytes_copied / n_total
    ex.close()
    return {'fps': n_total / wall, 'p95': float(np.percentile(lat, 95)), 'copied': copied,
            'err': err[0], 'placement': ' '.join(f'{d}:{n}' for d, n in jobs.items()),
            'duty': duty}


def main() -> None:
    """Run the grid; print one table per load and save them as one."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--frames', type=int, default=30, help='frames per model instance')
    ap.add_argument('--loads', type=float, nargs='*', default=[0.0, 0.4, 0.6])
    ap.add_argument('--repeats', type=int, default=2, help='runs per cell (median reported)')
    benchlib.common_args(ap)
    args = ap.parse_args()
    if args.quick:
        args.frames, args.repeats = min(args.frames, 5), 1
    res = benchlib.Results('executor_policies', 'Three DNNs at once through the shared '
                           'executor, per policy and background load', 'Kim 2021 Figs. 5-7',
                           args.machine, args.out)
    tensors = bag_tensors(args.frames)
    refs = references(tensors)
    print(f'models: {", ".join(i for i, _ in INSTANCES)}; {args.frames} bag frames each; '
          f'devices: accelerator (1 thread) + cpu (1 thread); 2 cores\n')
    for load in args.loads:
        rows = {}
        for name, fn in [('naive', lambda: run_naive(tensors, refs, load))] + [
                (p, lambda p=p: run_policy(p, tensors, refs, load)) for p in POLICIES]:
            runs = [fn() for _ in range(args.repeats)]
            rows[name] = {k: (benchlib.summary([r[k] for r in runs])['median']
                              if k != 'placement' else runs[-1][k]) for k in runs[0]}
            fps = benchlib.summary([r['fps'] for r in runs])
            rows[name]['fps_range'] = (fps['min'], fps['max'])
        base, naive = rows['accelerator-only']['fps'], rows['naive']['fps']
        print(f'### background load on the accelerator: {load:.0%}\n')
        print('| policy | frames/s (min-max) | p95 ms | bytes copied/frame | vs accelerator-only '
              '| vs naive | max rel. error | segments per device | load achieved |')
        print('|---|---|---|---|---|---|---|---|---|')
        for name, r in rows.items():
            lo, hi = r['fps_range']
            print(f"| {name} | {r['fps']:.1f} ({lo:.1f}-{hi:.1f}) | {r['p95']:.0f} | "
                  f"{r['copied']:.0f} | {r['fps'] / base:.2f}x | {r['fps'] / naive:.2f}x | "
                  f"{r['err']:.1e} | {r['placement']} | {r['duty']:.0%} |")
            res.add(load=load, policy=name, fps_median=r['fps'], fps_min=lo, fps_max=hi,
                    p95_ms=r['p95'], copied_bytes=r['copied'], vs_accelerator_only=r['fps'] / base,
                    vs_naive=r['fps'] / naive, max_rel_err=r['err'], placement=r['placement'],
                    load_achieved=r['duty'], runs=args.repeats)
        print()
    res.note(f'models: {", ".join(i for i, _ in INSTANCES)}; {args.frames} bag frames each; '
             f'devices: accelerator (1 thread) + cpu (1 thread); {args.repeats} run(s) per cell, '
             'median (frames/s: min-max); p95: submit to result; error: max abs difference '
             "relative to the unpartitioned model's output scale")
    res.write(['load', 'policy', 'fps_median', 'fps_min', 'fps_max', 'p95_ms', 'copied_bytes',
               'vs_accelerator_only', 'vs_naive', 'max_rel_err', 'placement', 'load_achieved'],
              ['background load', 'policy', 'frames/s', 'min', 'max', 'p95 ms',
               'bytes copied/frame', 'vs accelerator-only', 'vs naive', 'max rel. error',
               'segments per device', 'load achieved'])


if __name__ == '__main__':
    main()

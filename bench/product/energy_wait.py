# Copyright 2026 edge_infer contributors. Apache-2.0.
"""How long a perception result waits for its energy, with a measured power source.

    ./run.sh exec python bench/product/energy_wait.py [--frames 300] [--fps 30] [--rate 100]

A perception node (``--model``, forced ``--backend``, this process, real
rclpy) meters its runs on a simulated Jetson INA3221: the JetPack 5 hwmon
sysfs tree of the tests, written to a temporary folder, its driver
refreshing every 1/``--rate`` s. Frames go through the node's own path
(``PerceptionNode._process``, as its worker calls it) at ``--fps``. Printed:
the node's ``energy`` stage (what the frame thread spends on energy before
publishing the result: the wait for the first power sample after the run
when the result carried the record) as p50/p90/max, the frame's own
latency (parse to result published), and how long after its result each
frame's EnergyRecord was published on ~/energy; the same figures go to
``energy_wait.csv`` / ``.md`` (benchlib).
"""

import argparse
import os
import pathlib
import shutil
import tempfile
import threading
import time

import benchlib
from edge_infer import procs
import numpy as np


def sysfs_tree(root: pathlib.Path, refresh_ms: float) -> None:
    """Write a Jetson-like INA3221 hwmon tree (one input rail) under ``root``."""
    dev = root / 'sys/devices/platform/i2c-1/1-0040'
    hw = dev / 'hwmon/hwmon3'
    hw.mkdir(parents=True)
    link = root / 'sys/bus/i2c/devices/1-0040'
    link.parent.mkdir(parents=True)
    os.symlink(os.path.relpath(dev, link.parent), link)
    for name, value in (('name', 'ina3221'), ('update_interval', f'{refresh_ms:g}'),
                        ('in1_label', 'VDD_IN'), ('in1_input', 5072), ('curr1_input', 1280)):
        (hw / name).write_text(f'{value}\n')


def pct(values, q: float) -> float:
    """Return the ``q`` percentile of ``values`` (NaN when empty)."""
    return float(np.percentile(values, q)) if len(values) else float('nan')


def main() -> None:
    """Measure; print and save the figures."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--frames', type=int, default=300, help='frames measured (after 10 warm-up)')
    ap.add_argument('--fps', type=float, default=30.0, help='camera rate the frames come at')
    ap.add_argument('--rate', type=float, default=100.0, help='power sensor refresh rate, Hz')
    ap.add_argument('--model', default='mobilenet_v2', help='registry model')
    ap.add_argument('--backend', default='onnxruntime/cpu/t1', help='forced backend')
    benchlib.common_args(ap)
    args = ap.parse_args()
    if args.quick:
        args.frames = min(args.frames, 30)
    res = benchlib.Results('energy_wait', 'How long a perception result waits for its energy, '
                           'with a measured power source', '(product)', args.machine, args.out)
    procs.use_ros_env_here()
    tmp = pathlib.Path(tempfile.mkdtemp(prefix='energy_wait-'))
    os.environ['EDGE_INFER_CACHE'] = str(tmp / 'cache')    # no profile of this run kept
    sysfs_tree(tmp / 'root', 1000.0 / args.rate)

    import rclpy
    from rclpy.parameter import Parameter
    from rclpy.serialization import serialize_message
    from sensor_msgs.msg import Image

    from edge_infer.nodes.perception_node import PerceptionNode
    from edge_infer.backends.runtime import Runtime
    from edge_infer.telemetry.process_meter import settings
    ctx = rclpy.Context()
    rclpy.init(context=ctx, domain_id=procs.free_domain_id(os.getpid()))
    runtime = Runtime()     # the node's: its meter is the one started here
    meter = runtime.meter.acquire(settings(rate_hz=args.rate, root=str(tmp / 'root')),
                                  log=lambda s: None)
    node = PerceptionNode('energy_wait', runtime=runtime, context=ctx, parameter_overrides=[
        Parameter('model', value=args.model), Parameter('backend', value=args.backend),
        Parameter('reselect_duty', value=0.0), Parameter('diagnostics_period', value=0.0),
        Parameter('debug_image_rate_hz', value=0.0)])
    stages, published, followed = [], {}, {}
    lock = threading.Lock()
    try:
        assert node.trigger_configure().name == 'SUCCESS', 'configure failed (see the log)'
        assert node.trigger_activate().name == 'SUCCESS', 'activate failed (see the log)'
        task = node.parts.cameras[0].task
        add, task_publish, publish_energy = (node.stats.add_latency, task.publish,
                                             node.energy.publish)

        def add_latency(ms, st=None):       # the node's own stage times, per frame
            stages.append((ms, st['energy']))
            add(ms, st)

        def result_out(out, result):
            task_publish(out, result)
            published[out.header.stamp.sec] = time.perf_counter()

        def energy_out(out, *rest):
            publish_energy(out, *rest)
            with lock:
                followed[out.header.stamp.sec] = time.perf_counter()
        node.stats.add_latency, task.publish = add_latency, result_out
        node.energy.publish = energy_out
        img = Image(height=224, width=224, encoding='rgb8', step=224 * 3, data=np.random.
                    default_rng(0).integers(0, 255, 224 * 224 * 3, np.uint8).tobytes())
        warmup, period = 10, 1.0 / args.fps
        next_t = time.perf_counter()
        for k in range(warmup + args.frames):
            img.header.stamp.sec = k + 1
            raw = serialize_message(img)
            time.sleep(max(0.0, next_t - time.perf_counter()))
            next_t += period
            node._process(time.perf_counter(), raw)
        deadline = time.monotonic() + 2.0
        while len(followed) < warmup + args.frames and time.monotonic() < deadline:
            time.sleep(0.01)
        source, rate = meter.source_name, meter.rate_hz
        backend = node.parts.live.model.backend_name
    finally:
        node.trigger_shutdown()
        node.destroy_node()
        runtime.meter.release()
        rclpy.shutdown(context=ctx)
        shutil.rmtree(tmp, ignore_errors=True)
    measured = stages[warmup:]
    wait = [e for _, e in measured]
    total = [ms for ms, _ in measured]
    with lock:
        lag = [(followed[s] - published[s]) * 1e3 for s in range(warmup + 1, len(stages) + 1)
               if s in followed and s in published]
    res.power = f'{source} at {rate:.0f} Hz (simulated INA3221 sysfs tree)'
    res.note(f'power source {source} (simulated sysfs tree, driver refresh '
             f'{1000.0 / args.rate:g} ms) sampled at {rate:.0f} Hz; {args.model} on {backend}; '
             f'{len(measured)} frames at {args.fps:g} fps')
    w, f, g = benchlib.summary(wait), benchlib.summary(total), benchlib.summary(lag)
    print(f"result's wait for energy (stage 'energy'): p50 {w['median']:.3f} ms, "
          f"p90 {pct(wait, 90):.3f} ms, max {w['max']:.3f} ms")
    print(f"frame latency (parse to result published): p50 {f['median']:.2f} ms, "
          f'p90 {pct(total, 90):.2f} ms')
    res.note(f"EnergyRecord on ~/energy after its result: p50 {g['median']:.2f} ms, "
             f"max {g['max']:.2f} ms; {len(lag)}/{len(measured)} "
             f'records, energy_missing {node.stats.energy_missing}')
    for what, v, s in (("result's wait for energy (stage 'energy')", wait, w),
                       ('frame latency (parse to result published)', total, f),
                       ('EnergyRecord on ~/energy after its result', lag, g)):
        res.add(figure=what, ms_p50=s['median'], ms_p90=pct(v, 90), ms_max=s['max'], n=s['n'])
    res.write(['figure', 'ms_p50', 'ms_p90', 'ms_max', 'n'],
              ['figure', 'ms p50', 'p90', 'max', 'frames'])


if __name__ == '__main__':
    main()

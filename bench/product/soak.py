# Copyright 2026 edge_infer contributors. Apache-2.0.
"""Overload soak: 10,000 camera frames at 60 Hz into the detector (newest-frame policy).

    ./run.sh exec python bench/product/soak.py [--frames 10000] [--rate 60]

Prints frames sent / results / dropped, latency (publish to result) p50 /
p95 / max, and the container's RSS after warm-up and at the end (goal:
growth under 5 %), and writes them to ``soak.csv`` / ``soak.md``
(benchlib). About 3 minutes at the defaults.
"""

import argparse
import json
import pathlib
import tempfile

import benchlib
from edge_infer import procs
from edge_infer.testing.reliability import soak


def main() -> None:
    """Run the soak; print and save its figures."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--frames', type=int, default=10000)
    ap.add_argument('--rate', type=float, default=60.0)
    benchlib.common_args(ap)
    args = ap.parse_args()
    frames = min(args.frames, 600) if args.quick else args.frames
    res = benchlib.Results('soak', 'Overload soak: camera frames into the detector, '
                           'newest-frame policy', '(product) RSS growth under 5 %',
                           args.machine, args.out)
    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    procs.use_ros_env_here()
    domain = procs.free_domain_id()
    rclpy.init(domain_id=domain)
    node = rclpy.create_node('edge_infer_soak')
    executor = SingleThreadedExecutor()
    executor.add_node(node)
    try:
        r = soak(node, executor, procs.ros_env(domain),
                 pathlib.Path(tempfile.mkdtemp(prefix='edge_infer_soak_')), frames,
                 args.rate)
    finally:
        rclpy.try_shutdown()
    print(json.dumps(r, indent=1))
    print(f"\nsent {r['sent']} at {r['rate_hz']:.1f} Hz; results {r['results']}; node counted "
          f"received {r['received']}, processed {r['processed']}, dropped {r['dropped']}, "
          f"rejected {r['rejected']}; stamps increasing: {r['monotonic']}")
    print(f"latency publish->result p50 {r['latency_p50_ms']:.0f} ms, p95 "
          f"{r['latency_p95_ms']:.0f} ms, max {r['latency_max_ms']:.0f} ms")
    print(f"container RSS {r['rss_after_warmup_mb']:.1f} MB after warm-up -> "
          f"{r['rss_end_mb']:.1f} MB at the end: {100 * r['rss_growth']:+.2f} % (goal < 5 %)")
    res.add(**{k: (str(v) if isinstance(v, (list, dict)) else v) for k, v in r.items()})
    res.note(f'{frames} frames requested at {args.rate:g} Hz; latency: camera publish to '
             'result; RSS: the container after warm-up and at the end (goal: growth < 5 %); '
             f"stamps increasing: {r['monotonic']}")
    res.write(['sent', 'rate_hz', 'results', 'received', 'processed', 'dropped', 'rejected',
               'latency_p50_ms', 'latency_p95_ms', 'latency_max_ms', 'rss_after_warmup_mb',
               'rss_end_mb', 'rss_growth'],
              ['sent', 'Hz', 'results', 'received', 'processed', 'dropped', 'rejected',
               'latency p50 ms', 'p95 ms', 'max ms', 'RSS after warm-up MB', 'RSS end MB',
               'RSS growth'])


if __name__ == '__main__':
    main()

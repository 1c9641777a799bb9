# Copyright 2026 edge_infer contributors. Apache-2.0.
"""Overload soak: a camera far faster than the model, for thousands of frames.

:func:`soak` starts the graph with one detector (edge_infer.graph /
bring-up), publishes camera frames at ``rate_hz`` from this process, and
measures what a robot engineer asks of an overloaded node: it keeps up by
processing the newest frame (results' stamps only ever increase), counts what
it drops, keeps latency bounded, and its memory stays flat (container RSS
after warm-up vs at the end). Used by bench/product/soak.py (10,000 frames) and by a
shorter test.
"""

import pathlib
import time
from typing import Callable, Dict, Optional

import numpy as np

from .. import graph, procs
from ..bringup import Running


def soak(ros_node, executor, env: Dict[str, str], work_dir: pathlib.Path, frames: int = 10000,
         rate_hz: float = 60.0, warmup: int = 500, size=(480, 640),
         log: Callable[[str], None] = print, detector_params: Optional[dict] = None) -> dict:
    """Run the soak; return counters, latencies and RSS figures.

    ``detector_params`` override the detector's parameters (e.g. turn the
    drift monitor off to measure the node alone: a re-evaluation loads every
    candidate's session once, which raises RSS by a step, see the notes).
    """
    import psutil
    from diagnostic_msgs.msg import DiagnosticArray
    from edge_infer_msgs.msg import DetectionArray
    from rclpy.qos import qos_profile_sensor_data
    from sensor_msgs.msg import Image
    plans = graph.plan(nodes=['detector'])
    if detector_params:
        plans[0].params['detector']['ros__parameters'].update(detector_params)
    run = Running(plans, env, work_dir).start()
    results, diag = [], {}
    sent_at: Dict[int, float] = {}

    def on_result(m):
        results.append((time.monotonic(), m.header.stamp.sec * 10**9 + m.header.stamp.nanosec))

    def on_diag(m):
        for st in m.status:
            if st.name.startswith('/detector'):
                diag.update({kv.key: kv.value for kv in st.values})
    subs = [ros_node.create_subscription(DetectionArray, '/detector/detections', on_result, 100),
            ros_node.create_subscription(DiagnosticArray, '/diagnostics', on_diag, 10)]
    pub = ros_node.create_publisher(Image, '/camera/image_raw', qos_profile_sensor_data)
    h, w = size
    rgb = np.random.default_rng(0).integers(0, 255, (h, w, 3), dtype=np.uint8)
    msg = Image(height=h, width=w, encoding='rgb8', step=w * 3, data=rgb.tobytes())
    proc = psutil.Process(run.procs[0][1].pid)
    rss = {}
    try:
        run.activate(ros_node, executor)
        deadline = time.monotonic() + 20
        while pub.get_subscription_count() == 0 and time.monotonic() < deadline:
            executor.spin_once(timeout_sec=0.05)
        period = 1.0 / rate_hz
        t_next = time.monotonic()
        t0 = t_next
        for k in range(1, frames + 1):
            msg.header.stamp.sec, msg.header.stamp.nanosec = k, 0
            sent_at[k * 10**9] = time.monotonic()
            pub.publish(msg)
            if k == warmup:
                rss['after_warmup'] = proc.memory_info().rss
            t_next += period
            while True:
                left = t_next - time.monotonic()
                if left <= 0:
                    break
                executor.spin_once(timeout_sec=min(left, 0.01))
            if k % 2000 == 0:
                log(f'[soak] {k}/{frames} frames sent, {len(results)} results')
        wall = time.monotonic() - t0
        end = time.monotonic() + 3
        while time.monotonic() < end:
            executor.spin_once(timeout_sec=0.05)
        rss['end'] = proc.memory_info().rss
        diag_deadline = time.monotonic() + 3
        diag.clear()
        while not diag and time.monotonic() < diag_deadline:
            executor.spin_once(timeout_sec=0.05)
    finally:
        codes = run.stop()
        for s in subs:
            ros_node.destroy_subscription(s)
        ros_node.destroy_publisher(pub)
    lat = [(t - sent_at[s]) * 1e3 for t, s in results if s in sent_at]
    stamps = [s for _, s in results]
    return {
        'sent': frames, 'rate_hz': frames / wall, 'results': len(results),
        'received': int(diag.get('received', -1)), 'processed': int(diag.get('processed', -1)),
        'dropped': int(diag.get('dropped', -1)), 'rejected': int(diag.get('rejected', -1)),
        'monotonic': all(b > a for a, b in zip(stamps, stamps[1:])),
        'latency_p50_ms': float(np.percentile(lat, 50)) if lat else float('nan'),
        'latency_p95_ms': float(np.percentile(lat, 95)) if lat else float('nan'),
        'latency_max_ms': float(max(lat)) if lat else float('nan'),
        'rss_after_warmup_mb': rss.get('after_warmup', 0) / 2**20,
        'rss_end_mb': rss.get('end', 0) / 2**20,
        'rss_growth': (rss['end'] / rss['after_warmup'] - 1) if rss.get('after_warmup') else
        float('nan'),
        'exit_codes': codes, 'backend_log': str(work_dir),
    }


def ros_env_for_soak():
    """Return (env, domain) for a private graph."""
    domain = procs.free_domain_id()
    return procs.ros_env(domain), domain

# Copyright 2026 edge_infer contributors. Apache-2.0.
"""The demo: replay the bundled camera bag through the perception container.

    python -m edge_infer.demo [--bag DIR] [--out DIR] [--rate R]

1. starts the perception container (telemetry and four models in one
   process: a detector, a classifier, a pose model and a segmentation model);
2. drives the nodes to 'active' through lifecycle_msgs services;
3. replays the bag from another process (raw CDR, real time);
4. collects the result topics and /diagnostics, and prints frames published /
   processed / dropped, latency p50/p95 per model, power and energy per
   inference per model (with source and sampling rate), the backend each
   model chose, detections per class, and example results per image (boxes,
   top class, people's keypoints, the person mask's share of the picture);
5. writes annotated images (all four models' results drawn), a latency plot
   and a power-over-time plot (inference windows aligned under it) to the
   output folder.
"""

import argparse
import collections
import pathlib
import sys
import time
from typing import Dict

import numpy as np

from . import paths, procs
from .demo_plots import plot_latency, plot_power
from .demo_summary import print_summary, RESULT_TOPICS, stamp_ns as _stamp_ns, summarize

MASK_TOPIC = '/segmenter/mask'
TELEMETRY = '/telemetry'
POWER_TOPIC = '/telemetry/power'


class Collector:
    """Subscribes to the results and diagnostics (in the demo's process)."""

    def __init__(self, node, mask_stamps=()):
        """Subscribe; the masks of frames stamped ``mask_stamps`` (ns) are kept."""
        from diagnostic_msgs.msg import DiagnosticArray
        from edge_infer_msgs import msg as edge_msgs
        from edge_infer_msgs.msg import BackendReport, EnergyRecord, PowerSample
        from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
        from sensor_msgs.msg import Image
        self.node = node
        self.mask_stamps = set(mask_stamps)
        self.masks = {}                                 # stamp ns -> mask Image
        self.results = collections.defaultdict(list)    # node -> [msg]
        self.energy = collections.defaultdict(list)     # node -> [EnergyRecord]
        self.power = []                                 # [PowerSample]
        self.reports = {}                               # node -> latest BackendReport
        self.diag = {}                                  # node -> {key: value}
        self.last_result = time.monotonic()
        self.memory: Dict[str, float] = {}             # node state -> container RSS MB
        self.settled_s = None                           # play time until every choice came
        for name, (topic, kind) in RESULT_TOPICS.items():
            node.create_subscription(getattr(edge_msgs, kind), topic,
                                     lambda m, n=name: self._on_result(n, m), 100)
        node.create_subscription(Image, MASK_TOPIC, self._on_mask, 10)
        node.create_subscription(DiagnosticArray, '/diagnostics', self._on_diag, 10)
        node.create_subscription(PowerSample, POWER_TOPIC, self.power.append, 100)
        latched = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                             durability=DurabilityPolicy.TRANSIENT_LOCAL)
        for name in RESULT_TOPICS:
            node.create_subscription(EnergyRecord, f'/{name}/energy',
                                     self.energy[name].append, 100)
            node.create_subscription(BackendReport, f'/{name}/backend_report',
                                     lambda m, n=name: self.reports.__setitem__(n, m), latched)

    def _on_result(self, name, msg):
        self.results[name].append(msg)
        self.last_result = time.monotonic()

    def _on_mask(self, msg):
        stamp = _stamp_ns(msg.header)
        if stamp in self.mask_stamps:
            self.masks[stamp] = msg

    def _on_diag(self, msg):
        for st in msg.status:
            name = st.name.split(':')[0].lstrip('/')
            self.diag[name] = {kv.key: kv.value for kv in st.values}
            self.diag[name]['_received_at'] = time.monotonic()


def _rss_mb(proc) -> float:
    """Return the process's resident memory in MB (nan once it is gone)."""
    import psutil
    try:
        return psutil.Process(proc.pid).memory_info().rss / 1e6
    except psutil.Error:
        return float('nan')


def _settled(collector: 'Collector') -> bool:
    """Return whether every perception node reported a measured choice (not provisional)."""
    return all(n in collector.reports and collector.reports[n].trigger != 'provisional'
               for n in RESULT_TOPICS)


def run_demo(bag: pathlib.Path, out: pathlib.Path, rate: float = 1.0, log=print,
             settle_s: float = 120.0) -> dict:
    """Run the whole demo; return the summary as a dict.

    The bag plays in a loop until every node has its measured choice (a first
    start profiles in the background: ~20 s here) and one whole pass more has
    played on it, at most ``settle_s`` beyond one pass.
    """
    import rclpy
    from rclpy.executors import SingleThreadedExecutor

    from .core.bag_read import bag_info
    from .nodes.lifecycle_client import LifecycleClient

    out.mkdir(parents=True, exist_ok=True)
    info = bag_info(bag)
    domain = procs.free_domain_id()
    env = procs.ros_env(domain)
    log(f"[demo] bag {bag}: {info['messages']} messages, {info['duration_s']:.1f} s, "
        f"topics {', '.join(info['topics'])}")
    log(f'[demo] ROS_DOMAIN_ID={domain}; logs in {out}')
    examples = _example_frames(bag)
    t_start = time.monotonic()
    container = procs.start_container(env, log_path=out / 'container.log')
    player = None
    procs.use_ros_env_here()
    rclpy.init(args=['--ros-args'], domain_id=domain)
    try:
        node = rclpy.create_node('edge_infer_demo')
        executor = SingleThreadedExecutor()
        executor.add_node(node)
        collector = Collector(node, [stamp for _, stamp, _ in examples])
        lc = LifecycleClient(node, executor)
        memory = collector.memory
        lc.get_state(f'/{TELEMETRY.lstrip("/")}', timeout=60.0)     # the container is up
        memory['unconfigured'] = _rss_mb(container)
        for name in (TELEMETRY, *RESULT_TOPICS):
            lc.change(f"/{name.lstrip('/')}", 'configure', timeout=60.0)
        memory['inactive (configured)'] = _rss_mb(container)
        for name in (TELEMETRY, *RESULT_TOPICS):
            lc.change(f"/{name.lstrip('/')}", 'activate', timeout=60.0)
        memory['active, before the first frame'] = _rss_mb(container)
        log(f'[demo] nodes active after {time.monotonic() - t_start:.1f} s; playing bag')
        player = procs.start_player(bag, env, ['--rate', str(rate), '--loop',
                                               '--wait-for-subscribers', '10'],
                                    log_path=out / 'player.log')
        one_pass = info['duration_s'] / max(rate, 1e-3)
        t_play = time.monotonic()
        settled_at = None
        peak = 0.0
        while player.poll() is None:
            executor.spin_once(timeout_sec=0.1)
            peak = max(peak, _rss_mb(container))
            now = time.monotonic() - t_play
            if settled_at is None and _settled(collector):
                settled_at = now
                log(f'[demo] every node has its measured choice {now:.1f} s after the bag '
                    'started; playing one more pass')
            end = max(one_pass, settled_at + one_pass) if settled_at is not None else \
                one_pass + settle_s
            if now >= end:
                break
        if settled_at is None:
            log(f'[demo] not every node settled within {one_pass + settle_s:.0f} s of play')
        collector.settled_s = settled_at
        memory['active, peak while playing'] = peak
        memory['active, at the end'] = _rss_mb(container)
        procs.stop(player)
        # Drain: results still in flight, then one more diagnostics round.
        t_end = time.monotonic()
        while time.monotonic() - collector.last_result < 1.5 and time.monotonic() - t_end < 10:
            executor.spin_once(timeout_sec=0.1)
        t_diag = time.monotonic()
        while time.monotonic() - t_diag < 5 and not all(
                collector.diag.get(n, {}).get('_received_at', 0) > t_diag for n in RESULT_TOPICS):
            executor.spin_once(timeout_sec=0.1)
        for name in (*RESULT_TOPICS, TELEMETRY):
            lc.change(f"/{name.lstrip('/')}", 'deactivate')
        memory['inactive (deactivated)'] = _rss_mb(container)
        for name in (*RESULT_TOPICS, TELEMETRY):
            lc.change(f"/{name.lstrip('/')}", 'cleanup')
        memory['unconfigured (cleaned up)'] = _rss_mb(container)
    finally:
        if player is not None:
            procs.stop(player)
        code = procs.stop(container)
        rclpy.try_shutdown()
    log(f'[demo] container exited with code {code}; wall time '
        f'{time.monotonic() - t_start:.1f} s')
    player_log = (out / 'player.log').read_text(errors='replace').strip().splitlines()
    summary = summarize(collector, info, player_log[-1] if player_log else '')
    print_summary(summary, log)
    _write_outputs(examples, out, collector, log)
    return summary


def _example_frames(bag) -> list:
    """Return (index, stamp ns, Image) of the example frames: every 50th, every still photo.

    Still photos are the frames whose size differs from the first frame's.
    """
    from rclpy.serialization import deserialize_message
    from sensor_msgs.msg import Image

    from .core.bag_read import iter_bag_frames
    first_size, examples = None, []
    frames = (f for f in iter_bag_frames(bag) if not f[0].endswith('/compressed'))
    for i, (_, _, stamp, raw) in enumerate(frames):
        msg = deserialize_message(raw, Image)
        size = (msg.width, msg.height)
        first_size = first_size or size
        if size != first_size or i % 50 == 0:
            examples.append((i, stamp, msg))
    return examples


def _annotate(img, results: dict, mask_msg):
    """Draw every model's result on ``img`` with the nodes' own drawing code."""
    from .core import draw
    if mask_msg is not None:
        draw.draw_mask(img, np.frombuffer(mask_msg.data, np.uint8).reshape(
            mask_msg.height, mask_msg.step)[:, :mask_msg.width])
    pose = results.get('pose')
    if pose is not None:
        skeleton = list(zip(pose.skeleton[0::2], pose.skeleton[1::2]))
        for p in pose.poses:
            draw.draw_keypoints(img, np.array([[(k.x, k.y, k.score) for k in p.keypoints]],
                                              np.float32), skeleton, 0.3)
    det, cls = results.get('detector'), results.get('classifier')
    boxes = [(d.label if d.track_id < 0 else f'#{d.track_id} {d.label}', d.score,
              d.center_x - d.size_x / 2, d.center_y - d.size_y / 2,
              d.center_x + d.size_x / 2, d.center_y + d.size_y / 2)
             for d in (det.detections if det else [])]
    classes = [(f'{cls.model}: {r.label}', r.score) for r in cls.results] if cls else []
    return draw.annotate(img, boxes, classes, top_k=1)


def _describe(results: dict) -> str:
    """Return one line of every model's result on a frame."""
    d, c = results.get('detector'), results.get('classifier')
    dets = ', '.join(f'{x.label} {x.score:.2f}' for x in (d.detections[:6] if d else []))
    more = f' (+{len(d.detections) - 6})' if d and len(d.detections) > 6 else ''
    top = f'{c.results[0].label} {c.results[0].score:.2f}' if c and c.results else '-'
    pose, seg = results.get('pose'), results.get('segmenter')
    people = '-' if pose is None else f'{len(pose.poses)} pose' + (
        f' {pose.poses[0].detection.score:.2f}' if pose.poses else '')
    share = '-' if seg is None or len(seg.class_fractions) < 2 else \
        f'{seg.labels[1]} {seg.class_fractions[1]:.0%}'
    return f'{dets or "nothing"}{more} | {top} | {people} | {share}'


def _write_outputs(examples: list, out: pathlib.Path, collector: Collector, log) -> None:
    import cv2

    from .core.image import from_raw

    by_stamp = {name: {_stamp_ns(m.header): m for m in msgs}
                for name, msgs in collector.results.items()}
    log('')
    log('examples (frame: detections | top class | poses | mask share):')
    written = 0
    for i, stamp, msg in examples:
        results = {name: got[stamp] for name, got in by_stamp.items() if stamp in got}
        if not results:
            continue
        log(f'  #{i:<4} {msg.width}x{msg.height}: {_describe(results)}')
        frame = from_raw(msg.encoding, msg.height, msg.width, msg.step, msg.data)
        img = cv2.cvtColor(frame.pixels, cv2.COLOR_RGB2BGR)
        cv2.imwrite(str(out / f'frame_{i:04d}.png'),
                    _annotate(img, results, collector.masks.get(stamp)))
        written += 1
    plot_latency(out / 'latency.png', collector.results, _stamp_ns)
    plot_power(out / 'power.png', collector.power, collector.energy, _stamp_ns)
    log('')
    log(f'[demo] wrote {written} annotated images, latency.png and power.png to '
        f'{out.resolve()}')


def main(argv=None) -> int:
    """Command-line entry point."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--bag', type=pathlib.Path, default=None,
                    help='rosbag2 folder (default: the bundled demo bag)')
    ap.add_argument('--out', type=pathlib.Path, default=pathlib.Path('out/demo'),
                    help='output folder for images, plot and logs (default: out/demo)')
    ap.add_argument('--rate', type=float, default=1.0, help='playback rate (1 = real time)')
    args = ap.parse_args(argv)
    bag = args.bag or paths.bags_dir() / 'demo'
    if not bag.is_dir():
        print(f'demo: bag {bag} not found; run the set-up first (./run.sh setup or '
              f'python -m edge_infer.data prepare)', file=sys.stderr)
        return 1
    summary = run_demo(bag, args.out, args.rate)
    ok = all(n['results'] > 0 for n in summary['nodes'].values())
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())

# Copyright 2026 edge_infer contributors. Apache-2.0.
"""The demo: replay the bundled camera bag through the perception container.

    python -m edge_infer.demo [--bag DIR] [--out DIR] [--rate R]

1. starts the perception container (telemetry + detector + classifier, one
   process);
2. drives the nodes to 'active' through lifecycle_msgs services;
3. replays the bag from another process (raw CDR, real time);
4. collects the result topics and /diagnostics, and prints frames published /
   processed / dropped, latency p50/p95 per model, power and energy per
   inference per model (with source and sampling rate), detections per class
   and example results per image;
5. writes annotated images, a latency plot and a power-over-time plot
   (inference windows aligned under it) to the output folder.
"""

import argparse
import collections
import pathlib
import sys
import time

import numpy as np

from . import paths, procs

RESULT_TOPICS = {'detector': '/detector/detections', 'classifier': '/classifier/classification'}
TELEMETRY = '/telemetry'
POWER_TOPIC = '/telemetry/power'


def _percentile(values, q):
    return float(np.percentile(values, q)) if len(values) else float('nan')


class Collector:
    """Subscribes to the results and diagnostics (in the demo's process)."""

    def __init__(self, node):
        from diagnostic_msgs.msg import DiagnosticArray
        from edge_infer_msgs.msg import (BackendReport, Classification, DetectionArray,
                                         EnergyRecord, PowerSample)
        from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
        self.node = node
        self.results = collections.defaultdict(list)    # node -> [msg]
        self.energy = collections.defaultdict(list)     # node -> [EnergyRecord]
        self.power = []                                 # [PowerSample]
        self.reports = {}                               # node -> latest BackendReport
        self.diag = {}                                  # node -> {key: value}
        self.last_result = time.monotonic()
        node.create_subscription(DetectionArray, RESULT_TOPICS['detector'],
                                 lambda m: self._on_result('detector', m), 100)
        node.create_subscription(Classification, RESULT_TOPICS['classifier'],
                                 lambda m: self._on_result('classifier', m), 100)
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

    def _on_diag(self, msg):
        for st in msg.status:
            name = st.name.split(':')[0].lstrip('/')
            self.diag[name] = {kv.key: kv.value for kv in st.values}
            self.diag[name]['_received_at'] = time.monotonic()


def _stamp_ns(header_or_time) -> int:
    t = getattr(header_or_time, 'stamp', header_or_time)
    return t.sec * 1_000_000_000 + t.nanosec


def run_demo(bag: pathlib.Path, out: pathlib.Path, rate: float = 1.0, log=print) -> dict:
    """Run the whole demo; return the summary as a dict."""
    import rclpy
    from rclpy.executors import SingleThreadedExecutor

    from .bag.record import bag_info
    from .nodes.lifecycle_client import LifecycleClient

    out.mkdir(parents=True, exist_ok=True)
    info = bag_info(bag)
    domain = procs.free_domain_id()
    env = procs.ros_env(domain)
    log(f"[demo] bag {bag}: {info['messages']} messages, {info['duration_s']:.1f} s, "
        f"topics {', '.join(info['topics'])}")
    log(f'[demo] ROS_DOMAIN_ID={domain}; logs in {out}')
    t_start = time.monotonic()
    container = procs.start_container(env, log_path=out / 'container.log')
    player = None
    procs.use_ros_env_here()
    rclpy.init(args=['--ros-args'], domain_id=domain)
    try:
        node = rclpy.create_node('edge_infer_demo')
        executor = SingleThreadedExecutor()
        executor.add_node(node)
        collector = Collector(node)
        lc = LifecycleClient(node, executor)
        for name in (TELEMETRY, *RESULT_TOPICS):
            lc.bring_up(f"/{name.lstrip('/')}", timeout=60.0)
        log(f'[demo] nodes active after {time.monotonic() - t_start:.1f} s; playing bag')
        player = procs.start_player(bag, env, ['--rate', str(rate),
                                               '--wait-for-subscribers', '10'],
                                    log_path=out / 'player.log')
        while player.poll() is None:
            executor.spin_once(timeout_sec=0.1)
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
    finally:
        if player is not None:
            procs.stop(player)
        code = procs.stop(container)
        rclpy.try_shutdown()
    log(f'[demo] container exited with code {code}; wall time '
        f'{time.monotonic() - t_start:.1f} s')
    player_log = (out / 'player.log').read_text(errors='replace').strip().splitlines()
    summary = _summarize(collector, info, player_log[-1] if player_log else '')
    _print_summary(summary, log)
    _write_outputs(bag, out, collector, summary, log)
    return summary


def _summarize(collector: Collector, info: dict, player_line: str) -> dict:
    s = {'player': player_line, 'nodes': {}, 'classes': collections.Counter()}
    for name in RESULT_TOPICS:
        msgs = collector.results[name]
        d = collector.diag.get(name, {})
        s['nodes'][name] = {
            'model': msgs[0].model if msgs else d.get('model', ''),
            'backend': msgs[0].backend if msgs else d.get('backend', ''),
            'received': int(d.get('received', 0)), 'processed': int(d.get('processed', 0)),
            'dropped': int(d.get('dropped', 0)), 'rejected': int(d.get('rejected', 0)),
            'results': len(msgs),
            'inference_p50': _percentile([m.inference_ms for m in msgs], 50),
            'inference_p95': _percentile([m.inference_ms for m in msgs], 95),
            'total_p50': _percentile([m.preprocess_ms + m.inference_ms + m.postprocess_ms
                                      for m in msgs], 50),
            'total_p95': _percentile([m.preprocess_ms + m.inference_ms + m.postprocess_ms
                                      for m in msgs], 95),
            'energy': _energy_summary(msgs, collector.energy[name]),
        }
    for m in collector.results['detector']:
        s['classes'].update(d.label for d in m.detections)
    s['published'] = {t: v['count'] for t, v in info['topics'].items()}
    s['power'] = _power_summary(collector.power)
    s['backends'] = {n: (r.chosen, r.reason, sum(c.status == 'ok' for c in r.candidates),
                         len(r.candidates)) for n, r in collector.reports.items()}
    return s


def _energy_summary(results, records) -> dict:
    """Energy per inference of one model from its results (and its ~/energy count)."""
    metered = [m.energy for m in results if np.isfinite(m.energy.joules)]
    if not metered:
        return {'metered': 0, 'records': len(records)}
    joules = np.array([e.joules for e in metered])
    errors = np.array([e.error_j for e in metered])
    return {'metered': len(metered), 'records': len(records),
            'source': metered[-1].source, 'measured': bool(metered[-1].measured),
            'rate_hz': float(np.median([e.sample_rate_hz for e in metered])),
            'j_p50': float(np.median(joules)), 'j_mean': float(joules.mean()),
            'err_p50': float(np.median(errors)),
            'w_mean': float(np.median([e.average_watts for e in metered]))}


def _power_summary(samples) -> dict:
    if not samples:
        return {}
    watts = np.array([p.total_watts for p in samples])
    last = samples[-1]
    return {'messages': len(samples), 'source': last.source, 'measured': last.measured,
            'rate_hz': float(np.median([p.sample_rate_hz for p in samples])),
            'w_mean': float(watts.mean()), 'w_min': float(min(p.min_watts for p in samples)),
            'w_max': float(max(p.max_watts for p in samples)),
            'energy_j': float(last.energy_j), 'elapsed_s': float(last.elapsed_s),
            'sample': last}


def _print_summary(s: dict, log) -> None:
    log('')
    log('=== edge_infer demo summary ===')
    log(f"bag player: {s['player']}")
    for topic, n in s['published'].items():
        log(f'  published on {topic}: {n}')
    width = max([20] + [len(n['backend']) + 2 for n in s['nodes'].values()])
    hdr = (f"{'node':<11}{'model':<14}{'backend':<{width}}{'recv':>6}{'proc':>6}{'drop':>6}"
           f"{'rej':>5}  {'infer p50/p95 ms':>17}  {'frame p50/p95 ms':>17}")
    log(hdr)
    log('-' * len(hdr))
    for name, n in s['nodes'].items():
        log(f"{name:<11}{n['model']:<14}{n['backend']:<{width}}{n['received']:>6}"
            f"{n['processed']:>6}{n['dropped']:>6}{n['rejected']:>5}  "
            f"{n['inference_p50']:>8.1f}/{n['inference_p95']:<8.1f}  "
            f"{n['total_p50']:>8.1f}/{n['total_p95']:<8.1f}")
    log('')
    for name, (chosen, why, ok, total) in s['backends'].items():
        log(f'backend of {name}: {chosen} ({ok} of {total} candidates usable here; '
            f'`edge_infer profile` for the table): {why}')
    p = s['power']
    log('')
    if p:
        kind = 'measured' if p['measured'] else 'ESTIMATED from CPU load, not a measurement'
        log(f"power: source '{p['source']}' ({kind}), sampled at {p['rate_hz']:.0f} Hz, "
            f"{p['messages']} PowerSample messages")
        log(f"  mean {p['w_mean']:.2f} W (min {p['w_min']:.2f}, max {p['w_max']:.2f}); "
            f"{p['energy_j']:.1f} J over {p['elapsed_s']:.1f} s")
        m = p['sample']
        rails = ', '.join(f'{r.name}={r.watts:.2f} W' for r in m.rails)
        log(f'  last PowerSample: stamp {m.header.stamp.sec}.{m.header.stamp.nanosec:09d} '
            f'source={m.source} measured={m.measured} rate={m.sample_rate_hz:.1f} Hz '
            f'n={m.n_samples} total={m.total_watts:.2f} W [{m.min_watts:.2f}, '
            f'{m.max_watts:.2f}] rails={rails} energy={m.energy_j:.2f} J over '
            f'{m.elapsed_s:.2f} s')
    else:
        log('power: no PowerSample received')
    hdr = (f"{'model':<14}{'metered':>8}  {'J/inference p50':>15}  {'mean':>8}  "
           f"{'+- err p50':>10}  {'W in run':>8}  {'source @ rate':<20}")
    log('energy per inference (window = the model run; overlapping runs share power '
        'equally):')
    log(hdr)
    log('-' * len(hdr))
    for name, n in s['nodes'].items():
        e = n['energy']
        if not e['metered']:
            log(f"{n['model']:<14}{0:>8}  (not metered)")
            continue
        log(f"{n['model']:<14}{e['metered']:>8}  {e['j_p50']:>15.4f}  {e['j_mean']:>8.4f}  "
            f"{e['err_p50']:>10.4f}  {e['w_mean']:>8.2f}  "
            f"{e['source'] + ' @ ' + format(e['rate_hz'], '.0f') + ' Hz':<20}")
    log('')
    log('detections per class (detector, all frames): ' + ', '.join(
        f'{c} {k}' for c, k in s['classes'].most_common()))


def _annotate(img, det_msg, cls_msg):
    """Draw the detector's and classifier's results with the nodes' own drawing code."""
    from .core.draw import annotate
    boxes = [(d.label, d.score, d.center_x - d.size_x / 2, d.center_y - d.size_y / 2,
              d.center_x + d.size_x / 2, d.center_y + d.size_y / 2)
             for d in (det_msg.detections if det_msg else [])]
    classes = [(f'{cls_msg.model}: {r.label}', r.score)
               for r in (cls_msg.results if cls_msg else [])]
    return annotate(img, boxes, classes, top_k=1)


def _write_outputs(bag, out: pathlib.Path, collector: Collector, summary: dict, log) -> None:
    import cv2
    from rclpy.serialization import deserialize_message
    from sensor_msgs.msg import Image

    from .bag.record import iter_bag_frames
    from .core.image import from_raw

    det = {_stamp_ns(m.header): m for m in collector.results['detector']}
    cls = {_stamp_ns(m.header): m for m in collector.results['classifier']}
    frames = [(stamp, raw) for topic, _, stamp, raw in iter_bag_frames(bag)
              if not topic.endswith('/compressed')]
    # Examples: every 50th video frame with results, and every still photo
    # (frames whose size differs from the first frame's).
    first_size = None
    examples = []
    for i, (stamp, raw) in enumerate(frames):
        msg = deserialize_message(raw, Image)
        size = (msg.width, msg.height)
        first_size = first_size or size
        if (size != first_size or i % 50 == 0) and (stamp in det or stamp in cls):
            examples.append((i, stamp, msg))
    log('')
    log('examples (frame: detections | top class):')
    for i, stamp, msg in examples:
        d, c = det.get(stamp), cls.get(stamp)
        dets = ', '.join(f'{x.label} {x.score:.2f}' for x in (d.detections[:6] if d else []))
        more = f' (+{len(d.detections) - 6})' if d and len(d.detections) > 6 else ''
        top = f'{c.results[0].label} {c.results[0].score:.2f}' if c and c.results else '-'
        log(f'  #{i:<4} {msg.width}x{msg.height}: {dets or "nothing"}{more} | {top}')
        frame = from_raw(msg.encoding, msg.height, msg.width, msg.step, msg.data)
        img = cv2.cvtColor(frame.pixels, cv2.COLOR_RGB2BGR)
        cv2.imwrite(str(out / f'frame_{i:04d}.png'), _annotate(img, d, c))
    _plot_latency(out / 'latency.png', collector)
    _plot_power(out / 'power.png', collector)
    log('')
    log(f'[demo] wrote {len(examples)} annotated images, latency.png and power.png to '
        f'{out.resolve()}')


def _plot_latency(path: pathlib.Path, collector: Collector) -> None:
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4))
    for name, msgs in collector.results.items():
        if not msgs:
            continue
        t0 = _stamp_ns(msgs[0].header)
        t = [(_stamp_ns(m.header) - t0) / 1e9 for m in msgs]
        inf = [m.inference_ms for m in msgs]
        tot = [m.preprocess_ms + m.inference_ms + m.postprocess_ms for m in msgs]
        ax1.plot(t, tot, '.', ms=3, label=f'{msgs[0].model} frame total')
        ax1.plot(t, inf, '-', lw=0.8, label=f'{msgs[0].model} inference')
        ax2.hist(tot, bins=40, alpha=0.6, label=msgs[0].model)
    ax1.set_xlabel('frame stamp (s from first result)')
    ax1.set_ylabel('ms')
    ax1.set_title('per-frame latency in the container')
    ax1.legend(fontsize=7)
    ax2.set_xlabel('frame total (ms)')
    ax2.set_ylabel('frames')
    ax2.set_title('latency distribution')
    ax2.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def _plot_power(path: pathlib.Path, collector: Collector) -> None:
    """Power over time, with each model's inference windows drawn under it."""
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    if not collector.power:
        return
    t0 = _stamp_ns(collector.power[0].header)
    fig, (ax, ax_e) = plt.subplots(2, 1, figsize=(11, 6), sharex=True,
                                   gridspec_kw={'height_ratios': [3, 1]})
    t = [(_stamp_ns(p.header) - t0) / 1e9 for p in collector.power]
    ax.plot(t, [p.total_watts for p in collector.power], '-', lw=1, color='k',
            label='total (mean per message)')
    ax.fill_between(t, [p.min_watts for p in collector.power],
                    [p.max_watts for p in collector.power], color='0.8',
                    label='min-max of internal samples')
    src = collector.power[-1]
    kind = 'measured' if src.measured else 'ESTIMATED'
    ax.set_title(f"board power, source '{src.source}' ({kind}), "
                 f'{src.sample_rate_hz:.0f} Hz internal sampling')
    ax.set_ylabel('W')
    ax.legend(fontsize=7, loc='upper right')
    colours = ('tab:blue', 'tab:orange', 'tab:green', 'tab:red')
    for row, (name, recs) in enumerate(collector.energy.items()):
        c = colours[row % len(colours)]
        spans = [((_stamp_ns(r.window_start) - t0) / 1e9, r.latency_ms / 1e3)
                 for r in recs if _stamp_ns(r.window_start) > 0]
        if spans:
            ax_e.broken_barh(spans, (row + 0.1, 0.8), color=c)
        ax_e.text(0, row + 0.5, f' {recs[0].model if recs else name}', va='center',
                  fontsize=7)
    ax_e.set_yticks([])
    ax_e.set_xlabel('time (s from first power message)')
    ax_e.set_title('inference windows (metered)', fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


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

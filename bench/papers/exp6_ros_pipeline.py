# Copyright 2026 edge_infer contributors. Apache-2.0.
"""ROS pipeline cost: frame in to result out through the perception container vs bare inference.

    ./run.sh exec python bench/papers/exp6_ros_pipeline.py [--models nanodet mobilenet_v2]
        [--backend onnxruntime/cpu/t1] [--frames 60] [--handoff-frames 150] [--quick]
        [--executors events single]

1. Node overhead. Raw frames of the demo bag (the serialized
   sensor_msgs/Image bytes, as ``ros2 bag play`` sends them) are published
   one at a time to a perception container hosting one PerceptionNode (the
   real rclpy lifecycle node, autostarted), and the time from ``publish`` to
   the result message's callback is taken per frame (closed loop: the next
   frame goes out when the previous result is in, so no frame waits in a
   queue or is dropped). Beside each ROS frame the same frame runs through
   bare ``Model.infer`` (pre-processing, run, decoding) on the same backend
   (forced by name, e.g. ``onnxruntime/cpu/t1``: same library, same thread
   count), frame by frame interleaved so noise hits both alike.
   Node overhead ratio = ROS end-to-end / bare, per frame and of the medians.
   Container variants:
   - ``in-process, defaults``: the container and the measuring node in one
     process and one executor; telemetry node, energy metering
     and diagnostics on (config/perception.yaml's defaults);
   - ``in-process, lean``: no telemetry node, energy metering and
     diagnostics off (what the node costs without telemetry);
   - ``separate process``: the container started as ``perception_container``
     is in production (procs.start_container), the camera in this process:
     adds the inter-process transport (Fast DDS shared memory).
   Every variant runs with drift re-evaluation off (drift_threshold 0), so a
   background re-profile cannot land inside the measurement. Each variant runs
   once per ROS executor named by ``--executors`` (the container's
   ``executor`` parameter: ``events`` = rclpy's EventsExecutor, the default;
   ``single`` = SingleThreadedExecutor; in-process, the measuring node shares
   it). The overhead (ROS p50 - bare p50) is split by the node's stage
   medians (see :func:`breakdown`): in the node beyond the model, queued
   (callback to worker thread), transport + dispatch (the rest).
2. Hand-off at 30 Hz: a camera node publishes sensor_msgs/Image messages of
   the bag's size (768x576 rgb8, the bag's pixels) from a 30 Hz timer, and a
   subscriber node in the same process and the same executor takes them;
   latency = publish call to the subscriber's callback, per frame. Once with a
   raw (serialized bytes) subscription as PerceptionNode uses, once
   deserialized into a sensor_msgs/Image.

rclpy has no intra-process transport (rclcpp's ``use_intra_process_comms``
does not exist in Python), so none is used: every message, even between
nodes of one process, is serialized and goes through the RMW.
"""

import argparse
import math
import os
import pathlib
import shutil
import sys
import tempfile
import time
from typing import Callable, Dict, List, Optional

import benchlib
from edge_infer import paths, procs
import numpy as np
import yaml

TOPIC = '/exp6/image_raw'
VARIANTS = ('in-process, defaults', 'in-process, lean', 'separate process')
NODE_NAMES = {'detection': 'detector', 'classification': 'classifier'}


def stats(values) -> Dict[str, float]:
    """Return p50, p95, min, max, n (of the finite values) and lost (NaN count)."""
    v = np.asarray([x for x in values if x is not None], dtype=float)
    ok = v[np.isfinite(v)]
    if ok.size == 0:
        return {'p50': math.nan, 'p95': math.nan, 'min': math.nan, 'max': math.nan, 'n': 0,
                'lost': int(v.size)}
    return {'p50': float(np.percentile(ok, 50)), 'p95': float(np.percentile(ok, 95)),
            'min': float(ok.min()), 'max': float(ok.max()), 'n': int(ok.size),
            'lost': int(v.size - ok.size)}


def bag_messages(n: int) -> List[bytes]:
    """Return the serialized sensor_msgs/Image messages of the demo bag's first n frames."""
    from edge_infer.core.bag_read import iter_bag_frames
    out = []
    for _, msgtype, _, raw in iter_bag_frames(paths.bags_dir() / 'demo'):
        if msgtype.endswith('/Image'):
            out.append(raw)
            if len(out) >= n:
                break
    if not out:
        raise SystemExit(f"no sensor_msgs/Image in {paths.bags_dir() / 'demo'}")
    return out


def decode(raw: bytes):
    """Return (stamp key, Frame) of a serialized Image, pixels viewed in place (as the node)."""
    from edge_infer.core.cdr import parse_image
    from edge_infer.core.image import from_raw
    f = parse_image(raw)
    return (f.sec, f.nanosec), from_raw(f.encoding, f.height, f.width, f.step, f.data,
                                        f.is_bigendian)


def bare_model(model: str, backend_name: str):
    """Open ``model`` on the backend candidate named ``backend_name`` (as the node would)."""
    from edge_infer.backends.manager import shared_manager
    from edge_infer.backends.runtime import Runtime
    from edge_infer.core.model import Model, model_file
    from edge_infer.core.registry import load_registry
    spec = load_registry(paths.config_dir() / 'models.yaml')[model]
    path = model_file(spec, paths.models_dir())
    mgr = shared_manager(Runtime(), log=lambda s: None)
    by_name = {b.name: b for b in mgr.candidates(spec, path)}
    if backend_name not in by_name:
        raise SystemExit(f"backend '{backend_name}' is not a candidate here "
                         f"(candidates: {', '.join(sorted(by_name))})")
    return Model(spec, by_name[backend_name], paths.models_dir(), verify_checksum=False)


def spin_until(executor, pred: Callable[[], bool], timeout: float) -> bool:
    """Spin ``executor`` until ``pred()`` or ``timeout`` seconds; return ``pred()``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return True
        executor.spin_once(timeout_sec=0.01)
    return bool(pred())


def params_file(folder: pathlib.Path, model: str, backend: str, variant: str,
                ros_executor: str = 'events') -> pathlib.Path:
    """Write the container's parameters for one model and variant; return the file."""
    from edge_infer.core.registry import load_registry
    spec = load_registry(paths.config_dir() / 'models.yaml')[model]
    node = NODE_NAMES[spec.task]
    lean = variant == 'in-process, lean'
    params = yaml.safe_load((paths.config_dir() / 'perception.yaml').read_text())
    params['perception_container']['ros__parameters'].update(
        {'nodes': [node], 'autostart': True, 'telemetry': '' if lean else 'telemetry',
         'ros_executor': ros_executor})
    section = params.setdefault(node, {'ros__parameters': {}})['ros__parameters']
    section.update({'model': model, 'image_topic': TOPIC, 'transport': 'raw',
                    'output_topic': '/exp6/result', 'backend': backend, 'drift_threshold': 0.0})
    if lean:
        section.update({'energy_metering': False, 'diagnostics_period': 0.0})
    path = folder / f"params_{model}_{variant.split(',')[0].replace(' ', '_')}.yaml"
    path.write_text(yaml.safe_dump(params))
    return path


def result_type(model: str):
    """Return the message class of ``model``'s results."""
    from edge_infer.core.registry import load_registry
    from edge_infer_msgs.msg import Classification, DetectionArray
    spec = load_registry(paths.config_dir() / 'models.yaml')[model]
    return DetectionArray if spec.task == 'detection' else Classification


def closed_loop(executor, pub, got: Dict, raws: List[bytes], bare=None, warmup: int = 3,
                timeout: float = 10.0) -> Dict[str, List[float]]:
    """Publish each frame, wait for its result; beside it, time bare inference on the frame.

    ``got`` is filled by the result subscription: stamp key -> perf_counter.
    Returns ``ros_ms`` (publish to result callback) and ``bare_ms`` per frame
    (NaN where no result came within ``timeout``); the first ``warmup``
    frames are run and dropped.
    """
    ros_ms, bare_ms = [], []
    for i, raw in enumerate(list(raws[:warmup]) + list(raws)):
        key, frame = decode(raw)
        b = math.nan
        if bare is not None:
            t = time.perf_counter()
            bare.infer(frame)
            b = (time.perf_counter() - t) * 1e3
        got.clear()
        t0 = time.perf_counter()
        pub.publish(raw)
        ok = spin_until(executor, lambda: key in got, timeout)
        if i >= warmup:
            ros_ms.append((got[key] - t0) * 1e3 if ok else math.nan)
            bare_ms.append(b)
    return {'ros_ms': ros_ms, 'bare_ms': bare_ms}


def stage_medians(msg, model: str) -> Dict:
    """Return {'stages': {stage: p50 ms}} from ``model``'s node status in a DiagnosticArray."""
    for st in msg.status:
        values = {kv.key: kv.value for kv in st.values}
        if values.get('model') == model and values.get('stage_p50_ms'):
            pairs = (item.rsplit(' ', 1) for item in values['stage_p50_ms'].split(', '))
            return {'stages': {k: float(v) for k, v in pairs}}
    return {}


def _camera_qos():
    """Return the QoS the bag's camera offered (reliable, keep last 10), as ros2 bag play."""
    from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy
    return QoSProfile(depth=10, history=HistoryPolicy.KEEP_LAST,
                      reliability=ReliabilityPolicy.RELIABLE)


def _wait_first_result(executor, pub, got: Dict, raw: bytes, timeout: float) -> bool:
    """Publish ``raw`` every 0.25 s until a result comes (subscription matched, node active)."""
    key, _ = decode(raw)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got.clear()
        pub.publish(raw)
        if spin_until(executor, lambda: key in got, 0.25):
            return True
    return False


def run_variant(variant: str, model: str, backend: str, raws: List[bytes], folder, bare,
                log=print, ready_timeout: float = 90.0,
                ros_executor: str = 'events') -> Dict[str, List[float]]:
    """Bring the container up for one model and variant, measure closed-loop, tear it down."""
    from diagnostic_msgs.msg import DiagnosticArray
    import rclpy
    from sensor_msgs.msg import Image
    from edge_infer.nodes.container import new_ros_executor, PerceptionContainer
    domain = procs.free_domain_id()
    pfile = params_file(folder, model, backend, variant, ros_executor)
    in_process = variant.startswith('in-process')
    proc = container = None
    rclpy.init(args=['--ros-args', '--params-file', str(pfile), '--log-level', 'warn']
               if in_process else None,
               domain_id=domain)
    executor = new_ros_executor(ros_executor)     # as the container's nodes (in-process: shared)
    node = rclpy.create_node('exp6_bench')
    executor.add_node(node)
    got: Dict = {}
    try:
        if in_process:
            container = PerceptionContainer(executor)
        else:
            proc = procs.start_container(procs.ros_env(domain), pfile,
                                         log_path=folder / f'container_{model}.log')
        node.create_subscription(result_type(model), '/exp6/result',
                                 lambda m: got.setdefault((m.header.stamp.sec,
                                                           m.header.stamp.nanosec),
                                                          time.perf_counter()), 10)
        pub = node.create_publisher(Image, TOPIC, _camera_qos())
        diag: Dict = {}
        node.create_subscription(DiagnosticArray, '/diagnostics',
                                 lambda m: diag.update(stage_medians(m, model)), 10)
        t = time.monotonic()
        if not _wait_first_result(executor, pub, got, raws[0], ready_timeout):
            tail = ''
            if proc is not None:
                tail = (folder / f'container_{model}.log').read_text(errors='replace')[-1500:]
            raise RuntimeError(f'{variant}: no result from the container within '
                               f'{ready_timeout:.0f} s {tail}')
        log(f'  {variant}: container ready in {time.monotonic() - t:.1f} s')
        out = closed_loop(executor, pub, got, raws, bare)
        if container is not None:       # where the node's own time went, per frame
            out['stages'] = container.perception[0].stats.stage_medians()
        else:                           # the same figures, from the node's /diagnostics
            diag.clear()
            spin_until(executor, lambda: 'stages' in diag, 3.0)
            out['stages'] = diag.get('stages', {})
        log(f'  {variant}: node stages p50 ms: ' + ', '.join(
            f'{k} {v:.2f}' for k, v in out['stages'].items()))
        return out
    finally:
        if container is not None:
            container.shutdown()
        if proc is not None:
            procs.stop(proc)
        executor.shutdown()
        node.destroy_node()
        rclpy.try_shutdown()


def handoff(frames: int, rate_hz: float = 30.0, image: Optional[bytes] = None,
            width: int = 768, height: int = 576, raw: bool = True,
            domain: Optional[int] = None, drain_s: float = 1.0,
            ros_executor: str = 'events') -> Dict[str, object]:
    """Publish ``frames`` Images at ``rate_hz`` to a subscriber in the same process and executor.

    ``image``: a serialized sensor_msgs/Image whose pixels to send (else zeros
    of ``width`` x ``height`` rgb8). ``raw``: the subscription takes serialized
    bytes (as PerceptionNode) instead of a deserialized message. Returns
    ``latency_ms`` (one per published frame, NaN if it never arrived),
    ``publish_ms`` (time inside ``publish``), ``rate_hz`` achieved, ``bytes``
    per message and the RMW.
    """
    import rclpy
    from rclpy.qos import qos_profile_sensor_data
    from rclpy.utilities import get_rmw_implementation_identifier
    from sensor_msgs.msg import Image
    from edge_infer.core.cdr import parse_image
    from edge_infer.nodes.container import new_ros_executor
    msg = Image(encoding='rgb8')
    if image is not None:
        f = parse_image(image)
        msg.height, msg.width, msg.step, msg.encoding = f.height, f.width, f.step, f.encoding
        msg.data = bytes(f.data)
    else:
        msg.height, msg.width, msg.step = height, width, width * 3
        msg.data = bytes(height * width * 3)
    ctx = rclpy.Context()
    rclpy.init(context=ctx, domain_id=procs.free_domain_id() if domain is None else domain)
    t_pub = [math.nan] * frames
    t_recv = [math.nan] * frames
    publish_ms: List[float] = []
    seen = {'warmup': 0}
    try:
        cam = rclpy.create_node('exp6_camera', context=ctx)
        sub_node = rclpy.create_node('exp6_consumer', context=ctx)
        executor = new_ros_executor(ros_executor, context=ctx)
        executor.add_node(cam)
        executor.add_node(sub_node)
        pub = cam.create_publisher(Image, '/exp6/handoff', _camera_qos())

        def on_msg(m):
            now = time.perf_counter()
            seq = parse_image(m).sec if raw else m.header.stamp.sec
            if seq < 0:
                seen['warmup'] += 1
            elif seq < frames and math.isnan(t_recv[seq]):
                t_recv[seq] = now
        sub_node.create_subscription(Image, '/exp6/handoff', on_msg, qos_profile_sensor_data,
                                     raw=raw)
        # matched both ways and delivering: warm-up frames (negative stamps) until one arrives
        deadline = time.monotonic() + 10.0
        while not seen['warmup'] and time.monotonic() < deadline:
            msg.header.stamp.sec = -1
            pub.publish(msg)
            spin_until(executor, lambda: seen['warmup'] > 0, 0.1)
        if not seen['warmup']:
            raise RuntimeError('hand-off: the subscriber never received a frame')
        state = {'k': 0}

        def tick():
            k = state['k']
            if k >= frames:
                return
            msg.header.stamp.sec = k
            t = time.perf_counter()
            t_pub[k] = t
            pub.publish(msg)
            publish_ms.append((time.perf_counter() - t) * 1e3)
            state['k'] = k + 1
        t_start = time.perf_counter()
        cam.create_timer(1.0 / rate_hz, tick)
        spin_until(executor, lambda: state['k'] >= frames, frames / rate_hz + 10.0)
        t_end = time.perf_counter()
        spin_until(executor, lambda: not any(math.isnan(t) for t in t_recv), drain_s)
        rmw = get_rmw_implementation_identifier()
        executor.shutdown()
        cam.destroy_node()
        sub_node.destroy_node()
    finally:
        rclpy.try_shutdown(context=ctx)
    lat = [(r - p) * 1e3 for p, r in zip(t_pub, t_recv)]
    sent = state['k']
    return {'latency_ms': lat, 'publish_ms': publish_ms,
            'rate_hz': (sent - 1) / (t_pub[sent - 1] - t_pub[0]) if sent > 1 else math.nan,
            'duration_s': t_end - t_start, 'bytes': len(msg.data), 'rmw': rmw, 'raw': raw}


NODE_OWN = ('parse', 'run_other', 'build_msg', 'energy', 'publish')


def breakdown(stages: Optional[Dict[str, float]], overhead_ms: float) -> Dict[str, float]:
    """Split the overhead (ROS p50 - bare p50) by the node's stage medians.

    ``in_node_ms``: the node's own per-frame work beyond the model (CDR parse,
    the run-time choice and energy window around the run, message building,
    the result's energy, publish); ``queued_ms``: the subscription callback to
    the inference worker; ``transport_ms``: the rest, i.e. both DDS hops (the
    frame in, the result out) and the executors' dispatch. Medians do not add
    exactly: the split is approximate.
    """
    if not stages:
        return {}
    own = sum(stages.get(k, 0.0) for k in NODE_OWN)
    queued = stages.get('queued', math.nan)
    return {'in_node_ms': own, 'queued_ms': queued,
            'transport_ms': overhead_ms - own - queued}


def plot_data(data: Dict) -> Callable:
    """Return a plot function over the per-frame figures kept in ``data``."""
    def plot(plt, rows) -> None:
        fig, axes = plt.subplots(1, 2, figsize=(11, 4))
        ax = axes[0]
        labels, series = [], []
        for (model, variant), d in data.get('overhead', {}).items():
            labels += [f'{model}\nbare', f'{model}\n{variant}']
            series += [[x for x in d['bare_ms'] if math.isfinite(x)],
                       [x for x in d['ros_ms'] if math.isfinite(x)]]
        if series:
            ax.boxplot(series, whis=(5, 95), showfliers=False)
            ax.set_xticks(range(1, len(labels) + 1))
            ax.set_xticklabels(labels, fontsize=6, rotation=60)
        ax.set_ylabel('ms per frame (box: p25-p75, whiskers p5-p95)')
        ax.set_title('frame in -> result out vs bare Model.infer', fontsize=8)
        ax = axes[1]
        for label, d in data.get('handoff', {}).items():
            v = np.sort([x for x in d['latency_ms'] if math.isfinite(x)])
            if v.size:
                ax.plot(v, np.arange(1, v.size + 1) / v.size, label=label)
        ax.set_xscale('log')
        ax.set_xlabel('publish -> callback, ms (30 Hz, one process, one executor)')
        ax.set_ylabel('fraction of frames')
        ax.legend(fontsize=7)
    return plot


PROFILE_ENV = 'FASTRTPS_DEFAULT_PROFILES_FILE'


def main(argv=None) -> int:
    """Run both measurements and write the results."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    benchlib.common_args(ap)
    ap.add_argument('--models', nargs='*', default=['nanodet', 'mobilenet_v2'])
    ap.add_argument('--backend', default='onnxruntime/cpu/t1',
                    help='backend candidate forced on the node and used bare (same threads)')
    ap.add_argument('--variants', nargs='*', default=list(VARIANTS), choices=VARIANTS)
    ap.add_argument('--frames', type=int, default=60, help='frames per model and variant')
    ap.add_argument('--handoff-frames', type=int, default=150, help='frames per hand-off run')
    ap.add_argument('--rate', type=float, default=30.0, help='hand-off rate, Hz')
    ap.add_argument('--ros-executors', nargs='*', default=['events', 'single'],
                    choices=['events', 'single'],
                    help="rclpy executors to compare (the container's 'ros_executor' parameter)")
    args = ap.parse_args(argv)
    if args.quick:
        args.frames, args.handoff_frames = 8, 30
    procs.use_ros_env_here()
    res = benchlib.Results('exp6_ros_pipeline', 'ROS pipeline cost: container vs bare inference',
                           "the brief's ROS expectations (lifecycle nodes in one container, "
                           'sensor-data QoS, newest-frame policy); no source paper measured it',
                           args.machine, args.out)
    res.power = 'not used (latency only; energy per inference: see exp4 / the nodes)'
    load_start = os.getloadavg()
    raws = bag_messages(args.frames)
    _, first = decode(raws[0])
    folder = pathlib.Path(tempfile.mkdtemp(prefix='exp6_'))
    data: Dict = {'overhead': {}, 'handoff': {}}
    summaries = []
    failed = []
    for model in args.models:
        bare = bare_model(model, args.backend)
        print(f'{model} on {bare.backend_name}: {len(raws)} bag frames '
              f'{first.width}x{first.height}')
        try:
            for variant, kind in [(v, k) for k in args.ros_executors for v in args.variants]:
                try:
                    d = run_variant(variant, model, args.backend, raws, folder, bare,
                                    ros_executor=kind)
                except Exception as exc:  # one variant failing must not lose the others
                    failed.append(f'{model} / {variant} / {kind}: {type(exc).__name__}: {exc}')
                    print(f'  {variant}: FAILED {failed[-1]}', file=sys.stderr)
                    continue
                data['overhead'][(model, f'{variant}, {kind}')] = d
                for i, (r, b) in enumerate(zip(d['ros_ms'], d['bare_ms'])):
                    res.add(row='frame', section='overhead', model=model, variant=variant,
                            ros_executor=kind, frame=i, ros_ms=r, bare_ms=b, ratio=r / b)
                ros, b = stats(d['ros_ms']), stats(d['bare_ms'])
                per = stats([r / x for r, x in zip(d['ros_ms'], d['bare_ms'])])
                row = {'row': 'summary', 'section': 'node overhead', 'model': model,
                       'variant': variant, 'ros_executor': kind, 'backend': bare.backend_name,
                       'n': ros['n'],
                       'lost': ros['lost'], 'p50': ros['p50'], 'p95': ros['p95'],
                       'min': ros['min'], 'max': ros['max'], 'bare_p50': b['p50'],
                       'bare_p95': b['p95'], 'bare_min': b['min'], 'bare_max': b['max'],
                       'ratio_p50': ros['p50'] / b['p50'], 'ratio_per_frame_p50': per['p50'],
                       'ratio_per_frame_p95': per['p95'], 'overhead_ms_p50': ros['p50'] - b['p50'],
                       'overhead_ms_per_frame_p50': stats(
                           [r - x for r, x in zip(d['ros_ms'], d['bare_ms'])])['p50']}
                row.update(breakdown(d.get('stages'), row['overhead_ms_p50']))
                summaries.append(res.add(**row))
                print(f"  {variant:<22} {kind:<6} ROS p50 {ros['p50']:6.1f} p95 {ros['p95']:6.1f} "
                      f"min {ros['min']:6.1f} max {ros['max']:6.1f} ms | bare p50 "
                      f"{b['p50']:6.1f} p95 {b['p95']:6.1f} ms | x{row['ratio_p50']:.3f} "
                      f"(+{row['overhead_ms_p50']:.1f} ms; per frame p50 "
                      f"+{row['overhead_ms_per_frame_p50']:.2f} ms) lost {ros['lost']}")
        finally:
            bare.close()
    rmw = ''
    for raw_sub, kind in [(r, k) for k in args.ros_executors for r in (True, False)]:
        label = 'raw subscription (as PerceptionNode)' if raw_sub else 'deserialized Image'
        h = handoff(args.handoff_frames, args.rate, image=raws[0], raw=raw_sub,
                    ros_executor=kind)
        rmw = h['rmw']
        data['handoff'][f'{label}, {kind}'] = h
        for i, v in enumerate(h['latency_ms']):
            res.add(row='frame', section='handoff', variant=label, ros_executor=kind, frame=i,
                    ros_ms=v)
        s, p = stats(h['latency_ms']), stats(h['publish_ms'])
        row = {'row': 'summary', 'section': f'hand-off {args.rate:g} Hz', 'model': '-',
               'variant': label, 'ros_executor': kind, 'backend': f"{h['bytes']} B/msg",
               'n': s['n'],
               'lost': s['lost'], 'p50': s['p50'], 'p95': s['p95'], 'min': s['min'],
               'max': s['max'], 'publish_p50': p['p50'], 'rate_achieved_hz': h['rate_hz']}
        summaries.append(res.add(**row))
        print(f"hand-off {label:<38} {kind:<6} p50 {s['p50']:.2f} p95 {s['p95']:.2f} "
              f"min {s['min']:.2f} max {s['max']:.2f} ms, lost {s['lost']}/"
              f"{len(h['latency_ms'])}, publish() p50 {p['p50']:.2f} ms, "
              f"{h['rate_hz']:.1f} Hz achieved")
    res.note(f'Node overhead: closed loop, one frame in flight; ROS = pub.publish(serialized '
             f'bag Image) -> result callback in this process (perf_counter); bare = '
             f'Model.infer(frame) on a Model opened on the same backend candidate '
             f'({args.backend}); interleaved frame by frame; {args.frames} bag frames per '
             f'model and variant after 3 warm-up frames. ratio p50 = ROS p50 / bare p50; '
             f'per-frame ratio = ROS_i / bare_i over the same frame; overhead per frame = '
             f'median of ROS_i - bare_i (less noisy than the difference of medians).')
    res.note('ROS end-to-end includes: CDR parse (pixels viewed in place), the energy window '
             '(defaults variant: the run marked; the meter integrates it on its own thread '
             'and its EnergyRecord follows on ~/energy), result message building, '
             'publish, DDS delivery and the executor waking the callback.')
    res.note(f'Hand-off: {args.handoff_frames} frames at {args.rate:g} Hz from a timer, '
             f'{first.width}x{first.height} rgb8 (the bag frame), publisher reliable depth 10 '
             '(as the bag offers), subscriber sensor-data QoS (as PerceptionNode); camera and '
             'consumer nodes in one process, one executor of the kind named; latency = publish() '
             'call to the callback; lost = frames that never arrived.')
    res.note(f'Intra-process comms: not used, and not available: rclpy has no intra-process '
             f'transport, so in one process a message is still serialized and handed through '
             f'the RMW ({rmw}, profile {benchlib.shown_path(os.environ.get(PROFILE_ENV, ""))}). '
             f'The container shares one process for the shared executor, not for transport.')
    for model, kind in [(m, k) for m in args.models for k in args.ros_executors]:
        by = {r['variant']: r for r in summaries if r['section'] == 'node overhead'
              and r['model'] == model and r['ros_executor'] == kind}
        if 'in-process, defaults' in by and 'in-process, lean' in by:
            diff = by['in-process, defaults']['p50'] - by['in-process, lean']['p50']
            res.note(f'{model}, {kind}: defaults - lean = {diff:.1f} ms at p50: the telemetry '
                     'node and energy metering (the result never waits for a power sample: '
                     'its EnergyRecord follows on ~/energy, bench/product/energy_wait.py).')
    res.note('Load average (1, 5, 15 min) at the start: {:.2f} {:.2f} {:.2f}; at the end: '
             '{:.2f} {:.2f} {:.2f} (this run itself keeps about 1-2 busy).'.format(
                 *load_start, *os.getloadavg()))
    for f in failed:
        res.note(f'FAILED: {f}')
    if failed:
        print(f'container parameters and logs kept in {folder}', file=sys.stderr)
    else:
        shutil.rmtree(folder, ignore_errors=True)
    columns = ['section', 'model', 'variant', 'ros_executor', 'backend', 'n', 'lost', 'p50',
               'p95', 'min', 'max', 'bare_p50', 'bare_p95', 'bare_min', 'bare_max', 'ratio_p50',
               'ratio_per_frame_p50', 'ratio_per_frame_p95', 'overhead_ms_p50',
               'overhead_ms_per_frame_p50', 'in_node_ms',
               'queued_ms', 'transport_ms', 'publish_p50']
    headers = ['section', 'model', 'variant', 'ros_executor', 'backend', 'frames', 'lost',
               'p50 ms', 'p95 ms', 'min ms', 'max ms', 'bare p50', 'bare p95', 'bare min',
               'bare max',
               'ROS/bare (p50s)', 'per-frame ratio p50', 'per-frame ratio p95',
               'overhead ms (p50s)', 'overhead ms (per-frame p50)', 'of which in node',
               'of which queued',
               'of which transport + dispatch', 'publish() p50 ms']
    res.write(columns, headers, plot=plot_data(data), md_rows=summaries)
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())

# Copyright 2026 edge_infer contributors. Apache-2.0.
"""A robot's day: the default graph for N minutes under seeded faults, every frame counted.

    ./run.sh exec python bench/product/robot_day.py [--minutes 60] [--seed 1] [--rate 5]

``edge_infer bringup`` runs the default graph (config/perception.yaml: four
models in one container, tracking on the detector, depth beside it) with
``EDGE_INFER_HOME`` on a small tmpfs of its own (a copy of the models and
the cache). This script is the robot around it: it plays OpenCV's
pedestrian video, looped, at ``--rate`` Hz to each node's own camera topic
(raw for the detector and pose, JPEG for the classifier and segmenter: as
an image_transport camera offers both), the depth bag's depth and
CameraInfo beside the detector's frames, and runs a fault timetable fixed
by ``--seed`` (robot_day_faults.py): the camera silent, 5 -> 30 Hz, a CPU
hog, lifecycle cycles, a depth pause, malformed frames, the container
killed with -9 (bring-up's supervision restarts it), the profile cache
truncated before a restart, then read-only, then the home's tmpfs full.

From outside the container it records every frame sent, every result,
each node's /diagnostics counters, and every 10 s the container's RSS,
threads and open files and /dev/shm. robot_day_ledger.py accounts for the
frames. Tables through benchlib: ``robot_day.md`` (each fault: when, how
long until every node's results were back, the longest gap), ``robot_day_nodes``
(each node's ledger) and ``robot_day_samples`` (the 10 s samples). Needs
root for the tmpfs (without it the home is a plain folder and the
full-disk and read-only faults are not run). ``--minutes 5`` is the robot
stage's version: ``--check`` exits 1 when something is wrong rather than
slow (a frame unaccounted, a crash not induced, a fault that could not be
inflicted, a node whose results never came back); the time goals are in the
table, not in the exit code (they belong to benchmarks, not to CI).
"""

import argparse
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import threading
import time

from edge_infer import paths, procs, shm
import numpy as np
import robot_day_faults as faults       # beside this file (sys.path[0])
import robot_day_ledger as ledger
import yaml

try:
    import benchlib
except ImportError:     # run as a file: bench/ is not on the path
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
    import benchlib

NODES = {   # node -> (transport, result topic, message type name)
    'detector': ('raw', 'detections', 'DetectionArray'),
    'classifier': ('compressed', 'classification', 'Classification'),
    'pose': ('raw', 'poses', 'PoseDetectionArray'),
    'segmenter': ('compressed', 'segmentation', 'Segmentation'),
}
DEPTH_TOPIC, INFO_TOPIC = '/day/depth/image_raw', '/day/depth/camera_info'
SAMPLE_S = 10.0
FOOTAGE_FRAMES = 300


def camera_topic(node: str) -> str:
    """Return ``node``'s own camera topic (raw; a compressed node adds /compressed)."""
    return f'/day/{node}/image_raw'


def params_file(folder: pathlib.Path) -> pathlib.Path:
    """Write perception.yaml with each node on its own camera and depth on the detector."""
    params = yaml.safe_load((paths.config_dir() / 'perception.yaml').read_text())
    for node, (transport, _, _) in NODES.items():
        p = params[node]['ros__parameters']
        p['image_topic'], p['transport'] = camera_topic(node), transport
    det = params['detector']['ros__parameters']
    det['depth_topic'], det['camera_info_topic'] = DEPTH_TOPIC, INFO_TOPIC
    out = folder / 'perception.yaml'
    out.write_text(yaml.safe_dump(params))
    return out


def make_home(work: pathlib.Path, size_mb: int, log=print) -> tuple:
    """Return (home, mounted): a tmpfs of ``size_mb`` (root) holding models and the cache."""
    home = work / 'home'
    home.mkdir()
    mounted = False
    if os.geteuid() == 0:
        rc = subprocess.run(['mount', '-t', 'tmpfs', '-o', f'size={size_mb}M', 'tmpfs',
                             str(home)], capture_output=True, text=True)
        mounted = rc.returncode == 0
        if not mounted:
            log(f'[day] no tmpfs ({rc.stderr.strip()}): the home is a plain folder')
    src = paths.data_home()
    shutil.copytree(src / 'models', home / 'models')
    (home / 'cache').mkdir()
    for item in (src / 'cache').iterdir():
        if item.name in ('variants', 'ncnn'):
            shutil.copytree(item, home / 'cache' / item.name)
        elif item.suffix == '.json':
            shutil.copy2(item, home / 'cache' / item.name)
    return home, mounted


def footage(count: int) -> list:
    """Return JPEG bytes of the video's first ``count`` frames (the real footage, looped)."""
    import cv2
    cap = cv2.VideoCapture(str(paths.cache_dir() / 'vtest.avi'))
    out = []
    while len(out) < count:
        ok, bgr = cap.read()
        if not ok:
            break
        out.append(cv2.imencode('.jpg', bgr, [cv2.IMWRITE_JPEG_QUALITY, 85])[1].tobytes())
    if not out:
        raise SystemExit('no footage: run `edge_infer prepare` first (vtest.avi)')
    return out


def depth_messages():
    """Return (depth Image, CameraInfo) from the depth bag (their stamps set per frame)."""
    from edge_infer.core.bag_read import iter_bag_frames
    from rclpy.serialization import deserialize_message
    from sensor_msgs.msg import CameraInfo, Image
    found = {}
    for topic, _, _, cdr in iter_bag_frames(paths.bags_dir() / 'demo_depth',
                                            ['/camera/depth/image_raw',
                                             '/camera/depth/camera_info']):
        found.setdefault(topic, cdr)
        if len(found) == 2:
            break
    return (deserialize_message(found['/camera/depth/image_raw'], Image),
            deserialize_message(found['/camera/depth/camera_info'], CameraInfo))


class Monitor:
    """The robot around the graph: camera, depth, subscriptions to results and diagnostics."""

    def __init__(self, node, frames: list, rate_hz: float):
        import edge_infer_msgs.msg as em
        from diagnostic_msgs.msg import DiagnosticArray
        from rclpy.qos import qos_profile_sensor_data
        from sensor_msgs.msg import CameraInfo, CompressedImage, Image
        self.node, self.frames, self.rate_hz = node, frames, rate_hz
        self.silent = self.depth_paused = self.stop = False
        self.malformed_every = 0            # every k-th frame malformed (0: none)
        self.sends = {n: [] for n in NODES}
        self.results = {n: {} for n in NODES}
        self.snaps = {n: [] for n in NODES}
        self.extra = {n: {} for n in NODES}     # the last diagnostics values beyond counters
        self.sent_at = {}                   # stamp -> wall time sent
        self.pubs = {}
        for n, (transport, topic, mtype) in NODES.items():
            kind = Image if transport == 'raw' else CompressedImage
            name = camera_topic(n) + ('' if transport == 'raw' else '/compressed')
            self.pubs[n] = (kind, node.create_publisher(kind, name, qos_profile_sensor_data))
            node.create_subscription(getattr(em, mtype), f'/{n}/{topic}',
                                     lambda m, n=n: self._on_result(n, m), 50)
        self.depth_pub = node.create_publisher(Image, DEPTH_TOPIC, qos_profile_sensor_data)
        self.info_pub = node.create_publisher(CameraInfo, INFO_TOPIC, qos_profile_sensor_data)
        node.create_subscription(DiagnosticArray, '/diagnostics', self._on_diag, 50)
        self.depth, self.info = depth_messages()

    def _on_result(self, n: str, m) -> None:
        self.results[n].setdefault(m.header.stamp.sec * 10**9 + m.header.stamp.nanosec,
                                   time.time())

    def _on_diag(self, m) -> None:
        t = m.header.stamp.sec + m.header.stamp.nanosec * 1e-9
        for st in m.status:
            n = st.name.split(':')[0].strip('/')
            if n in self.snaps and st.name.endswith('perception'):
                v = {kv.key: kv.value for kv in st.values}
                if all(k in v for k in ledger.KEYS):
                    self.snaps[n].append((t, {k: int(v[k]) for k in ledger.KEYS}))
                    self.extra[n] = v

    def active(self) -> bool:
        """Return whether every node's last diagnostics said it serves."""
        return all(self.extra[n].get('state') == 'active' for n in NODES)

    def _frame(self, k: int, stamp_ns: int):
        """Publish frame ``k`` to every node (malformed where the fault asks); record it."""
        import cv2
        from builtin_interfaces.msg import Time
        jpeg = self.frames[k % len(self.frames)]
        bgr = cv2.imdecode(np.frombuffer(jpeg, np.uint8), cv2.IMREAD_COLOR)
        stamp = Time(sec=stamp_ns // 10**9, nanosec=stamp_ns % 10**9)
        h, w = bgr.shape[:2]
        raw = bgr.tobytes()     # once per frame, for every raw topic
        bad = bool(self.malformed_every) and k % self.malformed_every == 0
        now = time.time()
        self.sent_at[stamp_ns] = now
        for n, (kind, pub) in self.pubs.items():
            msg = kind()
            msg.header.stamp, msg.header.frame_id = stamp, 'camera'
            if kind.__name__ == 'Image':
                msg.height, msg.width, msg.encoding, msg.step = h, w, 'bgr8', w * 3
                msg.data = raw
                if bad and (k // self.malformed_every) % 2:
                    msg.encoding = 'yuv422_yuy2'        # a camera encoding no model takes
                elif bad:
                    msg.data = raw[: len(raw) // 2]     # the header says more rows than sent
            else:
                msg.format, msg.data = 'jpeg', jpeg[: len(jpeg) // 2] if bad else jpeg
            matched = pub.get_subscription_count() > 0
            pub.publish(msg)
            self.sends[n].append((now, stamp_ns, matched, bad))
        if not self.depth_paused:
            self.depth.header.stamp = self.info.header.stamp = stamp
            self.depth_pub.publish(self.depth)
            self.info_pub.publish(self.info)

    def camera(self) -> None:
        """Publish at the current rate until ``stop`` (nothing while ``silent``)."""
        k, t_next = 0, time.monotonic()
        while not self.stop:
            t_next += 1.0 / self.rate_hz
            if not self.silent:
                self._frame(k, time.time_ns())
                k += 1
            left = t_next - time.monotonic()
            if left > 0:
                time.sleep(left)
            else:
                t_next = time.monotonic()       # behind: no burst to catch up


def anon_mb(pid: int):
    """Return the anonymous part of a process's RSS (heap, arenas), MB; None: gone."""
    try:
        for line in pathlib.Path(f'/proc/{pid}/status').read_text().splitlines():
            if line.startswith('RssAnon:'):
                return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        pass
    return None


def sample(graph: faults.Graph, started: float) -> dict:
    """Return the container's RSS, threads and open files, and /dev/shm, now."""
    import psutil
    row = {'t_s': round(time.time() - started, 1), 'container_pid': None,
           'rss_mb': None, 'rss_anon_mb': None, 'threads': None, 'fds': None}
    pid = graph.container_pid()     # 0: none running (a restart under way)
    try:
        if pid:
            kid = psutil.Process(pid)
            with kid.oneshot():
                row.update(container_pid=pid, rss_mb=round(kid.memory_info().rss / 2**20, 1),
                           threads=kid.num_threads(), fds=kid.num_fds())
            row['rss_anon_mb'] = anon_mb(pid)
    except psutil.Error:        # it just went
        pass
    files = [p for p in pathlib.Path('/dev/shm').iterdir() if p.is_file()]
    row.update(shm_files=len(files), shm_mb=round(sum(p.stat().st_size for p in files
                                                      if p.exists()) / 2**20, 1),
               shm_unowned=len(shm.stale(min_age_s=0.0, orphans=True)),
               load_1m=round(os.getloadavg()[0], 2))
    return row


def main() -> int:
    """Run the day; write the tables; with --check, exit 1 when something is wrong."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--minutes', type=float, default=60.0)
    ap.add_argument('--seed', type=int, default=1)
    ap.add_argument('--rate', type=float, default=5.0, help='camera rate between faults, Hz')
    ap.add_argument('--home-mb', type=int, default=256, help="the home's tmpfs size")
    ap.add_argument('--check', action='store_true',
                    help='exit 1 on a frame unaccounted, a crash, a fault not inflicted')
    benchlib.common_args(ap)
    args = ap.parse_args()
    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    name = 'robot_day' if args.minutes >= 30 else f'robot_day_{args.minutes:g}min'
    res = benchlib.Results(name, "A robot's day: the default graph under seeded faults",
                           '(product) issue 56', args.machine, args.out)
    work = pathlib.Path(tempfile.mkdtemp(prefix='edge_infer_day_'))
    home, mounted = make_home(work, args.home_mb)
    env = procs.ros_env(procs.free_domain_id(),
                        base={**os.environ, 'EDGE_INFER_HOME': str(home)})
    procs.use_ros_env_here()
    rclpy.init(domain_id=int(env['ROS_DOMAIN_ID']))
    node = rclpy.create_node('robot_day')
    ex = SingleThreadedExecutor()
    ex.add_node(node)
    spinner = threading.Thread(target=ex.spin, daemon=True)
    spinner.start()
    mon = Monitor(node, footage(FOOTAGE_FRAMES), args.rate)
    graph = faults.Graph(env, params_file(work), work / 'logs', home, mounted)
    samples, events = [], []
    try:
        graph.start()
        deadline = time.monotonic() + 180
        while not mon.active() and time.monotonic() < deadline:
            time.sleep(0.2)
        if not mon.active():
            raise SystemExit(f'the graph did not become active in 180 s: {graph.log_dir}')
        started = time.time()
        cam = threading.Thread(target=mon.camera, daemon=True)
        cam.start()
        plan = faults.timetable(args.minutes * 60, args.seed, mounted)
        long = args.minutes >= 30
        runner = threading.Thread(target=faults.run, daemon=True,
                                  args=(plan, mon, graph, events, started, long))
        runner.start()
        end = started + args.minutes * 60
        while time.time() < end:
            samples.append(res_sample := sample(graph, started))
            print(f"[day] {res_sample['t_s']:.0f} s: RSS {res_sample['rss_mb']} MB, threads "
                  f"{res_sample['threads']}, fds {res_sample['fds']}, /dev/shm "
                  f"{res_sample['shm_files']} files {res_sample['shm_mb']} MB; results "
                  + ', '.join(f'{n} {len(mon.results[n])}' for n in NODES), flush=True)
            time.sleep(max(0.0, min(SAMPLE_S, end - time.time())))
        wait = time.time() + 120
        while not graph.plan_done and time.time() < wait:     # a fault still under way
            time.sleep(0.5)
        mon.stop = True
        cam.join()
        t_quiet = time.time()
        while time.time() < t_quiet + 4 or not all(
                mon.snaps[n] and mon.snaps[n][-1][0] > t_quiet + 3 for n in NODES):
            time.sleep(0.2)
            if time.time() > t_quiet + 30:
                break
        samples.append(sample(graph, started))
    finally:
        mon.stop = True
        codes = graph.stop()
        graph.finished = True
        ex.shutdown()
        rclpy.try_shutdown()
        if mounted:
            subprocess.run(['umount', '-l', str(home)], check=False)
    return report(res, args, mon, events, samples, started, codes, graph, mounted)


def report(res, args, mon: Monitor, events: list, samples: list, started: float,
           codes: dict, graph, mounted: bool) -> int:
    """Write the three tables; return 1 under --check when something is wrong."""
    fails, wrong = [], []
    for ev in events:
        hits = {}
        for n in ev['nodes']:
            r = ledger.recovery(mon.results[n], mon.sent_at, ev['t_back'], ev['t_back'] + 60)
            hits[n] = r
            ev[f'{n}_back_s'] = round(r, 2) if r == r else 'none'
            ev[f'{n}_gap_s'] = round(ledger.longest_gap(mon.results[n], ev['t0'],
                                                        ev['t_back'] + 5), 2)
        worst = max(hits.values()) if hits and all(v == v for v in hits.values()) else None
        ev['back_s'] = round(worst, 2) if worst is not None else 'none'
        ev['goal_s'] = 5.0 if ev['restart'] else 3.0
        gaps = [ev[f'{n}_gap_s'] for n in ev['nodes']]
        ev['met'] = worst is not None and worst <= ev['goal_s'] and \
            (not ev['keep_serving'] or max(gaps) <= ev['goal_s'])
        if not ev['met']:
            line = f"{ev['fault']} at {ev['t0'] - started:.0f} s: back in {ev['back_s']}"
            fails.append(line)
            if worst is None or ev['detail'].startswith('could not'):
                wrong.append(line + f" ({ev['detail']})")
        ev['at_s'] = round(ev['t0'] - started, 1)
        res.add(**{k: v for k, v in ev.items() if k not in ('nodes', 't0', 't_back', 't1')})
    rows = []
    for n in NODES:
        led = ledger.account(mon.sends[n], mon.results[n], mon.snaps[n], graph.suspended(n))
        rows.append({'node': n, **led, 'last_backend': mon.extra[n].get('backend', '')})
        if led['unaccounted'] or led['restarts_unasked']:
            wrong.append(f"{n}: {led['unaccounted']} unaccounted, "
                         f"{led['restarts_unasked']} restarts not induced")
    logged = graph.found()
    crashes, tracebacks = len(logged.get('crashed', [])), len(logged.get('Traceback', []))
    kills = sum(1 for ev in events if ev['fault'] == 'kill9')
    if crashes != kills or tracebacks:
        wrong.append(f'{crashes} crash(es) logged by the bring-up for {kills} kill -9; '
                     f'{tracebacks} traceback(s)')
    nodes_res = benchlib.Results(res.name + '_nodes', "A robot's day: each node's frames",
                                 res.seed, args.machine, args.out)
    for r in rows:
        nodes_res.add(**r)
    cols = ['node', 'sent', 'not_delivered', 'outside_windows', 'in_windows', 'received',
            'processed', 'dropped', 'rejected', 'lost', 'malformed_sent', 'results',
            'unaccounted', 'restarts_unasked']
    nodes_res.note("sent: frames published to the node's camera topic; not delivered: sent "
                   'with no subscription matched (inactive or down); outside windows: sent '
                   'while an induced fault stopped or restarted the node (or before its first '
                   "snapshot); counters: the node's own over the windows "
                   '(robot_day_ledger.py)')
    nodes_res.write(cols)
    rss = [(s['t_s'], s['rss_mb']) for s in samples if s['rss_mb']]
    last_restart = max([ev['t1'] - started for ev in events if ev['restart']] or [0.0])
    since = max(600.0, last_restart + 600.0) if args.minutes >= 30 else last_restart + 60
    tail = [(t, r) for t, r in rss if t >= since]
    way = ledger.trend(tail)
    slope = way['ols']
    anon = ledger.trend([(s['t_s'], s['rss_anon_mb']) for s in samples
                         if s['t_s'] >= since and s.get('rss_anon_mb')])
    thr = [s['threads'] for s in samples if s['t_s'] >= since and s['threads']]
    fds = [s['fds'] for s in samples if s['t_s'] >= since and s['fds']]
    res.note(f'RSS from {since:.0f} s (10 min after the last restart) to the end: '
             f'{tail[0][1] if tail else "-"} -> {tail[-1][1] if tail else "-"} MB, slope '
             f'{slope:+.1f} ± {way["ols_se"]:.1f} MB/h (least squares; goal <= 10), '
             f'{way["theil_sen"]:+.1f} MB/h (Theil-Sen); 10-min medians '
             f'{", ".join(f"{b:.0f}" for b in way["blocks"]) or "-"} MB; anonymous part '
             f'{anon["ols"]:+.1f} ± {anon["ols_se"]:.1f} MB/h; threads '
             f'{min(thr or [0])}-{max(thr or [0])}, open files '
             f'{min(fds or [0])}-{max(fds or [0])}')
    if args.minutes >= 30 and not slope <= 10.0:
        fails.append(f'RSS slope {slope:+.1f} MB/h')
    res.note(f'/dev/shm at the start {samples[0]["shm_files"]} files, at the end '
             f'{samples[-1]["shm_files"]}; sets no live process owns, most seen: '
             f'{max(s["shm_unowned"] for s in samples)}')
    lines = [f"'{p}' x{len(v)}, first: {v[0]}" for p, v in logged.items()]
    res.note('faults logged by the graph: ' + ('; '.join(lines) or 'none found'))
    res.note(f'exit codes at the end: {codes}; tmpfs home: {mounted}; camera {args.rate:g} Hz '
             f'between faults; load average 1 min median '
             f'{np.median([s["load_1m"] for s in samples]):.2f}')
    for line in fails:
        res.note(f'GOAL NOT MET: {line}')
    for line in wrong:
        res.note(f'WRONG: {line}')
    res.write(['at_s', 'fault', 'detail', 'back_s', 'goal_s', 'met'] +
              [f'{n}_gap_s' for n in NODES])
    samp = benchlib.Results(res.name + '_samples', "A robot's day: every 10 s", res.seed,
                            args.machine, args.out)
    for s in samples:
        samp.add(**s)
    samp.write(['t_s', 'container_pid', 'rss_mb', 'rss_anon_mb', 'threads', 'fds', 'shm_files',
                'shm_mb', 'shm_unowned', 'load_1m'])
    return 1 if args.check and wrong else 0


if __name__ == '__main__':
    sys.exit(main())

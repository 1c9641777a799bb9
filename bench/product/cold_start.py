# Copyright 2026 edge_infer contributors. Apache-2.0.
"""Start-up: launch -> first result and launch -> settled choice, cold and warm cache.

    ./run.sh exec python bench/product/cold_start.py [--rounds 2]          (no ROS install)
    (robot)  python3 bench/product/cold_start.py --rounds 3                (uses `ros2 launch`)

Writes cold_start_ros2_launch.* or cold_start_container.* under
bench/results/<machine>/.

Starts the graph as a user does, with a camera already publishing: the demo
bag played in a loop from the same moment (``edge_infer.tools.bag.play --loop``).
Where ``ros2 launch`` exists (a robot, the stand-in of ../shared/robot) the
graph is ``ros2 launch edge_infer perception.launch.py``; elsewhere the
container process that ``edge_infer bringup`` starts, with autostart (the
same parameters: graph.plan()). Each run gets a cache folder of its own
(EDGE_INFER_CACHE). Per round, interleaved:

- **cold, provisional**: an empty cache; the nodes serve on a provisional
  backend and profile in the background (the default);
- **cold, blocking**: an empty cache, ``provisional: false``: each node
  profiles before it serves (the behaviour before);
- **warm**: the cache the round's cold provisional run left.

Times are from the start of the launch command to: the container's
``autostart: all N nodes active`` line; the first DetectionArray and the
first Classification received; the first result of every node (pose and
segmenter too: the latest of the four firsts); the settled choice of the
detector and the classifier (its
BackendReport with trigger ``profiled``, or ``configure`` when the choice
came from the cache or a blocking profile). The settled choices of the two
cold variants are printed side by side: the provisional start changes when
the measured choice comes, not what it is (the winner between two
candidates within noise of each other may differ run to run either way).
"""

import argparse
import math
import os
import pathlib
import re
import shutil
import signal
import statistics
import subprocess
import tempfile
import threading
import time

import benchlib
from edge_infer import graph, paths, procs
import yaml

NODES = ('detector', 'classifier')         # settled choices: these two
SERVING = NODES + ('pose', 'segmenter')     # first results: every node of the graph
SETTLED = ('profiled', 'configure', 'forced')
ACTIVE = re.compile(r'autostart: all \d+ nodes active')


class Listener:
    """Subscribes to results and backend reports; records when each first came."""

    def __init__(self, domain: int):
        import rclpy
        from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
        from edge_infer_msgs.msg import (BackendReport, Classification, DetectionArray,
                                         PoseDetectionArray, Segmentation)
        procs.use_ros_env_here()
        self.context = rclpy.Context()
        rclpy.init(context=self.context, domain_id=domain)
        self.node = rclpy.create_node('cold_start_bench', context=self.context)
        self.t0 = float('nan')
        self.events = []        # (seconds since t0, what, detail)
        self.lock = threading.Lock()
        latched = QoSProfile(depth=5, reliability=ReliabilityPolicy.RELIABLE,
                             durability=DurabilityPolicy.TRANSIENT_LOCAL)
        self.node.create_subscription(DetectionArray, '/detector/detections',
                                      lambda m: self._got('detector', m.backend), 10)
        self.node.create_subscription(Classification, '/classifier/classification',
                                      lambda m: self._got('classifier', m.backend), 10)
        self.node.create_subscription(PoseDetectionArray, '/pose/poses',
                                      lambda m: self._got('pose', m.backend), 10)
        self.node.create_subscription(Segmentation, '/segmenter/segmentation',
                                      lambda m: self._got('segmenter', m.backend), 10)
        for n in NODES:
            self.node.create_subscription(
                BackendReport, f'/{n}/backend_report',
                lambda m, n=n: self._got(f'{n}:report', f'{m.trigger} {m.chosen}'), latched)
        from rclpy.executors import SingleThreadedExecutor
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)
        self.thread = threading.Thread(target=self.executor.spin, daemon=True)
        self.thread.start()

    def _got(self, what: str, detail: str) -> None:
        with self.lock:
            self.events.append((time.monotonic() - self.t0, what, detail))

    def reset(self) -> None:
        with self.lock:
            self.events = []
            self.t0 = time.monotonic()

    def first(self, what: str, pred=lambda d: True) -> float:
        with self.lock:
            return next((t for t, w, d in self.events if w == what and pred(d)), float('nan'))

    def settled(self, node: str):
        """Return (time, chosen) of the node's settled choice, or (nan, '')."""
        with self.lock:
            for t, w, d in self.events:
                trigger, _, chosen = d.partition(' ')
                if w == f'{node}:report' and trigger in SETTLED:
                    return t, chosen
        return float('nan'), ''

    def close(self) -> None:
        import rclpy
        self.executor.shutdown()
        self.node.destroy_node()
        rclpy.shutdown(context=self.context)


def params_file(folder: pathlib.Path, provisional: bool) -> pathlib.Path:
    """Return the package's perception.yaml with ``provisional`` set for every node."""
    params = yaml.safe_load((paths.config_dir() / 'perception.yaml').read_text())
    for n in NODES:
        params[n]['ros__parameters']['provisional'] = provisional
    path = folder / f'perception_provisional_{str(provisional).lower()}.yaml'
    path.write_text(yaml.safe_dump(params, sort_keys=False))
    return path


def start_graph(use_launch: bool, params: pathlib.Path, env: dict, log: pathlib.Path):
    """Start the graph as a user does; return the process (its own process group)."""
    out = open(log, 'wb')
    if use_launch:
        cmd = ['ros2', 'launch', 'edge_infer', 'perception.launch.py', 'autostart:=true',
               f'params_file:={params}']
        return subprocess.Popen(cmd, env=env, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True,
                                preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    (plan,) = graph.plan(params_file=params, autostart=True)
    pfile = plan.write_params(log.with_suffix('.params.yaml'))
    return procs.spawn('edge_infer.nodes.container_entry',
                       ['--ros-args', '--params-file', str(pfile)], env, log)


def stop(proc, timeout: float = 60.0) -> int:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGINT)
    try:
        return proc.wait(timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        return proc.wait(10)


def active_at(log: pathlib.Path, t0_wall: float) -> float:
    """Return when the log said 'all nodes active' (seconds after start), from its ROS stamp."""
    for line in log.read_text(errors='replace').splitlines():
        if ACTIVE.search(line):
            m = re.search(r'\[(\d+\.\d+)\]', line)
            if m:
                return float(m.group(1)) - t0_wall
    return float('nan')


def one_run(args, listener, variant: str, cache: pathlib.Path, params: pathlib.Path,
            domain: int, folder: pathlib.Path, k: int) -> dict:
    env = procs.ros_env(domain)
    env['EDGE_INFER_CACHE'] = str(cache)
    log = folder / f'{variant.replace(", ", "_")}_{k}.log'
    player = None
    listener.reset()
    t0_wall = time.time()
    graph_proc = start_graph(args.use_launch, params, env, log)
    try:
        player = procs.start_player(paths.bags_dir() / 'demo', env, ['--loop', '--quiet'])
        deadline = time.monotonic() + args.timeout
        tick = threading.Event()    # never set: wait() paces the polling
        while time.monotonic() < deadline and graph_proc.poll() is None and not (
                all(listener.settled(n)[1] for n in NODES) and
                not any(math.isnan(listener.first(n)) for n in SERVING)):
            tick.wait(0.2)
    finally:
        if player is not None:
            procs.stop(player)
        row_rc = stop(graph_proc)
    row = {'variant': variant, 'round': k, 'exit_code': row_rc,
           'active_s': active_at(log, t0_wall)}
    for n in NODES:
        row[f'{n}_first_s'] = listener.first(n)
        row[f'{n}_settled_s'], row[f'{n}_chosen'] = listener.settled(n)
    row['settled_s'] = max(row['detector_settled_s'], row['classifier_settled_s'])
    firsts = [listener.first(n) for n in SERVING]
    row['every_first_s'] = float('nan') if any(math.isnan(f) for f in firsts) else max(firsts)
    print(f"{variant:20s} round {k}: active {row['active_s']:.1f} s, first detection "
          f"{row['detector_first_s']:.1f} s, first classification "
          f"{row['classifier_first_s']:.1f} s, every node's first result "
          f"{row['every_first_s']:.1f} s, settled {row['settled_s']:.1f} s "
          f"({row['detector_chosen']} / {row['classifier_chosen']}), exit {row_rc}",
          flush=True)
    return row


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--rounds', type=int, default=2)
    ap.add_argument('--timeout', type=float, default=240.0,
                    help='seconds to wait for both nodes to settle in one run')
    ap.add_argument('--no-launch', dest='use_launch', action='store_false',
                    help="start the container directly even where 'ros2 launch' exists")
    ap.add_argument('--machine', default=None)
    args = ap.parse_args()
    if args.use_launch and shutil.which('ros2') is None:
        args.use_launch = False
    how = "'ros2 launch edge_infer perception.launch.py'" if args.use_launch else \
        'the container process (no ros2 launch here)'
    name = 'cold_start_ros2_launch' if args.use_launch else 'cold_start_container'
    res = benchlib.Results(name, 'Start-up: launch -> first result and settled choice',
                           'product (start-up time)', machine=args.machine)
    folder = pathlib.Path(tempfile.mkdtemp(prefix='edge_infer_cold_'))
    domain = procs.free_domain_id(os.getpid())
    listener = Listener(domain)
    load0 = os.getloadavg()
    try:
        provisional, blocking = params_file(folder, True), params_file(folder, False)
        for k in range(1, args.rounds + 1):
            cache = folder / f'cache_{k}'
            res.add(**one_run(args, listener, 'cold, provisional', cache, provisional, domain,
                              folder, k))
            res.add(**one_run(args, listener, 'cold, blocking', folder / f'cache_b{k}',
                              blocking, domain, folder, k))
            res.add(**one_run(args, listener, 'warm', cache, provisional, domain, folder, k))
    finally:
        listener.close()
    summary = []
    for variant in ('cold, provisional', 'cold, blocking', 'warm'):
        rows = [r for r in res.rows if r['variant'] == variant]
        s = {'variant': variant, 'runs': len(rows)}
        for key in ('active_s', 'detector_first_s', 'classifier_first_s', 'every_first_s',
                    'settled_s'):
            vals = [r[key] for r in rows if r[key] == r[key]]
            s[key] = statistics.median(vals) if vals else float('nan')
            s[key + '_max'] = max(vals) if vals else float('nan')
        s['choices'] = '; '.join(sorted({f"{r['detector_chosen']} / {r['classifier_chosen']}"
                                         for r in rows}))
        summary.append(s)
        print(f"{variant:20s} median: active {s['active_s']:.1f} s, first detection "
              f"{s['detector_first_s']:.1f} s (max {s['detector_first_s_max']:.1f}), settled "
              f"{s['settled_s']:.1f} s (max {s['settled_s_max']:.1f}); choices {s['choices']}")
    res.note(f'Graph started with {how}; a camera (the demo bag, looped) publishing from the '
             f'same moment. Times in seconds from the start command; medians over '
             f'{args.rounds} interleaved rounds, max beside. Load average at start '
             f'{load0[0]:.2f}.')
    from edge_infer.backends.libs.pnnx import pnnx_binary
    res.note('ncnn candidates: ' + ('measured (pnnx installed)' if pnnx_binary() else
                                    'unavailable (no pnnx: fewer candidates to profile)'))
    res.note('settled = the BackendReport that ends the choice: trigger profiled '
             '(provisional start) or configure (blocking profile, or the cache).')
    res.write(['variant', 'runs', 'active_s', 'detector_first_s', 'detector_first_s_max',
               'classifier_first_s', 'every_first_s', 'every_first_s_max', 'settled_s',
               'settled_s_max', 'choices'],
              ['variant', 'runs', 'all active (s)', 'first detection (s)', 'max',
               'first classification (s)', "every node's first result (s)", 'max',
               'settled (s)', 'max', 'settled choices (detector / classifier)'],
              md_rows=summary)
    shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == '__main__':
    raise SystemExit(main())

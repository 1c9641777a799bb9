# Copyright 2026 edge_infer contributors. Apache-2.0.
"""Helper of robot_day.py: the graph under bring-up, the fault timetable and each fault.

The timetable is fixed by the seed: the four faults that restart the
container first (kill -9, then the profile cache truncated, made read-only,
and the home's tmpfs full, each before a restart of the bring-up: what
``systemctl restart`` does), then the others in a seeded order, again and
again, with seeded gaps, until the day is over. Each fault returns its
record: when it began (``t0``), when results are awaited from
(``t_back``), when it ended (``t1``), the nodes it touched, and where the
ledger must not check a node (``Graph.suspend``).
"""

import glob
import os
import pathlib
import random
import signal
import subprocess
import sys
import time
from typing import Dict, List, Tuple

from edge_infer import procs

NAMES = ('detector', 'classifier', 'pose', 'segmenter')
RESTARTS = ('kill9', 'cache_truncated', 'cache_read_only', 'home_full')
OTHERS = ('camera_silent', 'rate_jump', 'cpu_hog', 'deactivate_activate',
          'cleanup_configure', 'depth_pause', 'malformed')
DURATION_S = {   # fault -> (seconds it takes in a long day, in a short one)
    'kill9': (30, 20), 'cache_truncated': (40, 25), 'cache_read_only': (60, 25),
    'home_full': (60, 25), 'camera_silent': (10, 10), 'rate_jump': (40, 20),
    'cpu_hog': (60, 25), 'deactivate_activate': (10, 8), 'cleanup_configure': (20, 15),
    'depth_pause': (10, 10), 'malformed': (10, 8)}
CACHE = 'cache/backend_profiles.json'      # the profile cache, under the home
KEEP_SERVING = ('rate_jump', 'cpu_hog', 'depth_pause', 'malformed')    # no gap allowed
LOGGED = ('No space left on device', 'Read-only file system', 'profile cache',
          'crashed', 'active again', 'Traceback', 'rejected')


class Graph:
    """``edge_infer bringup`` of the day's params, restartable; where each node was stopped."""

    def __init__(self, env: Dict[str, str], params: pathlib.Path, log_dir: pathlib.Path,
                 home: pathlib.Path, mounted: bool):
        self.env, self.params, self.log_dir, self.home = env, params, log_dir, home
        self.mounted = mounted
        self.runs = 0
        self.plan_done = False      # every fault of the timetable ran (or was too late)
        self.finished = False       # the day is over: the thread that started the bring-up
        self.proc: subprocess.Popen = None       # type: ignore[assignment]
        # may end now (a child started from a thread gets SIGTERM when it ends)
        self._suspended: Dict[str, List[Tuple[float, float, str]]] = {n: [] for n in NAMES}

    def start(self) -> None:
        """Start the bring-up (it starts the container and drives the nodes to active)."""
        self.runs += 1
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.proc = procs.spawn('edge_infer.cli', [
            'bringup', '--params-file', str(self.params),
            '--log-dir', str(self.log_dir / f'run{self.runs}')],
            self.env, self.log_dir / f'bringup{self.runs}.log')

    def stop(self) -> Dict[str, int]:
        """Stop the bring-up (SIGINT: it stops its container); return the exit code."""
        return {f'bringup run {self.runs}': procs.stop(self.proc, 40.0)}

    def container_pid(self) -> int:
        """Return the pid of the running container (0: none)."""
        import psutil
        try:
            kids = psutil.Process(self.proc.pid).children()
        except psutil.Error:
            return 0
        return kids[0].pid if kids else 0

    def log_has(self, text: str) -> bool:
        """Return whether the running container's log has ``text``."""
        path = self.log_dir / f'run{self.runs}' / 'perception_container.log'
        return path.exists() and text in path.read_text(errors='replace')

    def suspend(self, nodes, t0: float, t1: float, fault: str) -> None:
        """Note that ``nodes`` were stopped or restarted by ``fault`` from ``t0`` to ``t1``."""
        for n in nodes:
            self._suspended[n].append((t0, t1, fault))

    def suspended(self, node: str) -> List[Tuple[float, float, str]]:
        """Return where ``node`` was stopped or restarted by a fault."""
        return self._suspended[node]

    def found(self) -> Dict[str, List[str]]:
        """Return, per pattern of LOGGED, the log lines that have it."""
        found: Dict[str, List[str]] = {}
        for path in sorted(glob.glob(str(self.log_dir / '**' / '*.log'), recursive=True)):
            for line in pathlib.Path(path).read_text(errors='replace').splitlines():
                for pat in LOGGED:
                    if pat in line:
                        found.setdefault(pat, []).append(line.strip()[:300])
        return found


def timetable(total_s: float, seed: int, mounted: bool) -> List[Tuple[float, str]]:
    """Return [(planned start s, fault)]: restarts first, then the others, seeded."""
    rng = random.Random(seed)
    long = total_s >= 1800
    gap, t, tail = (45.0, 60.0, 60.0) if long else (6.0, 15.0, 10.0)
    plan: List[Tuple[float, str]] = []
    cycle = [f for f in RESTARTS if mounted or f not in ('cache_read_only', 'home_full')]
    while True:
        others = list(OTHERS)
        rng.shuffle(others)
        for fault in cycle + others:
            dur = DURATION_S[fault][0 if long else 1]
            if t + dur > total_s - tail:
                return plan
            plan.append((round(t, 1), fault))
            t += dur + rng.uniform(0.5, 1.5) * gap
        cycle = []


def _wait_active(mon, after: float, nodes, timeout: float = 120.0) -> float:
    """Wait until each of ``nodes`` reported active after ``after``; return when."""
    deadline = time.time() + timeout
    while time.time() < deadline and not mon.stop:
        if all(mon.snaps[n] and mon.snaps[n][-1][0] > after and
               mon.extra[n].get('state') == 'active' for n in nodes):
            return time.time()
        time.sleep(0.1)
    return time.time()


def _truncate(home: pathlib.Path) -> str:
    path = home / CACHE
    size = path.stat().st_size if path.exists() else 0
    with open(path, 'r+b') as f:
        f.truncate(size // 2)
    return f'{CACHE} cut from {size} to {size // 2} bytes'


def _remount(home: pathlib.Path, mode: str) -> None:
    subprocess.run(['mount', '-o', f'remount,{mode}', str(home)], check=True)


def _fill(home: pathlib.Path) -> int:
    """Fill the home's filesystem; return the bytes written."""
    n = 0
    with open(home / 'filler', 'wb') as f:
        try:
            while True:
                f.write(b'\0' * 2**20)
                f.flush()
                n += 2**20
        except OSError:
            pass
    return n


def run_fault(fault: str, mon, graph: Graph, lc, rng: random.Random, long: bool) -> dict:
    """Inflict ``fault``; return its record."""
    dur = DURATION_S[fault][0 if long else 1]
    ev = {'fault': fault, 'detail': '', 'nodes': list(NAMES), 'restart': fault in RESTARTS,
          't0': time.time()}
    base = mon.rate_hz
    if fault == 'camera_silent':
        mon.silent = True
        time.sleep(10)
        mon.silent = False
        ev.update(detail='no frame for 10 s', t_back=time.time())
    elif fault == 'rate_jump':
        mon.rate_hz = 5.0
        time.sleep(dur / 4)
        mon.rate_hz = 30.0
        time.sleep(dur * 3 / 4)
        mon.rate_hz = base
        ev.update(detail=f'5 Hz for {dur / 4:g} s, 30 Hz for {dur * 3 / 4:g} s',
                  t_back=time.time())
    elif fault == 'cpu_hog':
        hog = subprocess.Popen([sys.executable, '-c', 'while True: pass'])
        time.sleep(dur)
        hog.kill()
        hog.wait()
        ev.update(detail=f'one core busy for {dur} s', t_back=time.time())
    elif fault in ('deactivate_activate', 'cleanup_configure'):
        node = rng.choice(NAMES)
        steps = (['deactivate'] if fault == 'deactivate_activate' else
                 ['deactivate', 'cleanup', 'configure'])
        for step in steps:
            lc.change(f'/{node}', step, timeout=60)
        time.sleep(3)
        t_back = time.time()
        lc.change(f'/{node}', 'activate', timeout=60)
        t1 = _wait_active(mon, time.time(), [node]) + 1.0
        graph.suspend([node], ev['t0'], t1, fault)
        ev.update(detail=f"{node}: {', '.join(steps)}, 3 s, activate", nodes=[node],
                  t_back=t_back)
    elif fault == 'depth_pause':
        mon.depth_paused = True
        time.sleep(10)
        mon.depth_paused = False
        ev.update(detail='depth and CameraInfo stop for 10 s, colour goes on',
                  t_back=time.time())
    elif fault == 'malformed':
        mon.malformed_every = 3
        time.sleep(dur)
        mon.malformed_every = 0
        ev.update(detail='every 3rd frame: raw wrong encoding / short data, JPEG cut in half',
                  t_back=time.time())
    elif fault == 'kill9':
        pid = graph.container_pid()
        os.kill(pid, signal.SIGKILL)
        ev.update(detail=f'container {pid} killed; bring-up restarts it', t_back=time.time())
        t1 = _wait_active(mon, ev['t0'], NAMES) + 1.0
        graph.suspend(NAMES, ev['t0'], t1, fault)
    else:       # a restart of the bring-up, the home changed while it was down
        home = graph.home
        graph.stop()        # (a filesystem with files open for writing cannot go read-only)
        detail = _truncate(home)
        if fault == 'cache_read_only':
            _remount(home, 'ro')
            detail += '; the home remounted read-only'
        elif fault == 'home_full':
            detail += f'; the home filled ({_fill(home) / 2**20:.0f} MB more)'
        t_back = time.time()
        graph.start()
        t1 = _wait_active(mon, t_back, NAMES) + 1.0
        graph.suspend(NAMES, ev['t0'], t1, fault)
        time.sleep(max(0.0, ev['t0'] + dur - time.time()))
        if fault != 'cache_truncated':  # held until a write was refused (2 min at most)
            while not graph.log_has('not written') and time.time() < t_back + 120:
                time.sleep(0.5)
            detail += (f'; a write refused after {time.time() - t_back:.0f} s'
                       if graph.log_has('not written') else '; no write tried in 120 s')
        if fault == 'cache_read_only':
            _remount(home, 'rw')
        elif fault == 'home_full':
            (home / 'filler').unlink()
        ev.update(detail='bring-up stopped; ' + detail + '; started again', t_back=t_back)
    ev['t1'] = time.time()
    ev['keep_serving'] = fault in KEEP_SERVING
    return ev


def run(plan, mon, graph: Graph, events: list, started: float, long: bool) -> None:
    """Run the timetable (in its own thread): each fault at its planned time or late."""
    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    from edge_infer.nodes.lifecycle_client import LifecycleClient
    node = rclpy.create_node('robot_day_lifecycle')
    ex = SingleThreadedExecutor()
    ex.add_node(node)
    lc = LifecycleClient(node, ex)
    rng = random.Random(len(plan))
    end = started + max((t for t, _ in plan), default=0) + 600
    for t_plan, fault in plan:
        while time.time() < started + t_plan and not mon.stop:
            time.sleep(0.1)
        if mon.stop or time.time() > end:
            break
        print(f'[day] {time.time() - started:.0f} s: {fault}', flush=True)
        try:
            events.append(run_fault(fault, mon, graph, lc, rng, long))
        except Exception as exc:        # a fault that could not be inflicted: said, not hidden
            events.append({'fault': fault, 'detail': f'could not: {exc}', 'nodes': [],
                           'restart': False, 't0': time.time(), 't_back': time.time(),
                           't1': time.time(), 'keep_serving': False})
        print(f"[day] {time.time() - started:.0f} s: {fault} done: {events[-1]['detail']}",
              flush=True)
    graph.plan_done = True
    while not graph.finished:       # the bring-up this thread started dies with it
        time.sleep(0.2)
    node.destroy_node()

# Copyright 2026 edge_infer contributors. Apache-2.0.
"""``ros2 launch`` of the package's launch file as a supervisor sees it, for tests and benches.

:class:`LaunchRun` starts ``ros2 launch edge_infer perception.launch.py`` in a
session of its own with SIGINT at its default (a shell that starts a job in
the background passes it on as ignored), reads its output, and knows the
containers it started (each restart is another one); its processes get a
temporary directory of their own ($TMPDIR), so that what they leave there is
theirs and nobody else's. :class:`Camera`
publishes the demo bag's frames at 10 Hz and records when detections come.
:func:`leftovers` says what a run left behind: processes, Fast DDS files no
live process owns, anything in the run's temporary directory.

Used by test/graph/test_launch_supervision.py (CI's robot stage) and
bench/product/launch_supervision.py (the issue's goals, measured).
"""

import os
import pathlib
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from typing import Callable, List, Optional, Sequence

from .. import procs, shm

CONTAINER = 'perception_container'
STARTED = re.compile(r'process started with pid \[(\d+)\]')     # the launch's line
LIBRARY_FILES = {'.ses'}       # onnxruntime's session marker in $TMPDIR: not ours


def ros2_launch_missing() -> str:
    """Return why ``ros2 launch`` cannot run here ('' when it can)."""
    if shutil.which('ros2') is None:
        return "no ros2 command (ROS 2 not sourced, or this repository's PyPI-only set-up)"
    try:
        import launch_ros  # noqa: F401
        import ros2launch  # noqa: F401
    except ImportError as exc:
        return f'ros2 launch is not installed ({exc})'
    return ''


class Listener:
    """A test's own rclpy context in ``domain``: subscriptions filling lists, spun in a thread.

    ``topics``: {topic: message type}; :attr:`got` maps each topic to the
    messages received so far. Used by the launch tests' result checks.
    """

    def __init__(self, domain: int, name: str, topics: dict, depth: int = 50):
        import rclpy
        from rclpy.executors import SingleThreadedExecutor
        procs.use_ros_env_here()
        self.context = rclpy.Context()
        rclpy.init(context=self.context, domain_id=domain)
        self.node = rclpy.create_node(name, context=self.context)
        self.got: dict = {topic: [] for topic in topics}
        for topic, kind in topics.items():
            self.node.create_subscription(kind, topic, self.got[topic].append, depth)
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)
        self.spinner = threading.Thread(target=self.executor.spin, daemon=True)
        self.spinner.start()

    def close(self) -> None:
        """Stop spinning and free the node and the context."""
        import rclpy
        self.executor.shutdown()
        self.node.destroy_node()
        rclpy.shutdown(context=self.context)
        self.spinner.join(5)


def wait_for(condition: Callable[[], object], timeout: float, step: float = 0.05):
    """Return ``condition()``'s first truthy value within ``timeout`` s, else None."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value or time.monotonic() > deadline:
            return value or None
        time.sleep(step)


class LaunchRun:
    """One ``ros2 launch`` of the perception launch file, its output and its containers."""

    def __init__(self, domain: int, args: Sequence[str] = (), env_extra: Optional[dict] = None):
        env = procs.ros_env(domain)
        self.tmp = pathlib.Path(tempfile.mkdtemp(prefix='edge_infer_launch_run_'))
        env.update(env_extra or {}, TMPDIR=str(self.tmp))
        self.started = time.monotonic()
        self.proc = subprocess.Popen(
            ['ros2', 'launch', 'edge_infer', 'perception.launch.py', *args], env=env,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            start_new_session=True,
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        self.lines: List[str] = []
        self.times: List[float] = []
        self.seen_pids: set = set()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line)
            self.times.append(time.monotonic())

    def said_at(self, words: str, nth: int = 1) -> Optional[float]:
        """Return when the ``nth`` line holding ``words`` was read (monotonic), or None."""
        hits = [t for line, t in zip(list(self.lines), list(self.times)) if words in line]
        return hits[nth - 1] if len(hits) >= nth else None

    @property
    def text(self) -> str:
        """Return the output so far."""
        return ''.join(self.lines)

    def count(self, words: str) -> int:
        """Return how many output lines hold ``words``."""
        return sum(words in line for line in list(self.lines))

    def container(self):
        """Return the running container's psutil.Process, or None."""
        import psutil
        try:
            kids = psutil.Process(self.proc.pid).children(recursive=True)
        except psutil.NoSuchProcess:
            return None
        for k in kids:
            self.seen_pids.add(k.pid)
            try:
                if any(CONTAINER in part for part in k.cmdline()):
                    return k
            except psutil.NoSuchProcess:
                pass
        return None

    def wait_active(self, times: int = 1, timeout: float = 300.0) -> bool:
        """Wait until 'autostart: all N nodes active' was said ``times`` times."""
        return bool(wait_for(lambda: self.count('nodes active') >= times or
                             self.proc.poll() is not None, timeout) and
                    self.count('nodes active') >= times)

    def interrupt(self, times: int = 2, gap_s: float = 0.2) -> None:
        """Send SIGINT to the whole process group ``times`` times (a terminal's Ctrl-C)."""
        for i in range(times):
            if i:
                time.sleep(gap_s)
            try:
                os.killpg(self.proc.pid, signal.SIGINT)
            except ProcessLookupError:
                return

    def wait_exit(self, timeout: float = 60.0) -> int:
        """Wait for the launch to end; return its exit code."""
        rc = self.proc.wait(timeout=timeout)
        self._reader.join(10)
        return rc

    def kill(self) -> None:
        """SIGKILL whatever of the run is left (a test's clean-up)."""
        import psutil
        for pid in [self.proc.pid, *self.seen_pids]:
            try:
                psutil.Process(pid).kill()
            except psutil.NoSuchProcess:
                pass
        if self.proc.poll() is None:
            self.proc.wait(10)


class Camera:
    """Publishes the demo bag's raw frames at ``rate_hz``; notes when detections arrive."""

    def __init__(self, domain: int, bag: pathlib.Path, rate_hz: float = 10.0,
                 topic: str = '/camera/image_raw'):
        import rclpy
        from rclpy.executors import SingleThreadedExecutor
        from rclpy.qos import qos_profile_sensor_data
        from sensor_msgs.msg import Image

        from edge_infer_msgs.msg import DetectionArray
        from ..core.bag_read import iter_bag_frames
        procs.use_ros_env_here()
        self.frames = [raw for _, _, _, raw in iter_bag_frames(bag, [topic])][:100]
        self.context = rclpy.Context()
        rclpy.init(context=self.context, domain_id=domain)
        self.node = rclpy.create_node('edge_infer_supervision_camera', context=self.context)
        self.pub = self.node.create_publisher(Image, topic, qos_profile_sensor_data)
        self.arrivals: List[float] = []
        self.node.create_subscription(DetectionArray, '/detector/detections',
                                      lambda m: self.arrivals.append(time.monotonic()), 50)
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._spin, daemon=True),
                         threading.Thread(target=self._publish, args=(rate_hz,), daemon=True)]
        for th in self._threads:
            th.start()

    def _spin(self) -> None:
        while not self._stop.is_set() and self.context.ok():
            self.executor.spin_once(timeout_sec=0.1)

    def _publish(self, rate_hz: float) -> None:
        i = 0
        while not self._stop.wait(1.0 / rate_hz):
            self.pub.publish(self.frames[i % len(self.frames)])
            i += 1

    def first_after(self, t: float) -> Optional[float]:
        """Return when the first detection after monotonic time ``t`` came, or None."""
        return next((a for a in list(self.arrivals) if a > t), None)

    def close(self) -> None:
        """Stop publishing and leave the graph."""
        import rclpy
        self._stop.set()
        for th in self._threads:
            th.join(5)
        self.executor.shutdown()
        self.node.destroy_node()
        rclpy.try_shutdown(context=self.context)


def snapshot() -> set:
    """Return the names in /dev/shm, to compare after a run."""
    try:
        return {str(shm.SHM_DIR / n) for n in os.listdir(shm.SHM_DIR)}
    except OSError:
        return set()


def leftovers(run: LaunchRun, before: set, wait_s: float = 30.0) -> List[str]:
    """Return what ``run`` left: live processes, new /dev/shm files, its temporary directory.

    A new /dev/shm file counts when no live process owns it (another
    program's Fast DDS files come and go beside the run), or when its name
    says edge_infer; anything in the run's $TMPDIR counts but ONNX Runtime's
    one 51-byte ``.ses`` file (its telemetry session marker, rewritten at each
    start, the same in /tmp). The run's $TMPDIR is removed, and a process
    still running after ``wait_s`` is killed once counted.
    """
    import psutil
    run.container()     # note the last pids
    # and every process the launch said it started: a launch that died of SIGTERM
    # at once has no children left to list, while its container may run on
    started = {int(pid) for pid in STARTED.findall(run.text)}
    running = []
    for pid in run.seen_pids | started | {run.proc.pid}:
        try:
            proc = psutil.Process(pid)
            if pid in run.seen_pids or pid == run.proc.pid or \
                    any(CONTAINER in part for part in proc.cmdline()):     # not a pid reused
                running.append(proc)
        except psutil.Error:
            pass
    alive = psutil.wait_procs(running, timeout=wait_s)[1]
    out = [f'process {p.pid} still running' for p in alive]
    for proc in alive:      # said, then ended: one run's orphan does not burden the next
        try:
            proc.kill()
        except psutil.Error:
            pass
    stale = {str(f) for files in shm.stale(min_age_s=0.0) for f in files}
    out += [n for n in sorted(snapshot() - before) if n in stale or 'edge_infer' in n]
    out += [str(p) for p in sorted(run.tmp.rglob('*')) if p.name not in LIBRARY_FILES]
    shutil.rmtree(run.tmp, ignore_errors=True)
    return out

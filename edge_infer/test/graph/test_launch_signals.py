# Copyright 2026 edge_infer contributors. Apache-2.0.
"""`ros2 launch` stopped as a person or a supervisor stops it: exit 0, nothing left behind.

Runs the launch file with the real ``ros2 launch`` (a robot with ROS 2, or
the stand-in of ../shared/robot under ``colcon test``); skipped with the
reason where ``ros2 launch`` is missing (this repository's PyPI-only set-up,
where test_bringup_signals.py covers the bring-up command instead).

- **A terminal's Ctrl-C** reaches the whole foreground process group: the
  launch and the container each get a SIGINT, and the launch then sends the
  container its own, which lands while the container already shuts down.
  That second one used to kill it with ``KeyboardInterrupt`` (exit -2,
  "process has died", a traceback, a Fast DDS segment left in /dev/shm).
- **SIGTERM of the launch** (systemd's stop, ``docker stop``): Jazzy's
  ``ros2 launch`` dies of it at once (exit 143) without stopping its
  children; the container notices its parent's death (PR_SET_PDEATHSIG) and
  stops by itself instead of running on as an orphan. Also when the SIGTERM
  comes while the container still starts, before it could set that signal
  (11 orphans in 500 stops of bench/product/stop_loop.py --launch).

After either: no process of the launch left, no traceback, none of the Fast
DDS shared memory the launch's processes held left in /dev/shm, and no folder
of the launch left in the temporary directory; after the Ctrl-C also exit
code 0 and the container "finished cleanly".
"""

import os
import pathlib
import re
import signal
import subprocess
import tempfile
import threading
import time

from edge_infer import procs, shm
from edge_infer.testing.launching import ros2_launch_missing, STARTED
import psutil
import pytest

LAUNCH = pathlib.Path(__file__).resolve().parents[2] / 'launch' / 'perception.launch.py'
ACTIVE = re.compile(r'autostart: all \d+ nodes active')
SHM = pathlib.Path('/dev/shm')


_ros2_launch_missing = ros2_launch_missing     # test_launch_diagnostics.py imports it
pytestmark = pytest.mark.skipif(bool(ros2_launch_missing()), reason=ros2_launch_missing())


class Launch:
    """``ros2 launch`` of the package's launch file in a process group of its own."""

    def __init__(self, domain: int, *args: str):
        env = procs.ros_env(domain)
        self.proc = subprocess.Popen(
            ['ros2', 'launch', str(LAUNCH), 'autostart:=true', *args], env=env,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            start_new_session=True,
            # a shell that starts it in the background may pass SIGINT on as ignored
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        self.lines = []
        self.active = threading.Event()
        self.started = threading.Event()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            self.lines.append(line)
            if ACTIVE.search(line):
                self.active.set()
            if STARTED.search(line):
                self.started.set()

    @property
    def text(self) -> str:
        return ''.join(self.lines)

    def tail(self, lines: int = 120, width: int = 400) -> str:
        """Return the last ``lines`` lines, each cut to ``width`` characters.

        The nodes' "not used" lines run to thousands of characters: a tail by
        characters (20,000 of them) held only those, never the fatal lines
        (Python's faulthandler, "terminate called ...") of a container's abort.
        """
        return ''.join(x if len(x) <= width else x[:width] + ' [...]\n'
                       for x in self.lines[-lines:])

    def wait_active(self, timeout: float = 300.0) -> None:
        """Wait for ``autostart: all N nodes active`` (or the launch's end)."""
        deadline = time.monotonic() + timeout
        while not self.active.wait(0.5):
            assert self.proc.poll() is None, f'launch ended early:\n{self.tail()}'
            assert time.monotonic() < deadline, f'never active:\n{self.tail()}'

    def wait_exit(self, timeout: float = 60.0) -> int:
        rc = self.proc.wait(timeout=timeout)
        self._reader.join(10)
        return rc

    def kill(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)


def _fastdds_files() -> set:
    return {p.name for p in SHM.glob('*fastrtps*')} if SHM.is_dir() else set()


def _launch_folders() -> set:
    return {p.name for p in pathlib.Path(tempfile.gettempdir()).glob('edge_infer_launch_*')}


@pytest.fixture
def domain():
    return procs.free_domain_id(os.getpid() + 7)


def _held(children) -> set:
    """Return the segment lock files the launch's processes hold (their DDS participants')."""
    return {f for c in children for f in shm.segment_locks(c.pid)}


def _check_nothing_left(launch: Launch, children, shm_before: set, tmp_before: set,
                        held: set) -> None:
    text = launch.text
    _, alive = psutil.wait_procs(children, timeout=60)
    assert not alive, f'left running: {[p.pid for p in alive]}\n{launch.tail()}'
    for word in ('Traceback', 'KeyboardInterrupt', 'process has died'):
        assert word not in text, launch.tail()
    # The segments the launch's processes held must be gone (a participant holds
    # its lock file open for the segment's life). Not every new name in /dev/shm:
    # other programs' participants come and go beside the run (a test suite
    # running beside it made this test fail with its own live segments), and
    # Fast DDS's port files (fastrtps_port<N>) are shared by all of them.
    assert held, 'the launch held no Fast DDS segment: nothing to check'
    left = sorted(os.path.basename(f[:-len('_el')]) + suffix for f in held
                  for suffix in ('', '_el') if os.path.exists(f[:-len('_el')] + suffix))
    others = {n for n in _fastdds_files() - shm_before if 'port' not in n} - set(left)
    assert not left, (f'shared memory left behind: {left} (held by {[c.pid for c in children]}'
                      f' before the stop); other new Fast DDS files: {sorted(others)}\n'
                      f'{launch.tail()}')
    assert _launch_folders() <= tmp_before


def test_a_terminal_ctrl_c_ends_with_exit_0_and_leaves_nothing(domain):
    shm_before, tmp_before = _fastdds_files(), _launch_folders()
    launch = Launch(domain)
    try:
        launch.wait_active()
        children = psutil.Process(launch.proc.pid).children(recursive=True)
        held = _held(children)
        os.killpg(launch.proc.pid, signal.SIGINT)      # what a terminal's Ctrl-C does
        rc = launch.wait_exit()
    finally:
        launch.kill()
    assert rc == 0, launch.tail()
    # the container runs as '<python>-N' when the launch file runs it with the venv's python
    assert 'process has finished cleanly' in launch.text, launch.tail()
    _check_nothing_left(launch, children, shm_before, tmp_before, held)


def test_sigterm_of_the_launch_stops_the_container_and_leaves_nothing(domain):
    shm_before, tmp_before = _fastdds_files(), _launch_folders()
    launch, children = Launch(domain, 'namespace:=sigterm_test'), []
    try:
        launch.wait_active()
        children = psutil.Process(launch.proc.pid).children(recursive=True)
        assert children
        held = _held(children)
        launch.proc.send_signal(signal.SIGTERM)         # systemd's stop, docker stop
        launch.wait_exit()
        _check_nothing_left(launch, children, shm_before, tmp_before, held)
    finally:
        launch.kill()
        for child in children:      # the old behaviour: an orphan still serving
            if child.is_running():
                child.kill()


def test_sigterm_while_the_container_starts_leaves_no_orphan(domain):
    launch, container = Launch(domain, 'namespace:=early_sigterm_test'), None
    try:
        assert launch.started.wait(120), f'no process started:\n{launch.tail()}'
        container = psutil.Process(int(STARTED.search(launch.text).group(1)))
        launch.proc.send_signal(signal.SIGTERM)     # the container is still importing
        launch.wait_exit()
        _, alive = psutil.wait_procs([container], timeout=60)
        assert not alive, f'the container {container.pid} runs on as an orphan\n{launch.tail()}'
    finally:
        launch.kill()
        if container is not None and container.is_running():
            container.kill()

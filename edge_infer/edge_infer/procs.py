# Copyright 2026 edge_infer contributors. Apache-2.0.
"""Start edge_infer's ROS processes (container, bag player) as child processes.

Children get the venv's Python and an environment without the ROS wheels'
bootstrap marker (a child that inherits ``_ROS_WHEELS_BOOTSTRAP_COMPLETE``
without its LD_LIBRARY_PATH cannot import rclpy), a chosen ROS_DOMAIN_ID, and
discovery limited to this machine, and a Fast DDS profile whose shared-memory
segment carries full camera frames (config/fastdds_large_frames.xml).
"""

import os
import pathlib
import random
import re
import shutil
import signal
import subprocess
import sys
from typing import Dict, List, Optional, Sequence

from . import paths


def ros_env(domain_id: Optional[int] = None, base: Optional[Dict] = None) -> Dict[str, str]:
    """Return an environment for a ROS child process."""
    env = dict(os.environ if base is None else base)
    env.pop('_ROS_WHEELS_BOOTSTRAP_COMPLETE', None)
    if domain_id is not None:
        env['ROS_DOMAIN_ID'] = str(domain_id)
    env.setdefault('ROS_AUTOMATIC_DISCOVERY_RANGE', 'LOCALHOST')
    env.setdefault('FASTRTPS_DEFAULT_PROFILES_FILE', str(paths.fastdds_profile()))
    env['PYTHONUNBUFFERED'] = '1'
    return env


def use_ros_env_here() -> None:
    """Apply the same DDS settings to this process (call before rclpy.init)."""
    os.environ.setdefault('ROS_AUTOMATIC_DISCOVERY_RANGE', 'LOCALHOST')
    use_large_frame_profile()


PROFILE_VARS = ('FASTRTPS_DEFAULT_PROFILES_FILE', 'FASTDDS_DEFAULT_PROFILES_FILE')


def use_container_profile() -> str:
    """Load the container's Fast DDS profile unless the user set one; return a line.

    Call before rclpy.init. edge_infer's own large-frame profile, which the
    launch file and the edge_infer commands export for every process, is
    replaced: its 64 MiB sending segment is for cameras and players, and the
    container sends results (config/fastdds_container.xml: 16 MiB). A
    profile of the user's own is kept, and said.
    """
    exported = os.environ.get('FASTRTPS_DEFAULT_PROFILES_FILE', '')
    if exported and _is_our_profile(exported) and \
            not os.environ.get('FASTDDS_DEFAULT_PROFILES_FILE'):
        del os.environ['FASTRTPS_DEFAULT_PROFILES_FILE']
    return use_large_frame_profile(paths.fastdds_container_profile(),
                                   'camera frames in, results and debug images up to 16 MiB out')


def _is_our_profile(path: str) -> bool:
    """Return whether ``path`` is edge_infer's large-frame profile, wherever it lies.

    The same file by content and name counts: ``colcon test`` and a source
    checkout export the source tree's copy, the installed package reads its
    share folder's.
    """
    ours = paths.fastdds_profile()
    if path == str(ours):
        return True
    try:
        return (pathlib.Path(path).name == ours.name
                and pathlib.Path(path).read_bytes() == ours.read_bytes())
    except OSError:
        return False


def use_large_frame_profile(profile: Optional[pathlib.Path] = None,
                            what: str = 'large camera frames') -> str:
    """Load the large-frame Fast DDS profile in this process unless one is set; return a line.

    Call before rclpy.init (Fast DDS reads it at the first participant). A
    container started by hand (``perception_container --ros-args ...``)
    then carries camera frames as large as one started by ``ros2 launch`` or
    the edge_infer commands; a profile the user set is kept, and said.
    """
    rmw = os.environ.get('RMW_IMPLEMENTATION', 'rmw_fastrtps_cpp')
    if not rmw.startswith('rmw_fastrtps'):
        return f'DDS: {rmw}, not Fast DDS: its own settings bound the frame size'
    for var in PROFILE_VARS:
        if os.environ.get(var):
            return f'DDS: Fast DDS profile from ${var}: {os.environ[var]}'
    profile = profile or paths.fastdds_profile()
    os.environ['FASTRTPS_DEFAULT_PROFILES_FILE'] = str(profile)
    return (f'DDS: Fast DDS profile {profile.name} loaded ({what}; '
            f'set $FASTRTPS_DEFAULT_PROFILES_FILE to use your own)')


def launch_python(environ: Optional[Dict[str, str]] = None) -> Optional[str]:
    """Return the Python a launch file should run edge_infer's executables with, or None.

    ``colcon build`` writes the interpreter that ran it into the console
    scripts' ``#!`` line (``/usr/bin/python3`` for a plain ``colcon build``),
    and that Python cannot import what was pip-installed into a virtual
    environment (onnxruntime, rosbags, ...). ``$EDGE_INFER_PYTHON``, else the
    active virtual environment's python (``$VIRTUAL_ENV``), runs the scripts
    instead; None keeps their ``#!`` line.
    """
    env = os.environ if environ is None else environ
    if env.get('EDGE_INFER_PYTHON'):
        return env['EDGE_INFER_PYTHON']
    venv = env.get('VIRTUAL_ENV')
    if venv:
        for name in ('python3', 'python'):
            exe = pathlib.Path(venv) / 'bin' / name
            if os.access(exe, os.X_OK):
                return str(exe)
    return None


def bag_player_cmd(bag: pathlib.Path, python: Optional[str] = None, which=shutil.which,
                   has_package=None) -> List[str]:
    """Return the command that plays ``bag`` once: ``ros2 bag play`` where it can, else ours.

    ``ros2 bag play`` needs ros2cli, ros2bag and the mcap storage plugin. Our
    player (``python -m edge_infer.tools.bag.play``) is started as a Python process,
    not through ``ros2 run``, which does not pass SIGINT on: stopped by a
    launch, it exits 0.
    """
    if has_package is None:
        def has_package(name):
            try:
                from ament_index_python.packages import get_package_prefix
                get_package_prefix(name)
                return True
            except Exception:  # not installed, or no ament index at all
                return False
    if which('ros2') and has_package('ros2bag') and has_package('rosbag2_storage_mcap'):
        return ['ros2', 'bag', 'play', str(bag), '--disable-keyboard-controls']
    return [python or sys.executable, '-m', 'edge_infer.tools.bag.play', str(bag),
            '--wait-for-subscribers', '20']


def free_domain_id(seed: Optional[int] = None) -> int:
    """Pick a ROS domain id (1-101) unlikely to be shared with other graphs."""
    return 1 + (seed if seed is not None else random.randrange(1 << 30)) % 101


PR_SET_PDEATHSIG = 1     # <linux/prctl.h>


def _prctl():
    """Return libc's prctl (Linux), or None."""
    if not sys.platform.startswith('linux'):
        return None
    try:
        import ctypes
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    prctl.restype = ctypes.c_int
    prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong,
                      ctypes.c_ulong]
    return prctl


def _death_signal_setter():
    """Return a preexec_fn that makes the child get SIGTERM when its parent dies (Linux).

    Children run in their own session (a terminal's Ctrl-C reaches only the
    parent, which stops them in order), so nothing else would stop them if
    the parent were killed. The setting survives exec (also the ROS wheels'
    bootstrap re-exec); SIGTERM ends our processes cleanly (rclpy's handler
    shuts their context down). The function is built here, in the parent:
    the child between fork and exec only calls into libc.
    """
    prctl = _prctl()
    if prctl is None:
        return None
    parent, term = os.getpid(), int(signal.SIGTERM)

    def die_with_parent():
        prctl(PR_SET_PDEATHSIG, term, 0, 0, 0)
        if os.getppid() != parent:      # the parent died before the line above
            os.kill(os.getpid(), term)
    return die_with_parent


LAUNCH_PID_ENV = 'EDGE_INFER_LAUNCH_PID'     # set by the launch file: its own pid


def stop_with_parent() -> bool:
    """Have this process get SIGTERM when the process that started it dies (Linux).

    For processes that a launcher we do not control starts: ``ros2 launch``
    killed with SIGTERM (systemd's stop) or SIGKILL exits at once, without
    stopping its children, and left the container running as an orphan that
    still answered on the graph. The launch file names its own pid in
    ``EDGE_INFER_LAUNCH_PID``: a launch that died before this call (a SIGTERM
    in the container's first second: 11 orphans in 500 stops) is found gone,
    where the parent seen then, init, looked like systemd's. A process whose
    parent is init and that no launch started (a service started directly by
    systemd) is left alone. Returns whether the signal was set.
    """
    prctl = _prctl()
    told = os.environ.pop(LAUNCH_PID_ENV, '')   # not passed on to this process's children
    parent = int(told) if told.isdigit() else os.getppid()
    if prctl is None or parent == 1:
        return False
    prctl(PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0)
    if os.getppid() != parent:          # the parent died before the line above
        os.kill(os.getpid(), signal.SIGTERM)
    return True


def spawn(module: str, args: List[str], env: Dict[str, str], log_path=None,
          die_with_parent: bool = True, pipes: bool = False, **kw) -> subprocess.Popen:
    """Run ``python -m module args`` with ``env``; output to ``log_path`` if given.

    ``pipes``: standard input and output are pipes to this process (a child
    that answers requests), standard error goes to ``log_path``.

    The child has its own session (signals are for the parent to forward) and,
    with ``die_with_parent``, gets SIGTERM when the thread that started it
    ends: a killed parent leaves no process behind. Start long-lived children
    from the main thread.
    """
    out = open(log_path, 'wb') if log_path else None
    preexec = _death_signal_setter() if die_with_parent else None
    try:
        sink = subprocess.DEVNULL if out is None else out
        if pipes:
            kw.update(stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=sink)
        else:
            kw.update(stdout=sink, stderr=subprocess.STDOUT)
        return subprocess.Popen([sys.executable, '-m', module, *args], env=env,
                                start_new_session=True, preexec_fn=preexec, **kw)
    finally:
        if out is not None:
            out.close()


def start_container(env: Dict[str, str], params_file: Optional[pathlib.Path] = None,
                    ros_args: Sequence[str] = (), log_path=None) -> subprocess.Popen:
    """Start the perception container with a params file (default config/perception.yaml)."""
    params_file = params_file or paths.config_dir() / 'perception.yaml'
    return spawn('edge_infer.nodes.container_entry',
                 ['--ros-args', '--params-file', str(params_file), *ros_args],
                 env, log_path)


def start_player(bag: pathlib.Path, env: Dict[str, str], args: Sequence[str] = (),
                 log_path=None, **kw) -> subprocess.Popen:
    """Start the bag player on ``bag``."""
    return spawn('edge_infer.tools.bag.play', [str(bag), *args], env, log_path, **kw)


def stop(proc: subprocess.Popen, timeout: float = 10.0) -> int:
    """SIGINT (a clean ROS shutdown), then SIGKILL after ``timeout``; return the code."""
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGINT)
        except ProcessLookupError:
            pass
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    return proc.returncode


def clean_stale_shm(env: Optional[Dict[str, str]] = None, log=print) -> Optional[Dict[str, int]]:
    """Remove the Fast DDS shared-memory files of dead processes (``fastdds shm clean``).

    A participant killed with SIGKILL cannot unlink its segment
    (/dev/shm/fastrtps_<id> and its _el lock file). Fast DDS's own tool removes
    only files whose lock no live process holds, so this is safe while other
    ROS processes run. Returns the tool's counts, or None (one line logged)
    when the tool is not installed.
    """
    env = dict(os.environ if env is None else env)
    tool = shutil.which('fastdds', path=env.get('PATH'))
    if tool is None:
        tool = shutil.which('fastdds', path=str(pathlib.Path(sys.executable).parent))
    if tool is None:
        log('shared memory: the fastdds tool is not installed; Fast DDS files of killed '
            'processes are left in /dev/shm (remove them with `fastdds shm clean`)')
        return None
    try:
        res = subprocess.run([tool, 'shm', 'clean'], env=env, capture_output=True, text=True,
                             timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        log(f'shared memory: `fastdds shm clean` failed: {exc}')
        return None
    counts = {key.replace(' ', '_'): int(n) for n, key in re.findall(
        r'(\d+) (zombie ports cleaned|zombie segments cleaned|ports in use|segments in use)',
        res.stdout)}
    if res.returncode != 0 or not counts:
        log(f'shared memory: `fastdds shm clean` exited {res.returncode}: '
            f'{(res.stderr or res.stdout).strip()[:200]}')
        return None
    if counts.get('zombie_segments_cleaned') or counts.get('zombie_ports_cleaned'):
        log('shared memory: removed what killed processes left in /dev/shm: '
            f"{counts.get('zombie_segments_cleaned', 0)} segment(s), "
            f"{counts.get('zombie_ports_cleaned', 0)} port(s) (fastdds shm clean)")
    return counts

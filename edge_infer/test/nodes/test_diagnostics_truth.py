# Copyright 2026 edge_infer contributors. Apache-2.0.
"""/diagnostics tells the truth about a running container (real processes, real rclpy).

- a node whose configure fails (a model name's typo in the params file)
  publishes ERROR with the reason, again every period (issue 29, case 6);
- frames dropped faster than ``drop_rate_warn`` are WARN; a node that stops
  publishing results goes STALE and says why; a result ends it (case 7).
"""

import subprocess
import sys

import cv2
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from edge_infer import paths, procs
from edge_infer.nodes.lifecycle_client import LifecycleClient
from edge_infer_msgs.msg import Classification
import pytest
from rclpy.qos import qos_profile_sensor_data
from sensor_msgs.msg import CompressedImage
import yaml

ONLY_CLASSIFIER = {'nodes': ['classifier'], 'telemetry': ''}


def _watch(ros, node):
    """Subscribe to /diagnostics; return the list of (level, message, values) of ``node``."""
    seen = []

    def on_diag(msg):
        for st in msg.status:
            if st.name.startswith(f'{node}:'):
                seen.append((st.level, st.message, {kv.key: kv.value for kv in st.values}))
    return seen, ros.node.create_subscription(DiagnosticArray, '/diagnostics', on_diag, 50)


def test_a_node_that_fails_to_configure_publishes_error_with_the_reason(ros, container):
    seen, sub = _watch(ros, '/classifier')
    try:
        container({'perception_container': {**ONLY_CLASSIFIER, 'autostart': True},
                   'classifier': {'model': 'mobilenet_v2_typo', 'diagnostics_period': 0.2}})
        assert ros.spin_until(lambda: len([s for s in seen if s[0] == DiagnosticStatus.ERROR])
                              >= 3, 60), seen     # said again each period, not once
        errors = [s for s in seen if s[0] == DiagnosticStatus.ERROR]
        level, message, values = errors[-1]
        assert message.startswith('configure failed: ') and "'mobilenet_v2_typo'" in message
        assert values['model'] == 'mobilenet_v2_typo' and values['state'] == 'unconfigured'
        assert all(s[0] == DiagnosticStatus.ERROR for s in seen), seen
    finally:
        ros.node.destroy_subscription(sub)


# the container with the classifier's activation refused (as a middleware that
# refuses its subscription would)
BROKEN_ACTIVATE = """
import sys
from edge_infer.nodes import perception_node as pn
def refused(self):
    raise RuntimeError('subscription refused (test harness)')
pn.PerceptionNode._activate = refused
from edge_infer.nodes.container import main
sys.exit(main())
"""


def test_a_node_that_fails_to_activate_publishes_error_with_the_reason(ros, tmp_path):
    params = yaml.safe_load((paths.config_dir() / 'perception.yaml').read_text())
    params['perception_container']['ros__parameters'].update(ONLY_CLASSIFIER, autostart=True)
    params['classifier']['ros__parameters']['diagnostics_period'] = 0.2
    pfile = tmp_path / 'params.yaml'
    pfile.write_text(yaml.safe_dump(params))
    seen, sub = _watch(ros, '/classifier')
    with open(tmp_path / 'container.log', 'wb') as out:
        proc = subprocess.Popen([sys.executable, '-c', BROKEN_ACTIVATE, '--ros-args',
                                 '--params-file', str(pfile)], env=ros.env, stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True)
    try:
        # said at the failure, then every period from the state it fell back to
        assert ros.spin_until(lambda: any(s[2].get('state') == 'inactive' for s in seen), 90), \
            (seen[-3:], (tmp_path / 'container.log').read_text()[-3000:])
        errors = [s for s in seen if s[0] == DiagnosticStatus.ERROR]
        assert errors == seen, seen
        reason = 'RuntimeError: subscription refused (test harness)'
        assert errors[-1][1] == f'activate failed: {reason}', errors[-1]
    finally:
        ros.node.destroy_subscription(sub)
        procs.stop(proc)


@pytest.mark.slow
def test_drops_warn_and_a_silent_node_goes_stale(ros, container, footage):
    stale_s = 1.5
    container({'perception_container': ONLY_CLASSIFIER,
               'classifier': {'diagnostics_period': 0.2, 'diagnostics_window_s': 2.0,
                              'drop_rate_warn': 0.3, 'stale_after_s': stale_s,
                              'drift_threshold': 0.0, 'reselect_duty': 0.0}})
    LifecycleClient(ros.node, ros.executor).bring_up('/classifier', timeout=90)
    seen, sub = _watch(ros, '/classifier')
    results = []
    subs = [sub, ros.node.create_subscription(Classification, '/classifier/classification',
                                              results.append, 50)]
    pub = ros.node.create_publisher(CompressedImage, '/camera/image_raw/compressed',
                                    qos_profile_sensor_data)
    photo = next(p for p in footage['photos'] if p.name == 'chelsea.png')
    jpeg = cv2.imencode('.jpg', cv2.imread(str(photo)))[1].tobytes()

    def burst():    # frames back to back: the model takes the newest, the others drop
        for _ in range(8):
            pub.publish(CompressedImage(format='jpeg', data=jpeg))
        ros.spin_until(lambda: False, 0.1)
        return bool(seen) and seen[-1][0] == DiagnosticStatus.WARN

    def level_is(level):
        return lambda: bool(seen) and seen[-1][0] == level
    try:
        assert ros.spin_until(lambda: pub.get_subscription_count() > 0, 20)
        assert any(burst() for _ in range(100)), seen[-3:]
        level, message, values = seen[-1]
        assert 'frames dropped in the last 2 s' in message and float(
            values['dropped_share_recently']) > 0.3, (message, values)
        # memory per state: the container's, in every node's status
        assert values['state'] == 'active' and float(values['process_rss_mb']) > 50, values
        assert values['runners_up_open'] == '0'     # reselect_duty 0: none is opened
        assert results
        # the camera stops: no result for stale_after_s -> STALE, and why
        assert ros.spin_until(level_is(DiagnosticStatus.STALE), stale_s + 10), seen[-3:]
        level, message, values = seen[-1]
        assert message.startswith('no result published for ') and 'no frame received' in message
        assert float(values['seconds_since_result']) >= stale_s
        n = len(results)    # a result ends it
        pub.publish(CompressedImage(format='jpeg', data=jpeg))
        assert ros.spin_until(lambda: len(results) > n and seen[-1][0] != DiagnosticStatus.STALE,
                              20), seen[-3:]
    finally:
        for s in subs:
            ros.node.destroy_subscription(s)
        ros.node.destroy_publisher(pub)

# Copyright 2026 edge_infer contributors. Apache-2.0.
"""Compressed frames through a running container (real processes, real rclpy).

A JPEG with corrupt entropy-coded data is rejected with its reason (not
published as a wrong result), a complete JPEG followed by padding bytes is
served, and /diagnostics returns to OK once rejections are out of its window.
"""

import time

import cv2
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from edge_infer.nodes.lifecycle_client import LifecycleClient
from edge_infer_msgs.msg import Classification
import pytest
from rclpy.qos import qos_profile_sensor_data
from sensor_msgs.msg import CompressedImage


def _corrupt_entropy(data: bytes, n: int = 600) -> bytes:
    sos = data.find(b'\xff\xda')
    start = sos + 2 + int.from_bytes(data[sos + 2:sos + 4], 'big')
    mid = (start + len(data)) // 2
    return data[:mid] + bytes(n) + data[mid + n:]


@pytest.mark.slow
def test_corrupt_jpeg_rejected_padded_jpeg_served_diagnostics_recover(ros, container, footage):
    window = 1.5
    # frames come one at a time with pauses: no STALE between them (stale_after_s 0)
    container({'classifier': {'diagnostics_period': 0.1, 'diagnostics_window_s': window,
                              'drift_threshold': 0.0, 'stale_after_s': 0.0}})
    LifecycleClient(ros.node, ros.executor).bring_up('/classifier', timeout=60)
    results, diag = [], []

    def on_diag(msg):
        for st in msg.status:
            if st.name.startswith('/classifier:'):
                diag.append((st.level, st.message, {kv.key: kv.value for kv in st.values}))
    subs = [ros.node.create_subscription(Classification, '/classifier/classification',
                                         results.append, 50),
            ros.node.create_subscription(DiagnosticArray, '/diagnostics', on_diag, 50)]
    pub = ros.node.create_publisher(CompressedImage, '/camera/image_raw/compressed',
                                    qos_profile_sensor_data)
    assert ros.spin_until(lambda: pub.get_subscription_count() > 0, 20)
    photo = next(p for p in footage['photos'] if p.name == 'chelsea.png')
    good = cv2.imencode('.jpg', cv2.imread(str(photo)))[1].tobytes()

    def send(data, stamp, done, tries=5):
        for _ in range(tries):      # best effort: re-send only if it never arrived
            msg = CompressedImage(format='jpeg', data=data)
            msg.header.stamp.sec = stamp
            pub.publish(msg)
            if ros.spin_until(done, 3):
                return True
        return False

    def stamped(s):
        return lambda: any(m.header.stamp.sec == s for m in results)

    def rejected():
        return int(diag[-1][2]['rejected']) if diag else -1
    try:
        assert send(good, 1, stamped(1))
        assert ros.spin_until(lambda: diag and diag[-1][0] == DiagnosticStatus.OK, 5)
        # one truncated frame: WARN, then OK again once it is out of the window
        assert send(good[: len(good) // 2], 2, lambda: rejected() == 1)
        assert diag[-1][0] == DiagnosticStatus.WARN and 'truncated JPEG' in diag[-1][1]
        t0 = time.monotonic()
        assert ros.spin_until(lambda: diag[-1][0] == DiagnosticStatus.OK, window + 5), diag[-1]
        assert time.monotonic() - t0 < window + 5
        assert rejected() == 1 and diag[-1][2]['rejected_recently'] == '0'
        # corrupt entropy data, markers intact: rejected with its reason, no result
        assert send(_corrupt_entropy(good), 3, lambda: rejected() == 2)
        level, message, values = diag[-1]
        assert level == DiagnosticStatus.WARN and 'corrupt JPEG' in message, message
        assert values['last_error'].startswith('corrupt JPEG (')
        # a complete JPEG with padding after its end marker (MJPEG cameras): served
        assert send(good + b'\x00' * 7, 4, stamped(4))
        assert not stamped(2)() and not stamped(3)()
    finally:
        for s in subs:
            ros.node.destroy_subscription(s)

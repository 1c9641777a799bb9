# Copyright 2026 edge_infer contributors. Apache-2.0.
"""~/debug_image: nothing drawn while nobody listens; boxes drawn on the frame when someone does.

The container runs as its own process over real DDS; this test publishes a
real photo (the astronaut) and reads /diagnostics and the debug images.
"""

import cv2
from edge_infer_msgs.msg import DetectionArray
import numpy as np
import pytest
from sensor_msgs.msg import Image
from test_integration import _bring_up, _image_msg, _photo, _publisher, Results

pytestmark = pytest.mark.slow      # a container, watched with and without a subscriber


def test_debug_image_costs_nothing_unwatched_and_shows_the_boxes_when_watched(
        ros, container, footage):
    proc = container({'classifier': {'debug_image_rate_hz': 0.0}})
    results = Results(ros)
    _bring_up(ros)
    bgr = cv2.imread(str(_photo(footage, 'astronaut.png')))
    rgb = np.ascontiguousarray(bgr[:, :, ::-1])
    pub = _publisher(ros, Image, '/camera/image_raw')
    try:
        # nobody subscribes to the debug image: results come, no debug image is drawn
        for k in range(10):         # best-effort camera QoS: a frame may be lost
            pub.publish(_image_msg(rgb, 1_000 + k))
            ros.spin_until(lambda: len(results.det) > k, 5)
            if len(results.det) >= 5:
                break
        assert len(results.det) >= 5
        ros.spin_until(lambda: results.diag.get('/detector', {}).get('processed') == str(
            len(results.det)), 5)
        diag = results.diag['/detector']
        assert diag['debug_images'] == '0' and diag['debug_image_subscribers'] == '0'
        # someone looks (rqt_image_view, RViz): the frame with the boxes drawn on it
        debug, dets = [], {}
        sub = ros.node.create_subscription(Image, '/detector/debug_image', debug.append, 5)
        dsub = ros.node.create_subscription(
            DetectionArray, '/detector/detections',
            lambda m: dets.__setitem__(m.header.stamp.nanosec, m), 10)
        assert ros.spin_until(lambda: results.diag['/detector'].get(
            'debug_image_subscribers') == '1', 10)
        for k in range(5):
            pub.publish(_image_msg(rgb, 2_000 + k))
            ros.spin_until(lambda: len(debug) > k, 3)
        assert debug, 'no debug image while subscribed'
        msg = debug[-1]
        assert msg.encoding == 'bgr8'
        assert (msg.width, msg.height) == (rgb.shape[1], rgb.shape[0])
        assert msg.header.frame_id == 'test_camera' and msg.header.stamp.nanosec in dets
        drawn = np.frombuffer(msg.data, np.uint8).reshape(msg.height, msg.width, 3)
        det = dets[msg.header.stamp.nanosec]
        assert det.detections and any(d.label == 'person' for d in det.detections)
        changed = np.any(drawn != bgr, axis=2)
        for d in det.detections:        # each published box is drawn on the source pixels
            x1, y1 = int(d.center_x - d.size_x / 2), int(d.center_y - d.size_y / 2)
            x2, y2 = int(d.center_x + d.size_x / 2), int(d.center_y + d.size_y / 2)
            box = changed[max(0, y1 - 3):y2 + 3, max(0, x1 - 3):x2 + 3]
            assert box.any(), f'nothing drawn for {d.label} at {(x1, y1, x2, y2)}'
        far = changed[bgr.shape[0] // 2:, :]     # no box there: the photo's own pixels
        assert changed.mean() < 0.2 and far.mean() < changed.mean() + 0.01
        assert ros.spin_until(lambda: int(results.diag['/detector'].get(
            'debug_images', 0)) >= 1, 5)
        # the classifier has it switched off: no publisher at all
        names = [n for n, _ in ros.node.get_topic_names_and_types()]
        assert '/classifier/debug_image' not in names
        ros.node.destroy_subscription(sub)
        ros.node.destroy_subscription(dsub)
    finally:
        results.close()
    assert proc.poll() is None

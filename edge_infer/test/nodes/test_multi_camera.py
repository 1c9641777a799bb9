# Copyright 2026 edge_infer contributors. Apache-2.0.
"""Several cameras, one node: one session serves them; each camera keeps its own outputs.

A perception node (MobileNetV2, ONNX Runtime forced, in this process, real
rclpy) with three ``image_topics``. Frames are handed to each camera's
subscription callback, as the middleware would; results are read from the
cameras' own topics with a real subscription.
"""

from edge_infer.nodes.perception_params import cameras, depth_topics, PARAMETERS
from edge_infer_msgs.msg import Classification, EnergyRecord
import numpy as np
import pytest
from rclpy.serialization import serialize_message
from sensor_msgs.msg import Image

NAMES = ('front', 'left', 'right')


def _values(**p):
    values = {k: v for k, (v, _) in PARAMETERS.items()}
    values.update(p)
    return values


def test_the_cameras_of_the_parameters_and_the_ones_refused():
    assert cameras(_values(image_topic='/cam')) == [('', '/cam')]
    assert cameras(_values(image_topics=['/a'])) == [('', '/a')]   # one: the node as before
    assert cameras(_values(image_topics=['/a', '/b'])) == [('camera0', '/a'), ('camera1', '/b')]
    assert cameras(_values(image_topics=['/a', '/b'], camera_names=['front', 'rear'])) == \
        [('front', '/a'), ('rear', '/b')]
    assert depth_topics(_values(depth_topic='/d')) == ['/d']
    assert depth_topics(_values(image_topics=['/a', '/b'])) == ['', '']
    assert depth_topics(_values(image_topics=['/a', '/b'], depth_topics=['', '/b/depth'])) == \
        ['', '/b/depth']
    refused = [
        ({'image_topics': ['/a', '/b'], 'camera_names': ['front']}, r'1 name\(s\) for 2'),
        ({'image_topics': ['/a', '/b'], 'camera_names': ['x', 'x']}, 'distinct names'),
        ({'image_topics': ['/a', '/b'], 'camera_names': ['x', '2d']}, 'starting with a letter'),
        ({'image_topics': ['/a', '/b'], 'camera_names': ['x', 'café']}, 'starting with a letter'),
        ({'image_topics': ['/a', '/b'], 'camera_names': ['x', 'a/b']}, 'starting with a letter'),
        ({'image_topics': ['/a', '/a']}, 'distinct, non-empty'),
        ({'image_topics': ['/a', '']}, 'distinct, non-empty'),
        ({'image_topics': ['/a'], 'camera_names': ['x']}, 'give two topics or more'),
        ({'depth_topics': ['/d']}, "'depth_topics' is for the cameras of image_topics"),
        ({'image_topics': ['/a', '/b'], 'depth_topics': ['/d']}, r'1 topic\(s\) for 2'),
        ({'image_topics': ['/a', '/b'], 'camera_info_topic': '/i'}, 'beside its depth_topics'),
        ({'image_topics': ['/a', '/b'], 'output_topic': '/out'}, "'output_topic'"),
        ({'image_topics': ['/a', '/b'], 'depth_topic': '/depth'}, 'give depth_topics'),
    ]
    for p, says in refused:
        with pytest.raises(ValueError, match=says):
            cameras(_values(**p))


def _frame(k: int, size, frame_id: str) -> bytes:
    w, h = size
    img = Image(height=h, width=w, encoding='rgb8', step=w * 3,
                data=np.random.default_rng(k).integers(0, 255, w * h * 3,
                                                       dtype=np.uint8).tobytes())
    img.header.stamp.sec, img.header.stamp.nanosec, img.header.frame_id = 100 + k, 5, frame_id
    return serialize_message(img)


NODE = {'model': 'mobilenet_v2', 'backend': 'onnxruntime/cpu/t1',
        'image_topics': [f'/mc_{n}/image' for n in NAMES], 'camera_names': list(NAMES),
        'reselect_duty': 0.0, 'diagnostics_period': 0.0, 'debug_image_rate_hz': 0.0}


def _listen(ros, names):
    got = {n: [] for n in names}
    energy = {n: [] for n in names}
    subs = []
    for n in names:
        subs.append(ros.node.create_subscription(Classification, f'/mc/{n}/classification',
                                                 got[n].append, 50))
        subs.append(ros.node.create_subscription(EnergyRecord, f'/mc/{n}/energy',
                                                 energy[n].append, 50))
    assert ros.spin_until(lambda: all(s.get_publisher_count() for s in subs), 10)
    return got, energy, subs


def test_each_camera_gets_its_own_results_headers_and_counters(ros, active_node, data_home):
    sizes = {'front': (224, 224), 'left': (320, 240), 'right': (160, 120)}
    with active_node('mc', NODE) as node:
        got, energy, subs = _listen(ros, NAMES)
        try:
            cams = {c.name: c for c in node.parts.cameras}
            assert [c.name for c in node.parts.cameras] == list(NAMES)
            for k in range(4):
                for n in ('front', 'left'):     # 'right' stays silent
                    cams[n].feed._on_frame(_frame(k, sizes[n], f'{n}_optical'))
                assert ros.spin_until(lambda: all(len(got[n]) == k + 1
                                                  for n in ('front', 'left')), 20), got
            assert ros.spin_until(lambda: all(len(energy[n]) == 4
                                              for n in ('front', 'left')), 10)
        finally:
            for s in subs:
                ros.node.destroy_subscription(s)
        for n in ('front', 'left'):
            # each result: its own frame's header and size, on its own camera's topic
            assert [(m.header.stamp.sec, m.header.stamp.nanosec, m.header.frame_id)
                    for m in got[n]] == [(100 + k, 5, f'{n}_optical') for k in range(4)]
            assert {(m.image_width, m.image_height) for m in got[n]} == {sizes[n]}
            assert all(m.results for m in got[n])
            assert [r.header.frame_id for r in energy[n]] == [f'{n}_optical'] * 4
            assert cams[n].stats.processed == 4 and cams[n].stats.received == 4
        assert got['right'] == [] and cams['right'].stats.received == 0
        assert node.stats.processed == 8 and node.stats.received == 8    # the totals
        status = {kv.key: kv.value for kv in node.diagnostic_status().values}
        assert status['front.processed'] == '4' and status['right.received'] == '0'
        assert status['processed'] == '8'
        assert len(status['input_topic'].split(', ')) == 3


def test_a_flooding_camera_does_not_starve_the_others(active_node, data_home):
    """One camera sends 3 frames for each of the others' one: each is served once a round."""
    with active_node('mc', NODE) as node:
        cams = {c.name: c for c in node.parts.cameras}
        node.frames.cancel()        # the frame thread held: the slots fill as under load
        node.frames.join()
        rounds = 6
        for k in range(rounds):
            front = (_frame(10 * k + j, (224, 224), 'front') for j in range(3))
            cams['front'].feed._on_frame(next(front))
            cams['left'].feed._on_frame(_frame(k, (224, 224), 'left'))
            cams['front'].feed._on_frame(next(front))
            cams['right'].feed._on_frame(_frame(k, (224, 224), 'right'))
            cams['front'].feed._on_frame(next(front))
            order = []
            while True:     # what waits, taken the frame thread's way
                got = node.frames.slots.take(timeout=0)
                if got is None:
                    break
                order.append((got[0], cams['front'].feed.parse(got[1][1])[0][0]))
            # round robin: each camera once, front (first in) with its newest frame
            assert order == [(0, 100 + 10 * k + 2), (1, 100 + k), (2, 100 + k)], order
        # front's replaced frames are counted as dropped, nobody else's
        assert cams['front'].stats.dropped == 2 * rounds
        assert cams['left'].stats.dropped == cams['right'].stats.dropped == 0
        assert node.stats.dropped == 2 * rounds


def test_the_launch_arguments_give_every_perception_node_the_cameras():
    from edge_infer import graph
    from edge_infer.validate import ArgumentError, check_arguments
    cams = ['/front/image_raw', '/left/image_raw']
    (p,) = graph.plan(node_params={'image_topics': cams, 'camera_names': ['front', 'left']})
    hosted = p.params['perception_container']['ros__parameters']['nodes']
    for n in hosted:
        own = p.params[n]['ros__parameters']
        assert own['image_topics'] == cams and own['camera_names'] == ['front', 'left']
    with pytest.raises(graph.GraphError, match="'camera_names' has 1 name"):
        graph.plan(node_params={'image_topics': cams, 'camera_names': ['front']})
    with pytest.raises(ArgumentError, match="launch argument 'cameras'"):
        check_arguments({'cameras': '/front/image_raw, bad topic'})


def test_batched_frames_keep_their_own_camera_header_energy_and_a_silent_one_waits_only_its_timeout(  # noqa: E501
        ros, active_node, data_home):
    node_params = {**NODE, 'batching': 'on', 'batch_timeout_ms': 600000.0}
    with active_node('mc', node_params) as node:
        assert 'batches of up to 3' in node.parts.live.batch.why
        assert node.frames.batch_wait_s == 600.0
        got, energy, subs = _listen(ros, NAMES)
        try:
            cams = {c.name: c for c in node.parts.cameras}
            for k in range(3):      # a batch waits for every camera: then one run of 3
                for n in NAMES:
                    cams[n].feed._on_frame(_frame(10 * k + len(n), (224, 224), f'{n}_optical'))
                assert ros.spin_until(lambda: all(len(got[n]) == k + 1 for n in NAMES), 20)
            assert ros.spin_until(lambda: all(len(energy[n]) == 3 for n in NAMES), 10)
        finally:
            for s in subs:
                ros.node.destroy_subscription(s)
        for n in NAMES:
            assert [(m.header.stamp.sec, m.header.frame_id) for m in got[n]] == \
                [(100 + 10 * k + len(n), f'{n}_optical') for k in range(3)]
            assert cams[n].stats.batched == cams[n].stats.processed == 3
            assert [r.header.frame_id for r in energy[n]] == [f'{n}_optical'] * 3
            assert all('1/3 of a batch run of 3 frames' in r.method for r in energy[n])
        # each frame's result is the one it gets alone
        alone = node.parts.live.model.infer(node.camera.parse(_frame(10 + 5, (224, 224),
                                                                     'front_optical'))[1])
        assert got['front'][1].results[0].class_id == int(alone.output.class_ids[0])
        status = {kv.key: kv.value for kv in node.diagnostic_status().values}
        assert status['batched'] == '9' and status['front.batched'] == '3'
        # batching auto holds no batch session until frames first wait together:
        # those run one at a time while it opens in the background, the next batch
        plan = node.parts.live.batch
        plan.close()
        got, _, subs = _listen(ros, NAMES)
        try:
            for k in range(2):
                for n in NAMES:
                    cams[n].feed._on_frame(_frame(k, (224, 224), f'{n}_optical'))
                assert ros.spin_until(lambda: all(len(got[n]) == k + 1 for n in NAMES), 20)
                assert ros.spin_until(lambda: plan.model is not None, 20)
        finally:
            for s in subs:
                ros.node.destroy_subscription(s)
        assert node.stats.batched == 9 + 3 and node.stats.processed == 9 + 6
    # an incomplete batch goes out after batch_timeout_ms: a silent camera delays, never stops
    with active_node('mc', {**node_params, 'batch_timeout_ms': 300.0}) as node:
        got, _, subs = _listen(ros, NAMES)
        try:
            front = node.parts.cameras[0]
            front.feed._on_frame(_frame(1, (224, 224), 'front_optical'))
            assert ros.spin_until(lambda: len(got['front']) == 1, 20)
        finally:
            for s in subs:
                ros.node.destroy_subscription(s)
        assert front.stats.processed == 1 and front.stats.batched == 0
        assert got['front'][0].header.stamp.sec == 101


def test_a_camera_with_depth_gets_its_3d_and_one_without_gets_none(ros, active_node, data_home,
                                                                   footage):
    """depth_topics: each camera its own depth camera (or none); 3D on ~/<camera>/vision/..."""
    import cv2
    from rclpy.qos import qos_profile_sensor_data
    from sensor_msgs.msg import CameraInfo
    from vision_msgs.msg import Detection2DArray, Detection3DArray
    cap = cv2.VideoCapture(str(footage['video']))
    ok, bgr = cap.read()
    cap.release()
    assert ok
    h, w = bgr.shape[:2]
    stamp = (200, 0)

    def header(msg, frame_id):
        msg.header.stamp.sec, msg.header.stamp.nanosec = stamp
        msg.header.frame_id = frame_id
        return msg
    depth = header(Image(height=h, width=w, encoding='16UC1', step=w * 2,
                         data=np.full((h, w), 3000, np.uint16).tobytes()), 'front_depth')
    info = header(CameraInfo(width=w, height=h, k=[500.0, 0.0, (w - 1) / 2, 0.0, 500.0,
                                                   (h - 1) / 2, 0.0, 0.0, 1.0]), 'front_depth')
    colour = header(Image(height=h, width=w, encoding='bgr8', step=w * 3,
                          data=bgr.tobytes()), 'front_optical')
    params = {**NODE, 'model': 'nanodet', 'image_topics': ['/mcd_front/image', '/mcd_left/image'],
              'camera_names': ['front', 'left'], 'depth_topics': ['/mcd_front/depth/image', '']}
    with active_node('mc', params) as node:
        front, left = node.parts.cameras
        assert front.tracks_and_depth.depth is not None and left.tracks_and_depth.depth is None
        pubs = [ros.node.create_publisher(Image, '/mcd_front/depth/image',
                                          qos_profile_sensor_data),
                ros.node.create_publisher(CameraInfo, '/mcd_front/depth/camera_info',
                                          qos_profile_sensor_data)]
        got = {t: [] for t in ('front/vision/detections_3d', 'front/vision/detections',
                               'left/vision/detections')}
        subs = [ros.node.create_subscription(Detection3DArray if t.endswith('3d')
                                             else Detection2DArray, f'/mc/{t}',
                                             got[t].append, 10) for t in got]
        try:
            def taken():
                pubs[1].publish(info)
                pubs[0].publish(depth)
                s = front.tracks_and_depth.status()
                return s['camera_info_ok'] and s['depth_newest_stamp'] == '200.000000'
            assert ros.spin_until(taken, 20), front.tracks_and_depth.status()
            front.feed._on_frame(serialize_message(colour))
            left.feed._on_frame(serialize_message(header(colour, 'left_optical')))
            assert ros.spin_until(lambda: got['front/vision/detections_3d'] and
                                  got['left/vision/detections'], 20), got
        finally:
            for x in subs:
                ros.node.destroy_subscription(x)
            for x in pubs:
                ros.node.destroy_publisher(x)
        (d3,) = got['front/vision/detections_3d']
        assert d3.header.stamp.sec == 200 and len(d3.detections) >= 2      # the people
        assert all(abs(d.bbox.center.position.z - 3.0) < 0.06 for d in d3.detections)
        assert ros.node.count_publishers('/mc/left/vision/detections_3d') == 0
        assert got['left/vision/detections'][0].header.frame_id == 'left_optical'

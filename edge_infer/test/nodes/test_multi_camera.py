# Copyright 2026 edge_infer contributors. Apache-2.0.
"""Several cameras, one node: one session serves them; each camera keeps its own outputs.

A perception node (MobileNetV2, ONNX Runtime forced, in this process, real
rclpy) with three ``image_topics``. Frames are handed to each camera's
subscription callback, as the middleware would; results are read from the
cameras' own topics with a real subscription.
"""

from edge_infer.nodes.perception_params import cameras, PARAMETERS
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
    refused = [
        ({'image_topics': ['/a', '/b'], 'camera_names': ['front']}, r'1 name\(s\) for 2'),
        ({'image_topics': ['/a', '/b'], 'camera_names': ['x', 'x']}, 'distinct names'),
        ({'image_topics': ['/a', '/b'], 'camera_names': ['x', '2d']}, 'starting with a letter'),
        ({'image_topics': ['/a', '/b'], 'camera_names': ['x', 'café']}, 'starting with a letter'),
        ({'image_topics': ['/a', '/b'], 'camera_names': ['x', 'a/b']}, 'starting with a letter'),
        ({'image_topics': ['/a', '/a']}, 'distinct, non-empty'),
        ({'image_topics': ['/a', '']}, 'distinct, non-empty'),
        ({'image_topics': ['/a'], 'camera_names': ['x']}, 'give two topics or more'),
        ({'image_topics': ['/a', '/b'], 'output_topic': '/out'}, "'output_topic'"),
        ({'image_topics': ['/a', '/b'], 'depth_topic': '/depth'}, "'depth_topic'"),
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
    """One camera sends 3 frames for each of the others' one: theirs go first, none is lost."""
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
                order.append(got[0])
            # the oldest arrival first: left and right came before front's newest
            assert order == [1, 2, 0], order
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

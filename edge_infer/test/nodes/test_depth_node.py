# Copyright 2026 edge_infer contributors. Apache-2.0.
"""The detector with a depth camera, over real DDS: 3D on exact geometry, bad depth counted.

The container hosts the detector with ``depth_topic`` set; this test plays
the depth camera: a real video frame (the people found by the model) and a
synthetic aligned depth frame in which every detected box stands at a known
distance in front of a wall 2 m further back (1 % noise, 10 % holes). The
3D centre must come back within 2 % of the distance, with the colour
frame's stamp and the 2D ids. Then each bad input (depth of another size,
an unknown encoding, a CameraInfo whose K is zero, a depth stamp far from
the colour's) gets its counter on /diagnostics while the 2D results go on.
A pose node puts its keypoints in 3D on ``~/poses_3d``.
"""

import contextlib

import cv2
from diagnostic_msgs.msg import DiagnosticArray
from edge_infer.nodes.lifecycle_client import LifecycleClient
import numpy as np
import pytest
from rclpy.qos import qos_profile_sensor_data
from sensor_msgs.msg import CameraInfo, Image

pytestmark = pytest.mark.slow       # a container and a model

DEPTH, INFO, CAMERA = '/test/depth/image_raw', '/test/depth/camera_info', '/camera/image_raw'


def _stamp(header) -> int:
    return header.stamp.sec * 1_000_000_000 + header.stamp.nanosec


def _header(msg, stamp_ns: int):
    msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(stamp_ns, 1_000_000_000)
    msg.header.frame_id = 'test_camera'
    return msg


def _info(width, height, stamp_ns, k=None) -> CameraInfo:
    f = 500.0
    msg = _header(CameraInfo(), stamp_ns)
    msg.width, msg.height = width, height
    msg.k = k if k is not None else [
        f, 0.0, (width - 1) / 2, 0.0, f, (height - 1) / 2, 0.0, 0.0, 1.0]
    return msg


def _depth(boxes, width, height, distance_m, stamp_ns, seed, encoding='16UC1') -> Image:
    """Return a depth image: a wall at distance + 2 m, each box at ``distance_m``."""
    rng = np.random.default_rng(seed)
    z = np.full((height, width), distance_m + 2.0, np.float64)
    for x1, y1, x2, y2 in boxes:
        z[int(y1):int(np.ceil(y2)), int(x1):int(np.ceil(x2))] = distance_m
    z *= 1 + 0.01 * rng.standard_normal(z.shape)
    z[rng.random(z.shape) < 0.10] = 0           # holes
    msg = _header(Image(), stamp_ns)
    msg.height, msg.width, msg.encoding = height, width, encoding
    if encoding == '32FC1':
        pixels = z.astype(np.float32)
    else:
        pixels = np.round(z * 1000).astype(np.uint16)
    msg.step = width * pixels.itemsize
    msg.data = pixels.tobytes()
    return msg


def _colour(rgb, stamp_ns) -> Image:
    msg = _header(Image(), stamp_ns)
    msg.height, msg.width = rgb.shape[:2]
    msg.encoding, msg.step, msg.data = 'rgb8', rgb.shape[1] * 3, rgb.tobytes()
    return msg


def _diagnostics(ros, node: str, values: dict):
    """Subscribe to /diagnostics; ``values`` takes ``node``'s key-values as they come."""
    return ros.node.create_subscription(
        DiagnosticArray, '/diagnostics',
        lambda m: values.update({kv.key: kv.value for st in m.status
                                 if st.name.startswith(node) for kv in st.values}), 10)


def _send_until_taken(ros, pubs, diag: dict, info, depth, stamp_ns: int) -> bool:
    """Publish ``info`` and ``depth`` until /diagnostics shows the node took them.

    Sent again every 0.25 s: a best-effort subscription can miss the first
    messages while it is still matching the publisher.
    """
    def taken():
        newest = diag.get('depth_newest_stamp', '')
        return (bool(newest) and float(newest) >= stamp_ns * 1e-9 - 1e-6
                and diag.get('camera_info_ok') == 'True')
    for _ in range(120):
        pubs[INFO].publish(info)
        pubs[DEPTH].publish(depth)
        if ros.spin_until(taken, 0.25):
            return True
    return False


@contextlib.contextmanager
def _node_with_depth(ros, container, footage, node: str, params: dict):
    """Host ``node`` alone with ``params``, make it active; yield (publishers, a video frame)."""
    container({'perception_container': {'nodes': [node], 'telemetry': ''},
               node: {'depth_topic': DEPTH, 'camera_info_topic': INFO,
                      'backend': 'onnxruntime/cpu/t1', **params}})
    lc = LifecycleClient(ros.node, ros.executor)
    assert lc.get_state(f'/{node}', timeout=60) == 'unconfigured'
    lc.bring_up(f'/{node}', timeout=120)
    pubs = {t: ros.node.create_publisher(kind, t, qos_profile_sensor_data)
            for t, kind in ((CAMERA, Image), (DEPTH, Image), (INFO, CameraInfo))}
    try:
        assert ros.spin_until(lambda: all(p.get_subscription_count() for p in pubs.values()),
                              20), f'{node} did not subscribe to the camera and depth'
        cap = cv2.VideoCapture(str(footage['video']))
        ok, bgr = cap.read()
        cap.release()
        assert ok
        yield pubs, np.ascontiguousarray(bgr[:, :, ::-1])
    finally:
        for p in pubs.values():
            ros.node.destroy_publisher(p)


def test_3d_within_2_percent_with_the_2d_ids_and_bad_depth_counted(ros, container, footage):
    from vision_msgs.msg import Detection2DArray, Detection3DArray
    d2, d3, diag = {}, {}, {}
    subs = [ros.node.create_subscription(Detection2DArray, '/detector/vision/detections',
                                         lambda m: d2.__setitem__(_stamp(m.header), m), 50),
            ros.node.create_subscription(Detection3DArray, '/detector/vision/detections_3d',
                                         lambda m: d3.__setitem__(_stamp(m.header), m), 50),
            _diagnostics(ros, '/detector', diag)]
    with _node_with_depth(ros, container, footage, 'detector',
                          {'depth_tolerance_s': 0.02, 'diagnostics_period': 0.2,
                           'publish_untracked': True}) as (pubs, rgb):     # boxes of frame 1
        try:
            h, w = rgb.shape[:2]
            t = 1_800_000_000 * 10**9

            def frame(stamp, depth=None, info=None, want3d=True):
                if want3d:          # its depth and K taken before the colour frame goes
                    assert _send_until_taken(ros, pubs, diag, info or _info(w, h, stamp),
                                             depth, stamp), diag
                else:
                    pubs[INFO].publish(info or _info(w, h, stamp))
                    if depth is not None:
                        pubs[DEPTH].publish(depth)
                pubs[CAMERA].publish(_colour(rgb, stamp))
                assert ros.spin_until(lambda: stamp in d2 and (stamp in d3 or not want3d), 30), \
                    f'no result for {stamp}'
                return d2[stamp], d3.get(stamp)

            first, none3d = frame(t, want3d=False)      # no depth yet: 2D only, counted
            assert none3d is None
            boxes = [(d.bbox.center.position.x - d.bbox.size_x / 2,
                      d.bbox.center.position.y - d.bbox.size_y / 2,
                      d.bbox.center.position.x + d.bbox.size_x / 2,
                      d.bbox.center.position.y + d.bbox.size_y / 2) for d in first.detections]
            assert len(boxes) >= 2, 'the first video frame shows several people'
            for k, metres in enumerate((1.5, 3.0, 6.0)):
                t += 100_000_000
                got2, got3 = frame(t, _depth(boxes, w, h, metres, t, seed=k))
                ids = {d.id for d in got2.detections}
                assert got3.detections and got3.header.frame_id == 'test_camera'
                for d in got3.detections:
                    assert d.id in ids
                    z = d.bbox.center.position.z
                    assert abs(z - metres) <= 0.02 * metres, (metres, z)
                    assert d.results[0].pose.pose.position.z == z
            assert any(d.id for d in got2.detections), 'the tracker gave the boxes ids'
            # bad inputs: each counted, the 2D results go on
            rejected = int(diag.get('depth_rejected', 0))
            t += 100_000_000
            frame(t, _depth(boxes, w // 2, h // 2, 3.0, t, 9), want3d=False)    # another size
            t += 100_000_000
            frame(t, _depth(boxes, w, h, 3.0, t, 9, encoding='8UC1'), want3d=False)
            t += 100_000_000
            frame(t, _depth(boxes, w, h, 3.0, t - 10**9, 9), want3d=False)     # 1 s apart
            t += 100_000_000
            frame(t, info=_info(w, h, t, k=[0.0] * 9), want3d=False)          # K all zero
            assert ros.spin_until(lambda: int(diag.get('depth_rejected', 0)) >= rejected + 2 and
                                  int(diag.get('camera_info_rejected', 0)) >= 1 and
                                  int(diag.get('depth_unmatched', 0)) >= 2, 10), diag
            assert len(d2) == 8 and int(diag.get('depth_matched', 0)) >= 3, (len(d2), diag)
            # publish_untracked true: boxes without an id go out too, none withheld
            assert diag['tracker'] == 'bytetrack' and int(diag['untracked_withheld']) == 0
            assert int(diag['ids_given_back']) >= 0
        finally:
            for s in subs:
                ros.node.destroy_subscription(s)


def test_a_pose_node_puts_its_keypoints_in_3d(ros, container, footage):
    """A wall at 2.5 m: every keypoint with depth comes back at it, NaN never made up."""
    from edge_infer_msgs.msg import Pose3DArray
    got, diag = {}, {}
    subs = [ros.node.create_subscription(Pose3DArray, '/pose/poses_3d',
                                         lambda m: got.__setitem__(_stamp(m.header), m), 10),
            _diagnostics(ros, '/pose', diag)]
    with _node_with_depth(ros, container, footage, 'pose',
                          {'diagnostics_period': 0.2}) as (pubs, rgb):
        try:
            h, w = rgb.shape[:2]
            t = 1_800_000_000 * 10**9
            # no box: a wall at 2.5 m
            assert _send_until_taken(ros, pubs, diag, _info(w, h, t),
                                     _depth([], w, h, 0.5, t, seed=3), t), diag
            pubs[CAMERA].publish(_colour(rgb, t))
            assert ros.spin_until(lambda: t in got, 30), 'no ~/poses_3d for the frame'
            msg = got[t]
            assert msg.keypoint_names and msg.poses and msg.header.frame_id == 'test_camera'
            zs = [k.z for pose in msg.poses for k in pose.keypoints if np.isfinite(k.z)]
            assert zs and all(abs(z - 2.5) <= 0.02 * 2.5 for z in zs), zs
            assert all(len(pose.keypoints) == len(msg.keypoint_names) for pose in msg.poses)
        finally:
            for s in subs:
                ros.node.destroy_subscription(s)

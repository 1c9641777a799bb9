# Copyright 2026 edge_infer contributors. Apache-2.0.
"""3D from an aligned depth camera: a perception node's ``~/vision/detections_3d``.

With ``depth_topic`` set, the node subscribes the depth image
(sensor_msgs/Image, 16UC1 millimetres or 32FC1 metres, aligned to the
colour image) and its CameraInfo (``camera_info_topic``), keeps the recent
depth frames by stamp (:class:`edge_infer.core.depth.DepthBuffer`), and
for each result takes the depth frame nearest in stamp within
``depth_tolerance_s``. Each detection gets a robust depth (the median of
the valid pixels in its box's core, or under its mask) and its 3D centre
and size, back-projected with K (:mod:`edge_infer.core.depth`); it goes out
as vision_msgs/Detection3DArray in the depth camera's frame, with the
colour frame's stamp and the tracker's ids.

Nothing is made up: a result with no depth frame near it, a detection with
no valid depth under it, a depth frame that cannot be read (another size
than the colour, an unknown encoding) and a CameraInfo whose K is zero are
counted (``depth_*`` on /diagnostics) with one line each (at most every 5 s
per reason), and the 2D results go out as always.
"""

import threading
from typing import Any, Dict, Optional

from rclpy.qos import qos_profile_sensor_data
from sensor_msgs.msg import CameraInfo, Image

from ..core.cdr import CdrError, parse_image
from ..core.depth import DepthError, from_fields, Intrinsics, keypoints_3d, locate
from ..core.depth_buffer import DepthBuffer

#: How long a result waits for its depth frame when none at or after its stamp
#: has been taken yet (wall seconds; a silent depth stream costs it once).
DEPTH_WAIT_S = 0.1
COUNTERS = ('depth_frames', 'depth_matched', 'depth_unmatched', 'depth_no_3d',
            'depth_rejected', 'camera_info_rejected')


class DepthOutputs:
    """The depth and CameraInfo subscriptions of one node, and its Detection3DArray publisher."""

    def __init__(self, node, spec, depth_topic: str, info_topic: str, tolerance_s: float):
        """Create the publisher on ``node``; :meth:`subscribe` starts taking depth frames.

        ``spec``: the model's registry entry (its labels); ``info_topic`` ''
        is ``camera_info`` beside ``depth_topic``.
        """
        from vision_msgs import msg
        self.msg = msg
        self.node, self.labels = node, spec.label_map()
        self.depth_topic = depth_topic
        self.info_topic = info_topic or _info_topic(depth_topic)
        self.buffer = DepthBuffer(capacity=30, tolerance_s=tolerance_s)
        self.intrinsics: Optional[Intrinsics] = None
        self.counts: Dict[str, int] = dict.fromkeys(COUNTERS, 0)
        self._lock = threading.Lock()
        self._subs: list = []
        # Detection3D messages reused from frame to frame (publish() serialises at once):
        # each carries a pose with a 36-value covariance, slow to build (tasks.py)
        self._pool: list = []
        self.pub = node.create_lifecycle_publisher(msg.Detection3DArray,
                                                   '~/vision/detections_3d', 10)
        self.pose_pub = None        # a pose model: its keypoints in 3D too
        if spec.task == 'pose':
            from edge_infer_msgs.msg import Pose3DArray
            self.pose_pub = node.create_lifecycle_publisher(Pose3DArray, '~/poses_3d', 10)
            self.keypoint_names = list(spec.keypoint_names)
            self.keypoint_threshold = float(spec.decoder_args.get('keypoint_threshold', 0.3))

    def subscribe(self) -> None:
        """Take depth frames and CameraInfo (on activate)."""
        node = self.node
        self._subs = [
            node.create_subscription(Image, self.depth_topic, self._on_depth,
                                     qos_profile_sensor_data, raw=True),
            node.create_subscription(CameraInfo, self.info_topic, self._on_info,
                                     qos_profile_sensor_data)]

    def unsubscribe(self) -> None:
        """Stop taking depth frames (on deactivate); what is buffered is forgotten."""
        for sub in self._subs:
            self.node.destroy_subscription(sub)
        self._subs = []
        self.buffer.clear()

    def destroy(self) -> None:
        """Destroy the subscriptions and the publisher."""
        self.unsubscribe()
        for pub in (self.pub, self.pose_pub):
            if pub is not None:
                self.node.destroy_lifecycle_publisher(pub)
        self.pub = self.pose_pub = None

    def _count(self, what: str, line: str = '', n: int = 1) -> None:
        with self._lock:
            self.counts[what] += n
        if line:
            self.node.get_logger().warning(line, throttle_duration_sec=5.0)

    def _on_info(self, info) -> None:
        try:
            self.intrinsics = Intrinsics.from_camera_info(list(info.k), info.width, info.height)
        except DepthError as exc:
            self._count('camera_info_rejected', f'{self.info_topic}: {exc}; no 3D until a '
                                                f'valid CameraInfo comes')

    def _on_depth(self, raw: bytes) -> None:
        try:
            f = parse_image(raw)
            depth = from_fields(f)      # a view on the message's pixels
        except (CdrError, DepthError) as exc:
            self._count('depth_rejected', f'{self.depth_topic}: depth frame refused: {exc}')
            return
        self._count('depth_frames')
        self.buffer.add(f.sec + f.nanosec * 1e-9, (f.frame_id, depth))

    def publish(self, header, result, width: int, height: int) -> None:
        """Publish the 3D of ``result``'s detections (the colour frame's ``header`` and size)."""
        stamp = header.stamp.sec + header.stamp.nanosec * 1e-9
        item, why = self.buffer.nearest(stamp, wait_s=DEPTH_WAIT_S)
        if item is None:
            self._count('depth_unmatched', f'{self.depth_topic}: no 3D for a result: {why}')
            return
        intrinsics = self.intrinsics
        if intrinsics is None:
            self._count('depth_unmatched', f'{self.info_topic}: no 3D for a result: no '
                                           f'CameraInfo yet')
            return
        frame_id, depth = item
        out = result.output
        try:
            found = locate(depth, out.boxes, intrinsics, masks=getattr(out, 'mask', None),
                           image_size=(width, height))
        except DepthError as exc:      # another size than colour, a CameraInfo for another
            self._count('depth_rejected', f'{self.depth_topic}: no 3D: {exc}')
            return
        self._count('depth_matched')
        m = self.msg
        msg = m.Detection3DArray()
        msg.header.stamp, msg.header.frame_id = header.stamp, frame_id or header.frame_id
        ids = out.track_ids.tolist() if out.track_ids is not None else [-1] * len(out)
        centres, sizes = found.centers.tolist(), found.sizes.tolist()
        keep = [k for k, ok in enumerate(found.valid.tolist()) if ok]
        missing = len(out) - len(keep)
        if missing:     # no depth under them: no 3D, never a made-up distance
            self._count('depth_no_3d', n=missing)
        while len(self._pool) < len(keep):  # grows to the most boxes a frame had, then reused
            self._pool.append(m.Detection3D(results=[m.ObjectHypothesisWithPose()]))
        cids, scores = out.class_ids.tolist(), out.scores.tolist()
        for d, k in zip(self._pool, keep):
            d.header, d.id = msg.header, str(ids[k]) if ids[k] >= 0 else ''
            hyp = d.results[0]
            hyp.hypothesis.class_id, hyp.hypothesis.score = self.labels[cids[k]], float(scores[k])
            p, c = hyp.pose.pose, d.bbox.center
            p.position.x, p.position.y, p.position.z = centres[k]
            c.position.x, c.position.y, c.position.z = centres[k]
            p.orientation.w = c.orientation.w = 1.0
            d.bbox.size.x, d.bbox.size.y, d.bbox.size.z = sizes[k]
        msg.detections = self._pool[:len(keep)]
        assert self.pub is not None, 'publish() after destroy()'
        self.pub.publish(msg)
        if self.pose_pub is not None:
            self._publish_poses(msg.header, depth, out, intrinsics, ids)

    def _publish_poses(self, header, depth, out, intrinsics, ids) -> None:
        """Publish the poses' keypoints in 3D (NaN where a keypoint has no depth)."""
        from edge_infer_msgs.msg import Keypoint3D, Pose3D, Pose3DArray
        xyz = keypoints_3d(depth, out.keypoints, intrinsics, self.keypoint_threshold)
        msg = Pose3DArray(header=header, keypoint_names=self.keypoint_names)
        for pts, kps, tid in zip(xyz.tolist(), out.keypoints.tolist(), ids):
            msg.poses.append(Pose3D(id=str(tid) if tid >= 0 else '', keypoints=[
                Keypoint3D(x=x, y=y, z=z, score=k[2]) for (x, y, z), k in zip(pts, kps)]))
        assert self.pose_pub is not None, 'a pose model has one'
        self.pose_pub.publish(msg)

    def status(self) -> Dict[str, Any]:
        """Return the counters and the topics, for /diagnostics."""
        with self._lock:
            values: Dict[str, Any] = dict(self.counts)
        values['depth_topic'] = self.node.resolve_topic_name(self.depth_topic)
        values['camera_info_ok'] = self.intrinsics is not None
        newest = self.buffer.newest()       # is depth flowing, and how recent is it
        values['depth_newest_stamp'] = '' if newest is None else f'{newest:.6f}'
        return values


def _info_topic(depth_topic: str) -> str:
    """Return the CameraInfo topic beside ``depth_topic`` (image_transport's rule)."""
    base = depth_topic.rstrip('/').rsplit('/', 1)[0] if '/' in depth_topic.strip('/') else ''
    return f'{base}/camera_info' if base else 'camera_info'

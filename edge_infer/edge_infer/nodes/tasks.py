# Copyright 2026 edge_infer contributors. Apache-2.0.
"""One object per task: what a perception node publishes and draws for a model's result.

The node runs the model (decode included, :mod:`edge_infer.core`) and fills
the fields every edge_infer result message shares (header, model, backend,
image size, stage times, energy); the task object does the rest:

============== ======================= =========================================
task           edge_infer message      standard messages (vision_msgs, sensor_msgs)
============== ======================= =========================================
detection      ``~/detections``        ``~/vision/detections`` Detection2DArray
               DetectionArray
classification ``~/classification``    ``~/vision/classification`` Classification
               Classification
pose           ``~/poses``             ``~/vision/detections`` (the instances'
               PoseDetectionArray      boxes); keypoints: edge_infer only
segmentation   ``~/segmentation``      ``~/mask`` sensor_msgs/Image mono8 at the
               Segmentation            source size; instance models also
                                       ``~/vision/detections``
============== ======================= =========================================

``result_messages`` (``both`` | ``standard`` | ``edge_infer``) picks the
columns. What has no standard type (keypoints) stays on its edge_infer topic
whatever the choice, and the mask (a standard type) is published whatever the
choice: nothing a model computes is dropped.

The vision_msgs forms (:class:`VisionOutputs`):

- detections (and the instances of pose and instance segmentation models):
  ``Detection2DArray``, the source image's header; per detection one
  hypothesis with ``class_id`` = the label and the score, the box centre and
  size in source pixels (``bbox.center.position``, ``size_x``, ``size_y``;
  theta 0); ``Detection2D.id`` the tracker's id ('' untracked);
- classifiers: ``Classification``, the top classes, ``class_id`` = the label;
- every model, semantic segmentation ones included (their mask's class ids):
  ``~/vision/label_info`` (``vision_msgs/LabelInfo``, transient local, once
  at configure): class id -> name, and the score threshold.

What only edge_infer's messages carry (model, backend, image size, the stage
times) stays on the edge_infer topic with ``both``; the energy of each frame
is on ``~/energy`` whatever the choice.
"""

from typing import Optional

import cv2
from edge_infer_msgs.msg import (Classification, ClassScore, Detection, DetectionArray,
                                 Keypoint, PoseDetection, PoseDetectionArray, Segmentation)
import numpy as np
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import Image

from .perception_params import instance_decoder
from ..core.draw import draw_result

DEFAULT_TOPICS = {'detection': '~/detections', 'classification': '~/classification',
                  'pose': '~/poses', 'segmentation': '~/segmentation'}


def _detections(labels, det) -> list:
    """Return edge_infer Detection messages of a Detections result (source pixels).

    ``labels``: the model's class id -> label (``ModelSpec.label_map``).
    Oriented boxes (``rboxes``) give their own centre, size and ``theta``.
    """
    ids = det.track_ids.tolist() if det.track_ids is not None else [-1] * len(det)
    rboxes = getattr(det, 'rboxes', None)
    if rboxes is not None:
        return [Detection(class_id=int(c), label=labels[c], score=float(s), track_id=int(i),
                          center_x=cx, center_y=cy, size_x=w, size_y=h, theta=t)
                for (cx, cy, w, h, t), s, c, i in zip(rboxes.tolist(), det.scores.tolist(),
                                                      det.class_ids.tolist(), ids)]
    return [Detection(class_id=int(c), label=labels[c], score=float(s), track_id=int(i),
                      center_x=(x1 + x2) / 2, center_y=(y1 + y2) / 2,
                      size_x=x2 - x1, size_y=y2 - y1)
            for (x1, y1, x2, y2), s, c, i in zip(det.boxes.tolist(), det.scores.tolist(),
                                                 det.class_ids.tolist(), ids)]


class VisionOutputs:
    """The vision_msgs publishers of one perception node (lifecycle publishers)."""

    def __init__(self, node, spec, score_threshold: float = 0.0, results: bool = True):
        """Create the publishers on ``node`` and publish the label map once.

        ``results`` False: the label map only (a semantic mask's class ids).
        """
        from vision_msgs import msg
        from vision_msgs.msg import Classification, Detection2DArray, LabelInfo, VisionClass
        self.msg = msg          # the types publish() builds, looked up once
        # Detection2D messages reused from frame to frame (publish() serialises at
        # once): an ObjectHypothesisWithPose costs 21 us to build (its pose's
        # 36-value covariance array), 10 of them were most of a frame's 168 us
        self._pool: list = []
        self.node, self.spec, self.labels = node, spec, spec.label_map()
        self.detection = spec.task != 'classification'     # detections, poses, instances
        kind = Detection2DArray if self.detection else Classification
        topic = '~/vision/detections' if self.detection else '~/vision/classification'
        self.pub = node.create_lifecycle_publisher(kind, topic, 10) if results else None
        latched = QoSProfile(depth=1, history=HistoryPolicy.KEEP_LAST,
                             reliability=ReliabilityPolicy.RELIABLE,
                             durability=DurabilityPolicy.TRANSIENT_LOCAL)
        self.labels_pub = node.create_publisher(LabelInfo, '~/vision/label_info', latched)
        info = LabelInfo(threshold=float(score_threshold))
        info.header.stamp = node.get_clock().now().to_msg()
        info.class_map = [VisionClass(class_id=i, class_name=n)
                          for i, n in enumerate(spec.labels) if i < 65536]
        self.labels_pub.publish(info)

    def publish(self, header, result) -> None:
        """Publish one frame's result with the source image's ``header``."""
        m, labels = self.msg, self.labels
        out = result.output
        if self.detection:
            n = len(out)
            while len(self._pool) < n:      # grows to the most boxes a frame had, then reused
                self._pool.append(m.Detection2D(results=[m.ObjectHypothesisWithPose()]))
            ids = out.track_ids.tolist() if out.track_ids is not None else [-1] * n
            for d, (x1, y1, x2, y2), score, cid, tid in zip(
                    self._pool, out.boxes.tolist(), out.scores.tolist(), out.class_ids.tolist(),
                    ids):
                d.header = header
                d.id = str(tid) if tid >= 0 else ''     # the tracker's id ('' untracked)
                hyp = d.results[0].hypothesis
                hyp.class_id, hyp.score = labels[cid], float(score)
                d.bbox.center.position.x, d.bbox.center.position.y = (x1 + x2) / 2, (y1 + y2) / 2
                d.bbox.size_x, d.bbox.size_y = x2 - x1, y2 - y1
            msg = m.Detection2DArray(header=header, detections=self._pool[:n])
        else:
            msg = m.Classification(header=header, results=[
                m.ObjectHypothesis(class_id=labels[c], score=float(s))
                for c, s in zip(out.class_ids.tolist(), out.scores.tolist())])
        assert self.pub is not None, 'made with results=False: the label map only'
        self.pub.publish(msg)

    def destroy(self) -> None:
        """Destroy the publishers."""
        if self.pub is not None:
            self.node.destroy_lifecycle_publisher(self.pub)
        self.node.destroy_publisher(self.labels_pub)


class Task:
    """Detection: the base every task object follows."""

    message = DetectionArray
    has_vision = True       # has a vision_msgs form

    def __init__(self, node, spec, formats: str, topic: str = '', score_threshold: float = 0.0):
        """Create the node's result publishers for ``formats`` (checked: perception_params)."""
        self.node, self.spec, self.formats = node, spec, formats
        self.labels = spec.label_map()      # class id -> label, looked up per detection
        self.pub = None
        self.vision: Optional[VisionOutputs] = None
        if formats != 'standard' or not self.has_vision:
            self.pub = node.create_lifecycle_publisher(
                self.message, topic or DEFAULT_TOPICS[spec.task], 10)
        if formats != 'edge_infer':     # without a vision_msgs form: the label map only
            self.vision = VisionOutputs(node, spec, score_threshold, results=self.has_vision)

    def publishers(self) -> list:
        """Return the publishers of every frame's results (the label map's aside)."""
        return [p for p in (self.pub, self.vision and self.vision.pub) if p is not None]

    def topic_names(self) -> list:
        """Return the resolved per-frame result topics."""
        return [p.topic_name for p in self.publishers()]

    def to_msg(self, result):
        """Return the edge_infer message with the task's own fields filled."""
        return DetectionArray(detections=_detections(self.labels, result.output))

    def result_msg(self, frame, result, decode_ms: float, backend: str):
        """Return the frame's result message: the task's fields and the shared ones.

        ``decode_ms``: the frame's decode, counted in preprocess_ms; ``backend``:
        the backend that ran it (a runner-up may have). The header and energy
        are the node's to set.
        """
        out = self.to_msg(result)
        out.model = self.spec.name
        out.backend = backend
        out.image_width = frame.width
        out.image_height = frame.height
        out.preprocess_ms = decode_ms + result.preprocess_ms
        out.inference_ms = result.inference_ms
        out.postprocess_ms = result.postprocess_ms
        if result.devices:
            out.segment_devices = list(result.devices)
        return out

    def publish(self, msg, result) -> None:
        """Publish ``msg`` (from :meth:`to_msg`, common fields set) and the standard forms."""
        if self.pub is not None:
            self.pub.publish(msg)
        if self.vision is not None and self.has_vision:
            self.vision.publish(msg.header, result)

    def draw(self, img: np.ndarray, result, caption: str) -> None:
        """Draw ``result`` on the BGR image ``img`` (in place): boxes, keypoints, masks."""
        draw_result(img, self.spec, result.output, caption)

    def destroy(self) -> None:
        """Destroy the publishers."""
        if self.pub is not None:
            self.node.destroy_lifecycle_publisher(self.pub)
            self.pub = None
        if self.vision is not None:
            self.vision.destroy()
            self.vision = None


class ClassificationTask(Task):
    """Top-k classes."""

    message = Classification

    def to_msg(self, result):
        """Return a Classification with the top classes."""
        cls, labels = result.output, self.labels
        return Classification(results=[
            ClassScore(class_id=int(c), label=labels[c], score=float(s))
            for c, s in zip(cls.class_ids.tolist(), cls.scores.tolist())])


class PoseTask(Task):
    """Instances with keypoints: PoseDetectionArray always (no standard type), boxes as vision."""

    message = PoseDetectionArray

    def __init__(self, node, spec, formats: str, topic: str = '', score_threshold: float = 0.0):
        """As :class:`Task`; keypoints are published whatever ``formats`` says."""
        super().__init__(node, spec, formats, topic, score_threshold)
        if self.pub is None:
            self.pub = node.create_lifecycle_publisher(
                self.message, topic or DEFAULT_TOPICS[spec.task], 10)
        self.names = list(spec.keypoint_names)
        self.skeleton = [int(i) for pair in spec.skeleton for i in pair]

    def to_msg(self, result):
        """Return a PoseDetectionArray: per instance its box and keypoints."""
        poses = result.output
        msg = PoseDetectionArray(keypoint_names=self.names, skeleton=self.skeleton)
        for det, kps in zip(_detections(self.labels, poses), poses.keypoints.tolist()):
            msg.poses.append(PoseDetection(detection=det, keypoints=[
                Keypoint(x=x, y=y, score=s) for x, y, s in kps]))
        return msg


class SegmentationTask(Task):
    """Masks: ``~/mask`` (mono8, source size) always; instances also as detections."""

    message = Segmentation

    def __init__(self, node, spec, formats: str, topic: str = '', score_threshold: float = 0.0):
        """As :class:`Task`, plus the ``~/mask`` publisher."""
        self.instances = instance_decoder(spec.decoder)
        self.has_vision = self.instances    # only instance models have a vision_msgs form
        self.mask_pub = None
        super().__init__(node, spec, formats, topic, score_threshold)
        self.mask_pub = node.create_lifecycle_publisher(Image, '~/mask', 10)

    def to_msg(self, result):
        """Return a Segmentation: instances, or the labels and each class's share of pixels."""
        out = result.output
        if self.instances:
            return Segmentation(instances=_detections(self.labels, out))
        # OpenCV's histogram: 76 us on a 768x576 mask, numpy's bincount 513 us
        counts = cv2.calcHist([out.mask], [0], None, [256], [0, 256]).ravel()
        n = max(len(self.spec.labels), int(np.flatnonzero(counts)[-1]) + 1 if counts.any() else 0)
        return Segmentation(labels=list(self.spec.labels),
                            class_fractions=(counts[:n] / max(1, out.mask.size)).tolist())

    def publishers(self) -> list:
        """Return the result publishers, ``~/mask`` first."""
        return [self.mask_pub] + super().publishers()

    def publish(self, msg, result) -> None:
        """Publish the mask (same header as the result), then the result messages."""
        mask = result.output.mask
        assert self.mask_pub is not None, 'publish() after destroy()'
        self.mask_pub.publish(Image(header=msg.header, height=mask.shape[0],
                                    width=mask.shape[1], encoding='mono8',
                                    step=mask.shape[1], data=mask.tobytes()))
        super().publish(msg, result)

    def destroy(self) -> None:
        """Destroy the publishers, ``~/mask`` included."""
        super().destroy()
        if self.mask_pub is not None:
            self.node.destroy_lifecycle_publisher(self.mask_pub)
            self.mask_pub = None


TASKS = {'detection': Task, 'classification': ClassificationTask, 'pose': PoseTask,
         'segmentation': SegmentationTask}


def make_task(node, spec, formats: str, topic: str = '', score_threshold: float = 0.0) -> Task:
    """Return the task object of ``spec.task``, its publishers created on ``node``."""
    return TASKS[spec.task](node, spec, formats, topic, score_threshold)

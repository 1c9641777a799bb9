# Copyright 2026 edge_infer contributors. Apache-2.0.
"""Results as vision_msgs, the types trackers, RViz tools and other ROS perception code read.

A perception node with ``result_messages: standard`` or ``both`` (the
default) publishes, beside or instead of its edge_infer_msgs result:

- detectors (and the instances of pose and instance segmentation models):
  ``~/vision/detections`` (``vision_msgs/Detection2DArray``):
  the source image's header; per detection one hypothesis with
  ``class_id`` = the label and the score, the box centre and size in source
  pixels (``bbox.center.position``, ``size_x``, ``size_y``; theta 0);
- classifiers: ``~/vision/classification`` (``vision_msgs/Classification``):
  the top classes, ``class_id`` = the label;
- every model, semantic segmentation ones included (their mask's class ids):
  ``~/vision/label_info`` (``vision_msgs/LabelInfo``, transient local,
  once at configure): class id -> name, and the score threshold.

What only edge_infer's messages carry (model, backend, image size, the
stage times) stays on ``~/detections`` / ``~/classification`` with ``both``;
the energy of each frame is on ``~/energy`` whatever the choice.
"""

from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy


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
        self.node, self.spec = node, spec
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
        m = self.msg
        label = self.spec.label
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
                hyp.class_id, hyp.score = label(cid), float(score)
                d.bbox.center.position.x, d.bbox.center.position.y = (x1 + x2) / 2, (y1 + y2) / 2
                d.bbox.size_x, d.bbox.size_y = x2 - x1, y2 - y1
            msg = m.Detection2DArray(header=header, detections=self._pool[:n])
        else:
            msg = m.Classification(header=header, results=[
                m.ObjectHypothesis(class_id=label(c), score=float(s))
                for c, s in zip(out.class_ids.tolist(), out.scores.tolist())])
        assert self.pub is not None, 'made with results=False: the label map only'
        self.pub.publish(msg)

    def destroy(self) -> None:
        """Destroy the publishers."""
        if self.pub is not None:
            self.node.destroy_lifecycle_publisher(self.pub)
        self.node.destroy_publisher(self.labels_pub)

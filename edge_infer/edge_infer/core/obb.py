# Copyright 2026 edge_infer contributors. Apache-2.0.
"""Oriented boxes: Ultralytics' OBB exports (``task: obb``) decoded (no ROS).

The export's one output is ``[1, 4 + nc + 1, N]`` (channels first, or its
transpose): per candidate ``cx cy w h`` in model-input pixels, ``nc`` class
scores (sigmoid), then the box's angle in radians, from the x axis toward
the y axis (clockwise on screen). Score = the best class's; boxes that
overlap as rotated rectangles are suppressed per class
(``cv2.dnn.NMSBoxesRotated``), as Ultralytics' ``nms_rotated`` does.

The result is :class:`RotatedDetections`: ``boxes`` hold each rotated box's
axis-aligned bounds in source pixels (clipped to the image), so drawing,
``vision_msgs`` and everything that takes boxes takes these; ``rboxes``
hold ``cx cy w h theta`` in source pixels, which edge_infer's Detection
message carries (``theta``).
"""

from dataclasses import dataclass
import math
from typing import List

import cv2
import numpy as np

from .detector_layouts import _rows
from .postprocess import _check_finite, best_class, Detections
from .preprocess import Transform


@dataclass
class RotatedDetections(Detections):
    """Detections whose boxes are rotated: ``rboxes`` N x 5 (cx, cy, w, h, theta radians).

    ``boxes`` (N x 4) are their axis-aligned bounds, clipped to the source image.
    """

    rboxes: np.ndarray


def corners(rboxes: np.ndarray) -> np.ndarray:
    """Return N x 4 x 2 corner points of ``rboxes`` (cx, cy, w, h, theta)."""
    cx, cy, w, h, t = (rboxes[:, i:i + 1] for i in range(5))
    c, s = np.cos(t), np.sin(t)
    dx = np.array([-0.5, 0.5, 0.5, -0.5], np.float32)[None, :]
    dy = np.array([-0.5, -0.5, 0.5, 0.5], np.float32)[None, :]
    x = cx + dx * w * c - dy * h * s
    y = cy + dx * w * s + dy * h * c
    return np.stack([x, y], axis=2).astype(np.float32)


class YoloObbDecoder:
    """Ultralytics OBB (``yolov8_obb``): oriented boxes, rotated NMS."""

    def __init__(self, num_classes: int, score_threshold: float = 0.25, nms_iou: float = 0.7,
                 max_detections: int = 300):
        self.num_classes = int(num_classes)
        if self.num_classes < 1:
            raise ValueError('a detector needs at least one class (labels file)')
        self.score_threshold = float(score_threshold)
        self.nms_iou = float(nms_iou)
        self.max_detections = int(max_detections)
        self.width = 4 + self.num_classes + 1

    def __call__(self, outputs: List[np.ndarray], tf: Transform) -> RotatedDetections:
        """Decode the first output; boxes in source pixels."""
        rows = _rows(np.asarray(outputs[0]), self.width, 'yolov8_obb',
                     f'4 box values + {self.num_classes} classes + 1 angle')
        idx, scores, class_ids = best_class(rows[:, 4:4 + self.num_classes],
                                            self.score_threshold)
        # the candidates' box and angle columns only, in one copy
        r = np.asarray(rows[np.ix_(idx, [0, 1, 2, 3, self.width - 1])], np.float32)
        _check_finite('boxes', r)
        keep = self._nms(r, scores, class_ids)
        r, scores, class_ids = r[keep], scores[keep], class_ids[keep]
        # to source pixels by the corners (a letterbox scales both sides alike)
        pts = corners(r).reshape(-1, 2)
        src = tf.points_to_source(pts).reshape(-1, 4, 2)
        rboxes = np.zeros((len(r), 5), np.float32)
        for i, quad in enumerate(src):
            (cx, cy), (w, h), deg = cv2.minAreaRect(quad)
            rboxes[i] = (cx, cy, w, h, math.radians(deg))
        boxes = tf.clip(np.concatenate([src.min(1), src.max(1)], 1))
        return RotatedDetections(boxes, scores, class_ids, rboxes=rboxes)

    def _nms(self, r: np.ndarray, scores: np.ndarray, class_ids: np.ndarray) -> np.ndarray:
        """Return the kept indices, best first: rotated-box NMS within each class."""
        keep: List[int] = []
        for c in np.unique(class_ids):
            idx = np.nonzero(class_ids == c)[0]
            rects = [((float(x), float(y)), (float(w), float(h)), math.degrees(float(t)))
                     for x, y, w, h, t in r[idx]]
            kept = cv2.dnn.NMSBoxesRotated(rects, scores[idx].tolist(), 0.0, self.nms_iou)
            keep.extend(idx[np.asarray(kept, np.int64).reshape(-1)].tolist())
        order = np.asarray(keep, np.int64)
        order = order[np.argsort(-scores[order], kind='stable')] if len(order) else order
        return order[:self.max_detections]

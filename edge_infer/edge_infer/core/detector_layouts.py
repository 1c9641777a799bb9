# Copyright 2026 edge_infer contributors. Apache-2.0.
"""Decoders for the detector output layouts robot users bring (no ROS).

- ``yolov8`` (:class:`BoxScoreDecoder`): anchor-free YOLO as Ultralytics
  exports v8 / v11 (and YOLOv9, YOLO-NAS-style heads converted the same
  way): one output ``[1, 4 + nc, N]`` (channels first, as exported) or its
  transpose ``[1, N, 4 + nc]``; per candidate ``cx cy w h`` in model-input
  pixels, then ``nc`` class scores already through a sigmoid. Score = the
  best class's.
- ``yolov5`` (the same class, ``objectness``): YOLOv5 / v7 exports
  ``[1, N, 5 + nc]``: ``cx cy w h``, an objectness, ``nc`` class scores
  (all sigmoid); score = objectness x class score.
- ``end2end`` (:class:`EndToEndDecoder`): NMS inside the graph, as YOLOv10
  and YOLO26 export (``end2end``): ``[1, K, 6]`` rows of ``x1 y1 x2 y2
  score class`` in model-input pixels, padded with zero-score rows; or the
  TensorFlow Object Detection API's four outputs (num, boxes y1 x1 y2 x2 in
  0..1, scores, classes from ``class_offset``).

- ``yolox`` (:class:`YoloxDecoder`): YOLOX's raw grid outputs (the
  official ONNX export, ``decode_in_inference`` off): ``[1, N, 5 + nc]``
  over the grids of ``strides`` (8, 16, 32), row-major per stride; box
  ``((x + gx) * s, (y + gy) * s, exp(w) * s, exp(h) * s)`` as cx cy w h,
  then objectness and class scores (sigmoid in the export). YOLOX takes BGR
  0..255 letterboxed with 114.
- ``rtdetr`` (:class:`DetrDecoder`): RT-DETR (Ultralytics export): ``[1, Q,
  4 + nc]``, cx cy w h normalised to 0..1 of the input, sigmoid scores; no
  NMS (queries are one per object); the input is stretched, RGB 0..1.

CenterNet heatmaps and SSD-style box / score pairs are in
:mod:`edge_infer.core.centernet_ssd`; pose and segmentation heads in
:mod:`edge_infer.core.pose` and :mod:`edge_infer.core.segmentation`.

Thresholds: ``score_threshold``, ``nms_iou``, ``max_detections``;
``agnostic`` (class-agnostic NMS: one box per place whatever the class;
default class-aware, as Ultralytics' predict). The layout of a ``[1, a, b]``
output is read from which side equals ``4 + nc`` (``5 + nc``); a tensor
where neither does raises :class:`OutputError` naming both shapes.
"""

from typing import List

import numpy as np

from .postprocess import _check_finite, best_class, Detections, OutputError, suppressed
from .preprocess import Transform


def _rows(out: np.ndarray, width: int, what: str, parts: str = '') -> np.ndarray:
    """Return ``out`` as N x width rows (a view where it can), whichever side is ``width``.

    ``parts`` says what the ``width`` values are, for the error message.
    """
    shape = list(out.shape)
    if out.ndim == 3 and out.shape[0] == 1:
        out = out[0]
    if out.ndim != 2:
        raise OutputError(f'{what}: expected one [1, {width}, N] or [1, N, {width}] output, '
                          f'got shape {shape}')
    if out.shape[1] == width:
        return out
    if out.shape[0] == width:
        return out.T
    if not parts:
        parts = '4 box values' + (' + objectness' if what == 'yolov5' else '') + \
            " + classes; check the model's class count (labels file)"
    raise OutputError(f'{what}: output shape {shape} has no side of {width} ({parts})')


def _xyxy(cxcywh: np.ndarray) -> np.ndarray:
    half = cxcywh[:, 2:4] * 0.5
    return np.concatenate([cxcywh[:, :2] - half, cxcywh[:, :2] + half], 1)


class BoxScoreDecoder:
    """Anchor-free YOLO (``yolov8``) or, with ``objectness``, YOLOv5-style outputs."""

    def __init__(self, num_classes: int, score_threshold: float, nms_iou: float,
                 max_detections: int = 100, agnostic: bool = False, objectness: bool = False):
        self.num_classes = int(num_classes)
        self.score_threshold = float(score_threshold)
        self.nms_iou = float(nms_iou)
        self.max_detections = int(max_detections)
        self.agnostic = bool(agnostic)
        self.objectness = bool(objectness)
        self.width = 4 + int(self.objectness) + self.num_classes
        if self.num_classes < 1:
            raise ValueError('a detector needs at least one class (labels file)')

    def __call__(self, outputs: List[np.ndarray], tf: Transform) -> Detections:
        """Decode the first output; boxes in source pixels."""
        what = 'yolov5' if self.objectness else 'yolov8'
        rows = _rows(np.asarray(outputs[0]), self.width, what)
        idx, scores, class_ids = best_class(
            rows[:, 5:] if self.objectness else rows[:, 4:], self.score_threshold,
            rows[:, 4] if self.objectness else None)
        boxes = _xyxy(np.asarray(rows[idx, :4], np.float32))
        return suppressed(boxes, scores, class_ids, tf, self.nms_iou, self.max_detections,
                          self.agnostic)


class EndToEndDecoder:
    """NMS inside the model: ``[1, K, 6]`` rows, or TF-style num / boxes / scores / classes.

    TF-style (TensorFlow Object Detection API exports, SSD-MobileNet and the
    like, four outputs in any order): ``num_detections`` ``[1]``, boxes
    ``[1, K, 4]`` as y1 x1 y2 x2 normalised to 0..1 of the input, scores and
    classes ``[1, K]`` (the classes the one holding whole numbers), class ids
    counted from ``class_offset`` (1 in TF's label maps: 1 = the first label).
    """

    def __init__(self, num_classes: int, score_threshold: float, max_detections: int = 100,
                 nms_iou: float = 1.0, agnostic: bool = False, input_w: int = 0,
                 input_h: int = 0, class_offset: int = 1):
        self.num_classes = int(num_classes)
        self.score_threshold = float(score_threshold)
        self.max_detections = int(max_detections)
        # the model did the NMS; nms_iou < 1 adds one of ours (e.g. class-agnostic
        # over a model that suppressed per class)
        self.nms_iou = float(nms_iou)
        self.agnostic = bool(agnostic)
        self.size = np.array([input_w, input_h, input_w, input_h], np.float32)
        self.class_offset = int(class_offset)

    def _tf_rows(self, outputs: List[np.ndarray]) -> np.ndarray:
        """Return K x 6 rows (x1 y1 x2 y2 in input pixels, score, class) from TF's four."""
        arrs = [np.asarray(o) for o in outputs]
        shapes = [list(a.shape) for a in arrs]
        boxes = [a for a in arrs if a.ndim == 3 and a.shape[-1] == 4]
        num = [a for a in arrs if a.ndim == 1 and a.size == 1]
        flat = [a.reshape(-1) for a in arrs if a.ndim == 2]
        if len(boxes) != 1 or len(flat) != 2 or not self.size.all():
            raise OutputError(f'end2end: expected [1, K, 6], or four TF-style outputs (num '
                              f'[1], boxes [1, K, 4], scores and classes [1, K]) and the '
                              f'input size; got shapes {shapes}')
        whole = [bool(np.all(np.isfinite(f)) and np.all(f == np.round(f))) for f in flat]
        classes, scores = (flat[0], flat[1]) if whole[0] and not whole[1] else (flat[1], flat[0])
        k = len(scores) if not num else min(len(scores), int(num[0].reshape(-1)[0]))
        yxyx = boxes[0].reshape(-1, 4)[:k]
        rows = np.empty((k, 6), np.float32)
        rows[:, :4] = yxyx[:, [1, 0, 3, 2]] * self.size
        rows[:, 4] = scores[:k]
        rows[:, 5] = classes[:k] - self.class_offset
        return rows

    def __call__(self, outputs: List[np.ndarray], tf: Transform) -> Detections:
        """Decode the model's outputs; boxes in source pixels."""
        if len(outputs) > 1:
            out = self._tf_rows(outputs)
        else:
            out = np.asarray(outputs[0])
            if out.ndim == 3 and out.shape[0] == 1:
                out = out[0]
            if out.ndim != 2 or out.shape[1] != 6:
                raise OutputError(f'end2end: expected [1, K, 6] (x1 y1 x2 y2 score class), '
                                  f'got shape {list(np.asarray(outputs[0]).shape)}')
        _check_finite('end2end rows', out)
        rows = out[out[:, 4] > self.score_threshold]
        class_ids = rows[:, 5].round().astype(np.int64)
        if len(class_ids) and (class_ids.min() < 0 or class_ids.max() >= self.num_classes):
            raise OutputError(f'end2end: class ids {class_ids.min()}..{class_ids.max()} '
                              f'outside 0..{self.num_classes - 1} (labels file)')
        boxes = np.array(rows[:, :4], np.float32)
        scores = rows[:, 4].astype(np.float32)
        if self.nms_iou < 1.0:
            return suppressed(boxes, scores, class_ids, tf, self.nms_iou,
                              self.max_detections, self.agnostic)
        keep = np.argsort(-scores, kind='stable')[:self.max_detections]
        return Detections(tf.to_source(boxes[keep]), scores[keep], class_ids[keep])


class YoloxDecoder:
    """YOLOX raw grid outputs: offsets from the cell's corner, log sizes, x stride."""

    def __init__(self, input_w: int, input_h: int, num_classes: int, score_threshold: float,
                 nms_iou: float, max_detections: int = 100, strides=(8, 16, 32),
                 agnostic: bool = False):
        self.num_classes = int(num_classes)
        self.width = 5 + self.num_classes
        self.score_threshold = float(score_threshold)
        self.nms_iou = float(nms_iou)
        self.max_detections = int(max_detections)
        self.agnostic = bool(agnostic)
        grids, cell = [], []
        for s in strides:
            gw, gh = input_w // s, input_h // s
            ys, xs = np.meshgrid(np.arange(gh), np.arange(gw), indexing='ij')
            grids.append(np.stack([xs.ravel(), ys.ravel()], 1))
            cell.append(np.full(gw * gh, s, np.float32))
        self.grid = np.concatenate(grids).astype(np.float32)
        self.stride = np.concatenate(cell)[:, None]

    def __call__(self, outputs: List[np.ndarray], tf: Transform) -> Detections:
        """Decode the first output; boxes in source pixels."""
        rows = _rows(np.asarray(outputs[0]), self.width, 'yolox')
        if len(rows) != len(self.grid):
            raise OutputError(f'yolox: {len(rows)} rows, but the grids of the input size and '
                              f'strides have {len(self.grid)} cells')
        idx, scores, class_ids = best_class(rows[:, 5:], self.score_threshold, rows[:, 4])
        s = self.stride[idx]
        xy = (rows[idx, :2] + self.grid[idx]) * s
        wh = np.exp(np.clip(rows[idx, 2:4], -20.0, 20.0)) * s
        boxes = _xyxy(np.concatenate([xy, wh], 1).astype(np.float32))
        return suppressed(boxes, scores, class_ids, tf, self.nms_iou, self.max_detections,
                          self.agnostic)


class DetrDecoder:
    """RT-DETR: one row per query, cx cy w h in 0..1 of the input, class scores; no NMS."""

    def __init__(self, input_w: int, input_h: int, num_classes: int, score_threshold: float,
                 max_detections: int = 300):
        self.size = np.array([input_w, input_h, input_w, input_h], np.float32)
        self.num_classes = int(num_classes)
        self.score_threshold = float(score_threshold)
        self.max_detections = int(max_detections)

    def __call__(self, outputs: List[np.ndarray], tf: Transform) -> Detections:
        """Decode the first output; boxes in source pixels."""
        rows = _rows(np.asarray(outputs[0]), 4 + self.num_classes, 'rtdetr')
        idx, scores, class_ids = best_class(rows[:, 4:], self.score_threshold)
        order = np.argsort(-scores, kind='stable')[:self.max_detections]
        boxes = _xyxy(np.asarray(rows[idx[order], :4], np.float32) * self.size)
        _check_finite('boxes', boxes)
        return Detections(tf.to_source(boxes), scores[order], class_ids[order])

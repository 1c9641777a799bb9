# Copyright 2026 edge_infer contributors. Apache-2.0.
"""Pose decoders: instances with keypoints, in source-image pixels (no ROS).

- ``yolov8_pose`` (:class:`YoloPoseDecoder`): Ultralytics YOLOv8 / 11 pose
  export: one output ``[1, 5 + 3K, N]`` (as exported) or its transpose; per
  candidate ``cx cy w h`` (model-input pixels), the person score (sigmoid
  already), then K x (x, y, visibility) with x, y in model-input pixels and
  the visibility through a sigmoid (``kpt_shape: [K, 2]``: no visibility,
  keypoint scores 1). Score threshold, single-class NMS, max_detections.
- ``movenet`` (:class:`MoveNetDecoder`): MoveNet single-pose ``[1, 1, 17, 3]``
  rows (y, x, score) in 0..1 of the model input, or multi-pose ``[1, 6, 56]``:
  17 x (y, x, score) then the box (ymin, xmin, ymax, xmax, score), the same
  units; told apart by the shape. Single-pose: the box bounds the keypoints
  scoring over ``keypoint_threshold`` (all of them when none does) and the
  instance score is the mean keypoint score.

Instances are class 0 (the labels file names it, e.g. ``person``). The
keypoint names and skeleton come from the registry (:func:`keypoint_set`):
``keypoints: coco17`` (the default, :data:`COCO17`) or explicit lists.
"""

from typing import List, Optional, Sequence, Tuple

import numpy as np

from .detector_layouts import _rows, _xyxy
from .postprocess import _check_finite, nms, OutputError, Poses
from .preprocess import Transform

COCO17 = ('nose', 'left_eye', 'right_eye', 'left_ear', 'right_ear', 'left_shoulder',
          'right_shoulder', 'left_elbow', 'right_elbow', 'left_wrist', 'right_wrist',
          'left_hip', 'right_hip', 'left_knee', 'right_knee', 'left_ankle', 'right_ankle')
# COCO's 19 limbs (its person category's skeleton), as 0-based keypoint indices
COCO17_SKELETON = ((15, 13), (13, 11), (16, 14), (14, 12), (11, 12), (5, 11), (6, 12),
                   (5, 6), (5, 7), (6, 8), (7, 9), (8, 10), (1, 2), (0, 1), (0, 2),
                   (1, 3), (2, 4), (3, 5), (4, 6))
KEYPOINT_SETS = {'coco17': (COCO17, COCO17_SKELETON)}


def keypoint_set(keypoints=None, skeleton=None,
                 kpt_shape: Optional[Sequence[int]] = None) -> Tuple[List[str], List[tuple]]:
    """Return (keypoint names, skeleton as 0-based index pairs) of a registry entry.

    ``keypoints``: a built-in set's name (:data:`KEYPOINT_SETS`, e.g.
    ``coco17``) or a list of names; none: ``coco17``, or ``kp0``.. when
    ``kpt_shape`` ([K, 2 | 3], Ultralytics' metadata) says K is not 17.
    ``skeleton``: pairs of indices or names; none: the built-in set's (or no
    edges for explicit names). Raises ValueError saying what is wrong.
    """
    if kpt_shape is not None:
        if (not isinstance(kpt_shape, (list, tuple)) or len(kpt_shape) != 2 or
                int(kpt_shape[1]) not in (2, 3) or int(kpt_shape[0]) < 1):
            raise ValueError(f'kpt_shape {kpt_shape!r}: expected [K, 2] or [K, 3]')
    count = int(kpt_shape[0]) if kpt_shape is not None else None
    edges: Sequence[Sequence[int]] = ()
    given: Sequence[str]
    if keypoints is None:
        keypoints = 'coco17' if count in (None, 17) else [f'kp{i}' for i in range(count)]
    if isinstance(keypoints, str):
        if keypoints not in KEYPOINT_SETS:
            raise ValueError(f"keypoints '{keypoints}' unknown: name a built-in set "
                             f"({', '.join(KEYPOINT_SETS)}) or list the names")
        given, edges = KEYPOINT_SETS[keypoints]
    elif isinstance(keypoints, (list, tuple)) and keypoints:
        given = [str(k) for k in keypoints]
    else:
        raise ValueError(f'keypoints {keypoints!r}: expected a set name or a list of names')
    names = list(given)
    if len(set(names)) != len(names):
        raise ValueError('keypoint names must be unique')
    if count is not None and count != len(names):
        raise ValueError(f'kpt_shape says {count} keypoints, the names are {len(names)}')
    if skeleton is None:
        skeleton = edges
    if not isinstance(skeleton, (list, tuple)):
        raise ValueError(f'skeleton {skeleton!r}: expected a list of [a, b] pairs')
    pairs = []
    for pair in skeleton:
        if not isinstance(pair, (list, tuple)) or len(pair) != 2:
            raise ValueError(f'skeleton edge {pair!r}: expected a pair [a, b]')
        ends = []
        for p in pair:
            i = names.index(p) if isinstance(p, str) and p in names else p
            if isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < len(names):
                raise ValueError(f'skeleton edge {list(pair)}: {p!r} is no keypoint '
                                 f'(an index 0..{len(names) - 1} or a name)')
            ends.append(i)
        pairs.append(tuple(ends))
    return names, pairs


def _poses(boxes, scores, kps, k: int, tf: Transform) -> Poses:
    """Return Poses, boxes and K keypoints each (model-input pixels) mapped to source pixels."""
    kps = np.array(kps, np.float32).reshape(len(scores), k, 3)
    kps[..., :2] = tf.points_to_source(kps[..., :2])
    return Poses(tf.to_source(np.array(boxes, np.float32).reshape(-1, 4)),
                 np.asarray(scores, np.float32), np.zeros(len(scores), np.int64),
                 keypoints=kps)


class YoloPoseDecoder:
    """Ultralytics YOLOv8 / 11 pose: box, person score, K keypoints per candidate."""

    def __init__(self, num_keypoints: int = 17, score_threshold: float = 0.25,
                 nms_iou: float = 0.7, max_detections: int = 100, keypoint_dims: int = 3,
                 keypoint_threshold: float = 0.3):
        self.num_keypoints = int(num_keypoints)
        self.keypoint_dims = int(keypoint_dims)
        if self.num_keypoints < 1 or self.keypoint_dims not in (2, 3):
            raise ValueError('yolov8_pose needs K >= 1 keypoints of 2 or 3 values')
        self.score_threshold = float(score_threshold)
        self.nms_iou = float(nms_iou)
        self.max_detections = int(max_detections)
        self.keypoint_threshold = float(keypoint_threshold)   # for drawing / messages
        self.width = 5 + self.keypoint_dims * self.num_keypoints

    def __call__(self, outputs: List[np.ndarray], tf: Transform) -> Poses:
        """Decode the first output; boxes and keypoints in source pixels."""
        k, d = self.num_keypoints, self.keypoint_dims
        rows = _rows(np.asarray(outputs[0]), self.width, 'yolov8_pose',
                     f'4 box values + score + {k} keypoints x {d}; check the keypoint '
                     'count (keypoints / kpt_shape)')
        score = np.asarray(rows[:, 4], np.float32)
        _check_finite('scores', score)
        idx = np.nonzero(score > self.score_threshold)[0]
        cand = np.array(rows[idx], np.float32)
        boxes = _xyxy(cand[:, :4])
        _check_finite('boxes and keypoints', cand)
        keep = nms(boxes, score[idx], np.zeros(len(idx), np.int64), self.nms_iou,
                   self.max_detections)
        kps = np.ones((len(keep), k, 3), np.float32)
        kps[..., :d] = cand[keep, 5:].reshape(-1, k, d)
        return _poses(boxes[keep], score[idx][keep], kps, k, tf)


class MoveNetDecoder:
    """MoveNet single-pose ``[1, 1, K, 3]`` or multi-pose ``[1, 6, 3K + 5]``, 0..1 of the input."""

    def __init__(self, input_w: int, input_h: int, num_keypoints: int = 17,
                 score_threshold: float = 0.2, keypoint_threshold: float = 0.3,
                 nms_iou: float = 1.0, max_detections: int = 6):
        self.size = np.array([input_w, input_h], np.float32)
        self.num_keypoints = int(num_keypoints)
        self.score_threshold = float(score_threshold)
        self.keypoint_threshold = float(keypoint_threshold)
        self.nms_iou = float(nms_iou)       # < 1: our NMS over the multi-pose instances
        self.max_detections = int(max_detections)

    def _keypoints(self, yxs: np.ndarray) -> np.ndarray:
        """Return n x K x 3 (x, y model-input pixels, score) of n x K x 3 (y, x, score) in 0..1."""
        kps = np.empty_like(yxs, dtype=np.float32)
        kps[..., 0] = yxs[..., 1] * self.size[0]
        kps[..., 1] = yxs[..., 0] * self.size[1]
        kps[..., 2] = yxs[..., 2]
        return kps

    def __call__(self, outputs: List[np.ndarray], tf: Transform) -> Poses:
        """Decode the first output; boxes and keypoints in source pixels."""
        out = np.asarray(outputs[0])
        k = self.num_keypoints
        if out.ndim == 4 and out.shape[:2] == (1, 1) and out.shape[2:] == (k, 3):
            return self._single(out[0, 0], tf)
        if out.ndim == 3 and out.shape[0] == 1 and out.shape[2] == 3 * k + 5:
            return self._multi(out[0], tf)
        raise OutputError(f'movenet: expected single-pose [1, 1, {k}, 3] or multi-pose '
                          f'[1, N, {3 * k + 5}] ({k} x (y, x, score), box, score), '
                          f'got shape {list(out.shape)}')

    def _single(self, rows: np.ndarray, tf: Transform) -> Poses:
        _check_finite('keypoints', rows)
        kps = self._keypoints(rows[None])
        score = float(kps[0, :, 2].mean())
        if not score > self.score_threshold or self.max_detections < 1:
            return _poses(np.zeros((0, 4)), np.zeros(0), np.zeros(0), self.num_keypoints, tf)
        seen = kps[0, kps[0, :, 2] > self.keypoint_threshold, :2]
        if not len(seen):
            seen = kps[0, :, :2]
        box = np.concatenate([seen.min(0), seen.max(0)])
        return _poses(box, [score], kps, self.num_keypoints, tf)

    def _multi(self, rows: np.ndarray, tf: Transform) -> Poses:
        _check_finite('poses', rows)
        k = self.num_keypoints
        scores = rows[:, 3 * k + 4].astype(np.float32)
        idx = np.nonzero(scores > self.score_threshold)[0]
        idx = idx[np.argsort(-scores[idx], kind='stable')]
        yxyx = rows[idx, 3 * k:3 * k + 4]
        boxes = yxyx[:, [1, 0, 3, 2]] * np.tile(self.size, 2)
        kps = self._keypoints(rows[idx, :3 * k].reshape(-1, k, 3))
        keep = np.arange(len(idx))[:self.max_detections]
        if self.nms_iou < 1.0:
            keep = nms(boxes, scores[idx], np.zeros(len(idx), np.int64), self.nms_iou,
                       self.max_detections)
        return _poses(boxes[keep], scores[idx][keep], kps[keep], k, tf)

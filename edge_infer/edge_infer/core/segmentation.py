# Copyright 2026 edge_infer contributors. Apache-2.0.
"""Segmentation decoders: masks at the source-image size (no ROS).

- ``semantic`` (:class:`SemanticDecoder`): per-pixel class scores ``[1, C,
  H, W]`` or ``[1, H, W, C]`` (C = the labels' count; the side equal to it
  is the class axis, channels-first when both are): argmax at the output's
  resolution, then nearest-neighbour to the source size (resizing C score
  maps to a camera frame would cost C full-size planes). A single foreground
  channel (``[1, 1, H, W]``, ``[1, H, W, 1]`` or ``[1, H, W]`` floats, two
  labels such as ``background, person``): probabilities (``activation:
  sigmoid`` for logits) resized bilinearly to the source size, then class 1
  where over ``threshold`` (0.5), for smooth edges. An integer ``[1, H, W]``
  output is class ids already (an argmax inside the model). The output map
  may be smaller than the input (e.g. 1/8): it is taken to cover the whole
  model input.
- ``yolov8_seg`` (:class:`YoloSegDecoder`): Ultralytics YOLOv8 / 11 seg:
  ``[1, 4 + nc + M, N]`` (or its transpose; boxes and scores as ``yolov8``,
  then M = 32 mask coefficients) and prototypes ``[1, M, Hp, Wp]`` (Hp =
  input / 4; ``[1, Hp, Wp, M]`` read too), told apart by their rank. Per
  detection kept by NMS: mask logits = coefficients . prototypes, resampled
  bilinearly straight into the detection's box at the source size (the crop
  is at source pixels, not prototype cells) and kept over ``mask_threshold``
  (0.5, i.e. logit 0, as Ultralytics). One uint8 map: detection i is i + 1,
  the best-scored wins overlaps; at most 255 detections.
"""

from typing import List

import cv2
import numpy as np

from .detector_layouts import _rows, _xyxy
from .postprocess import _check_finite, best_class, InstanceMasks, nms, OutputError, \
    SemanticMask
from .preprocess import Transform

ACTIVATIONS = ('none', 'sigmoid')


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-np.clip(x, -60.0, 60.0)))


class SemanticDecoder:
    """Per-pixel classes (argmax), or one foreground channel over a threshold."""

    def __init__(self, num_classes: int, input_w: int, input_h: int, threshold: float = 0.5,
                 activation: str = 'none'):
        self.num_classes = int(num_classes)
        if not 2 <= self.num_classes <= 256:
            raise ValueError(f'semantic needs 2..256 labels (background first for one '
                             f'foreground channel), got {self.num_classes}')
        if activation not in ACTIVATIONS:
            raise ValueError(f"activation '{activation}' unknown ({', '.join(ACTIVATIONS)})")
        self.input_size = (int(input_w), int(input_h))
        self.threshold = float(threshold)
        self.activation = activation

    def _expected(self, shape) -> str:
        c = self.num_classes
        one = ', or one foreground channel [1, 1, H, W] / [1, H, W]' if c == 2 else ''
        return (f'semantic: expected class scores [1, {c}, H, W] or [1, H, W, {c}] '
                f'({c} labels){one}, or class ids [1, H, W] (integers); '
                f'got shape {list(shape)}')

    def __call__(self, outputs: List[np.ndarray], tf: Transform) -> SemanticMask:
        """Decode the first output; the mask at the source size."""
        out = np.asarray(outputs[0])
        c = self.num_classes
        if out.ndim == 4 and out.shape[0] == 1:
            if out.shape[1] == c:
                return self._ids(out[0], 0, tf)
            if out.shape[3] == c:
                return self._ids(out[0], 2, tf)
            if c == 2 and out.shape[1] == 1:
                return self._foreground(out[0, 0], tf)
            if c == 2 and out.shape[3] == 1:
                return self._foreground(out[0, :, :, 0], tf)
        elif out.ndim in (2, 3) and (out.ndim == 2 or out.shape[0] == 1):
            plane = out.reshape(out.shape[-2:])
            if out.dtype.kind in 'iu':
                if plane.size and (plane.min() < 0 or plane.max() >= c):
                    raise OutputError(f'semantic: class ids {plane.min()}..{plane.max()} '
                                      f'outside 0..{c - 1} (labels file)')
                return self._ids(plane, None, tf)
            if c == 2:
                return self._foreground(plane, tf)
        raise OutputError(self._expected(out.shape))

    def _ids(self, scores: np.ndarray, axis, tf: Transform) -> SemanticMask:
        """Return the argmax over ``axis`` (None: ids already) at the source size, nearest."""
        if axis is None:
            ids = scores
        else:
            _check_finite('class scores', scores)
            ids = scores.argmax(axis)
        mask = tf.mask_to_source(ids.astype(np.uint8), cv2.INTER_NEAREST, self.input_size)
        return SemanticMask(mask)

    def _foreground(self, plane: np.ndarray, tf: Transform) -> SemanticMask:
        """Return class 1 where the (bilinearly resized) probability is over the threshold."""
        plane = np.asarray(plane, np.float32)
        _check_finite('mask', plane)
        prob = _sigmoid(plane) if self.activation == 'sigmoid' else plane
        src = tf.mask_to_source(prob, cv2.INTER_LINEAR, self.input_size)
        return SemanticMask((src > self.threshold).astype(np.uint8))


class YoloSegDecoder:
    """Ultralytics YOLOv8 / 11 instance segmentation: boxes, classes, mask coefficients."""

    def __init__(self, num_classes: int, input_w: int, input_h: int,
                 score_threshold: float = 0.25, nms_iou: float = 0.7,
                 max_detections: int = 100, agnostic: bool = False,
                 mask_threshold: float = 0.5):
        self.num_classes = int(num_classes)
        if self.num_classes < 1:
            raise ValueError('a detector needs at least one class (labels file)')
        self.input_size = (int(input_w), int(input_h))
        self.score_threshold = float(score_threshold)
        self.nms_iou = float(nms_iou)
        self.max_detections = int(max_detections)
        if not 0 < self.max_detections <= 255:
            raise ValueError('yolov8_seg: max_detections must be 1..255 (one uint8 mask)')
        self.agnostic = bool(agnostic)
        self.mask_threshold = float(mask_threshold)
        if not 0.0 < self.mask_threshold < 1.0:
            raise ValueError('mask_threshold must be between 0 and 1')
        # sigmoid(logit) > t  <=>  logit > log(t / (1 - t))
        self.logit_threshold = float(np.log(self.mask_threshold / (1 - self.mask_threshold)))

    def _split(self, outputs: List[np.ndarray]):
        """Return (N x (4 + nc + M) rows, M x Hp x Wp prototypes), told apart by rank."""
        arrs = [np.asarray(o) for o in outputs]
        shapes = [list(a.shape) for a in arrs]
        nc = self.num_classes
        protos = [a for a in arrs if a.ndim == 4 and a.shape[0] == 1]
        dets = [a for a in arrs if a.ndim in (2, 3)]
        if len(protos) == 1 and len(dets) == 1:
            p = protos[0][0]
            sides = dets[0].shape[-2:]
            for m, planes in ((p.shape[0], p), (p.shape[2], np.moveaxis(p, 2, 0))):
                if 4 + nc + m in sides:
                    rows = _rows(dets[0], 4 + nc + m, 'yolov8_seg')
                    return rows, np.ascontiguousarray(planes, np.float32)
        raise OutputError(f'yolov8_seg: expected detections [1, 4 + {nc} + M, N] (or '
                          f'[1, N, 4 + {nc} + M]) and prototypes [1, M, Hp, Wp] with the '
                          f'same M; got shapes {shapes}; check the class count (labels)')

    def __call__(self, outputs: List[np.ndarray], tf: Transform) -> InstanceMasks:
        """Decode both outputs; boxes in source pixels, one mask map at the source size."""
        if tf.src_w <= 0 or tf.src_h <= 0:
            raise ValueError('yolov8_seg needs the Transform of the source size (src_w, src_h)')
        rows, protos = self._split(outputs)
        nc = self.num_classes
        idx, scores, class_ids = best_class(rows[:, 4:4 + nc], self.score_threshold)
        cand = np.array(rows[idx], np.float32)
        _check_finite('boxes and mask coefficients', cand)
        boxes = _xyxy(cand[:, :4])
        groups = np.zeros_like(class_ids) if self.agnostic else class_ids
        keep = nms(boxes, scores, groups, self.nms_iou, self.max_detections)
        coeffs = cand[keep, 4 + nc:]
        boxes = tf.to_source(boxes[keep])
        mask = np.zeros((tf.src_h, tf.src_w), np.uint8)
        if len(keep):
            _check_finite('mask prototypes', protos)
            for i, (box, coeff) in enumerate(zip(boxes, coeffs)):
                self._paint(mask, i + 1, box, coeff, protos, tf)
        return InstanceMasks(boxes, scores[keep], class_ids[keep], mask=mask)

    def _paint(self, mask: np.ndarray, value: int, box: np.ndarray, coeff: np.ndarray,
               protos: np.ndarray, tf: Transform) -> None:
        """Write ``value`` where the instance's mask is on, inside its box, not yet taken."""
        m, hp, wp = protos.shape
        vx0, vy0, vx1, vy1 = tf.visible(*self.input_size)
        # source pixels whose centre lies in the box
        x0 = int(np.clip(np.ceil(box[0] - 0.5), vx0, vx1))
        y0 = int(np.clip(np.ceil(box[1] - 0.5), vy0, vy1))
        x1 = int(np.clip(np.ceil(box[2] - 0.5), vx0, vx1))
        y1 = int(np.clip(np.ceil(box[3] - 0.5), vy0, vy1))
        if x1 <= x0 or y1 <= y0:
            return
        aff = tf.map_affine(wp, hp, *self.input_size)
        # the prototype window those pixels sample, one cell of margin for bilinear
        ax = aff[0, 0] * np.array([x0, x1 - 1]) + aff[0, 2]
        ay = aff[1, 1] * np.array([y0, y1 - 1]) + aff[1, 2]
        ax0, ax1 = max(0, int(np.floor(ax[0])) - 1), min(wp, int(np.ceil(ax[1])) + 2)
        ay0, ay1 = max(0, int(np.floor(ay[0])) - 1), min(hp, int(np.ceil(ay[1])) + 2)
        if ax1 <= ax0 or ay1 <= ay0:
            return
        window = protos[:, ay0:ay1, ax0:ax1].reshape(m, -1)
        logits = (coeff @ window).reshape(ay1 - ay0, ax1 - ax0).astype(np.float32)
        aff[0, 2] += aff[0, 0] * x0 - ax0
        aff[1, 2] += aff[1, 1] * y0 - ay0
        roi = cv2.warpAffine(logits, aff, (x1 - x0, y1 - y0),
                             flags=cv2.INTER_LINEAR | cv2.WARP_INVERSE_MAP,
                             borderMode=cv2.BORDER_REPLICATE)
        region = mask[y0:y1, x0:x1]
        region[(roi > self.logit_threshold) & (region == 0)] = value

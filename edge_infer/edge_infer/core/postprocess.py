# Copyright 2026 edge_infer contributors. Apache-2.0.
"""Model outputs -> detections or classes, in source-image pixels.

Decoders are looked up by the registry's ``decoder`` name. Non-finite model
outputs (NaN/Inf from a broken backend) raise :class:`OutputError` rather than
publishing garbage.
"""

import dataclasses
from dataclasses import dataclass, field
from typing import List, Optional, Sequence

import cv2
import numpy as np

from .preprocess import Transform


class OutputError(ValueError):
    """Model outputs that cannot be decoded (wrong shape, NaN/Inf)."""


@dataclass
class Detections:
    """N detections: boxes (N x 4, x1 y1 x2 y2, source pixels), scores, class ids.

    ``track_ids``: N ints from the node's tracker (:mod:`.tracking`), stable
    for the life of a track, -1 for a box no track holds yet; None untracked.
    """

    boxes: np.ndarray
    scores: np.ndarray
    class_ids: np.ndarray
    track_ids: Optional[np.ndarray] = field(default=None, kw_only=True)

    def __len__(self) -> int:
        return int(self.scores.shape[0])

    def rows(self, keep: np.ndarray) -> 'Detections':
        """Return a copy with the detections where ``keep`` (N bool) is true, of the same type.

        Every per-detection array is cut (boxes, keypoints, rotated boxes,
        track ids); an instance ``mask`` is renumbered (``i + 1`` per kept
        detection, 0 where a dropped one was).
        """
        keep = np.asarray(keep, dtype=bool).reshape(-1)
        n = len(self)
        cut = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if f.name == 'mask' and isinstance(value, np.ndarray):
                renumber = np.zeros(n + 1, dtype=value.dtype)
                renumber[1:][keep] = np.arange(1, int(keep.sum()) + 1)
                cut[f.name] = renumber[value]
            elif isinstance(value, np.ndarray) and value.ndim and value.shape[0] == n:
                cut[f.name] = value[keep]
        return dataclasses.replace(self, **cut)


@dataclass
class Poses(Detections):
    """N people (or objects) with K keypoints each: a detection per instance.

    ``keypoints``: N x K x 3 float32, (x, y) in source pixels and a score in
    0..1 per keypoint; the names and skeleton come from the registry entry.
    """

    keypoints: np.ndarray


@dataclass
class InstanceMasks(Detections):
    """Detections with a mask each, as one map: ``mask`` H x W uint8 at the source size.

    Pixel value ``i + 1`` belongs to detection ``i`` (the best-scored wins
    where masks overlap); 0 is no detection.
    """

    mask: np.ndarray


@dataclass
class SemanticMask:
    """Per-pixel classes: ``mask`` H x W uint8 class ids at the source size."""

    mask: np.ndarray


@dataclass
class Classes:
    """Top-k classes: ids and probabilities, best first."""

    class_ids: np.ndarray
    scores: np.ndarray

    def __len__(self) -> int:
        return int(self.scores.shape[0])


def _check_finite(name: str, arr: np.ndarray) -> None:
    if not np.isfinite(arr).all():
        raise OutputError(f'model output {name} holds NaN or Inf')


def nms(boxes: np.ndarray, scores: np.ndarray, class_ids: np.ndarray,
        iou_threshold: float, max_detections: int) -> np.ndarray:
    """Class-aware non-maximum suppression; returns kept indices, best first."""
    if len(scores) == 0:
        return np.zeros(0, np.int64)
    xywh = np.empty_like(boxes)
    xywh[:, :2] = boxes[:, :2]
    xywh[:, 2:] = boxes[:, 2:] - boxes[:, :2]
    kept = cv2.dnn.NMSBoxesBatched(xywh.tolist(), scores.tolist(), class_ids.tolist(),
                                   0.0, float(iou_threshold))
    keep = np.asarray(kept, np.int64).reshape(-1)
    keep = keep[np.argsort(-scores[keep], kind='stable')]
    return keep[:max_detections]


def best_class(cls: np.ndarray, threshold: float, objectness: Optional[np.ndarray] = None):
    """Return (rows over ``threshold``, their scores, their class ids): each row's best class.

    ``cls``: N x classes scores; ``objectness``: N values the score is multiplied by.
    """
    class_ids = cls.argmax(1)
    scores = cls[np.arange(len(cls)), class_ids]
    if objectness is not None:
        scores = scores * objectness
    _check_finite('scores', scores)
    idx = np.nonzero(scores > threshold)[0]
    return idx, scores[idx].astype(np.float32), class_ids[idx]


def suppressed(boxes: np.ndarray, scores: np.ndarray, class_ids: np.ndarray, tf: Transform,
               nms_iou: float, max_detections: int, agnostic: bool = False) -> Detections:
    """Return what NMS keeps (per class unless ``agnostic``), boxes in source pixels."""
    _check_finite('boxes', boxes)
    groups = np.zeros_like(class_ids) if agnostic else class_ids
    keep = nms(boxes, scores, groups, nms_iou, max_detections)
    return Detections(tf.to_source(boxes[keep]), scores[keep], class_ids[keep])


class NanoDetDecoder:
    """Decode NanoDet-Plus heads: per stride, class scores and GFL box distributions.

    Outputs are (1, N, num_classes) scores (already sigmoid) and (1, N, 4 * bins)
    distances, for strides in order; cell centre = (i + 0.5) * stride.
    """

    def __init__(self, input_w: int, input_h: int, strides: Sequence[int], bins: int,
                 num_classes: int, score_threshold: float, nms_iou: float,
                 max_detections: int):
        self.strides = list(strides)
        self.bins = int(bins)
        self.num_classes = int(num_classes)
        self.score_threshold = float(score_threshold)
        self.nms_iou = float(nms_iou)
        self.max_detections = int(max_detections)
        centres, cell_stride = [], []
        for s in self.strides:
            gw, gh = -(-input_w // s), -(-input_h // s)
            ys, xs = np.meshgrid(np.arange(gh), np.arange(gw), indexing='ij')
            centres.append(np.stack([(xs.ravel() + 0.5) * s, (ys.ravel() + 0.5) * s], 1))
            cell_stride.append(np.full(gw * gh, s, np.float32))
        self.centres = np.concatenate(centres).astype(np.float32)
        self.cell_stride = np.concatenate(cell_stride)
        self.project = np.arange(self.bins, dtype=np.float32)

    def __call__(self, outputs: List[np.ndarray], tf: Transform) -> Detections:
        """Decode outputs ordered as [cls per stride..., reg per stride...]."""
        n = len(self.strides)
        if len(outputs) != 2 * n:
            raise OutputError(f'expected {2 * n} outputs, got {len(outputs)}')
        cls = np.concatenate([o.reshape(-1, o.shape[-1]) for o in outputs[:n]])
        reg = np.concatenate([o.reshape(-1, o.shape[-1]) for o in outputs[n:]])
        if cls.shape != (len(self.centres), self.num_classes) or \
                reg.shape != (len(self.centres), 4 * self.bins):
            raise OutputError(f'output shapes {cls.shape} / {reg.shape} do not match '
                              f'{len(self.centres)} cells x {self.num_classes} classes '
                              f'/ 4 x {self.bins} bins')
        idx, scores, class_ids = best_class(cls, self.score_threshold)
        dist = reg[idx].reshape(-1, 4, self.bins)
        _check_finite('box distributions', dist)
        dist = np.exp(dist - dist.max(2, keepdims=True))
        dist /= dist.sum(2, keepdims=True)
        ltrb = (dist @ self.project) * self.cell_stride[idx, None]
        c = self.centres[idx]
        boxes = np.concatenate([c - ltrb[:, :2], c + ltrb[:, 2:]], 1)
        return suppressed(boxes, scores, class_ids, tf, self.nms_iou, self.max_detections)


class TopKDecoder:
    """Softmax (unless the model already outputs probabilities) and top-k."""

    def __init__(self, k: int, softmax: bool = True):
        self.k = int(k)
        self.softmax = softmax

    def __call__(self, outputs: List[np.ndarray], tf: Optional[Transform] = None) -> Classes:
        """Decode the first output (1 x num_classes logits or probabilities)."""
        logits = outputs[0].reshape(-1)
        _check_finite('logits', logits)
        if self.softmax:
            p = np.exp(logits - logits.max())
            p /= p.sum()
        else:
            p = logits
        k = min(self.k, p.size)
        top = np.argpartition(-p, k - 1)[:k]
        top = top[np.argsort(-p[top], kind='stable')]
        return Classes(top, p[top].astype(np.float32))

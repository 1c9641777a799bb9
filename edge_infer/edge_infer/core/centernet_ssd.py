# Copyright 2026 edge_infer contributors. Apache-2.0.
"""CenterNet heatmaps and SSD-style box / score tensors -> detections (no ROS).

- ``centernet`` (:class:`CenterNetDecoder`): a class heatmap ``[1, H, W, C]``
  or ``[1, C, H, W]`` (C = the labels' count; sigmoid already unless
  ``activation: sigmoid``) and box regression on the same grid. A peak is a
  cell equal to the max of its 3 x 3 neighbourhood and over
  ``score_threshold``; the best ``max_detections`` peaks are kept. The
  stride is the input size / the grid size. ``box_encoding``:

  * ``ltrb`` (default): one ``[.., 4]`` output, distances left, top, right,
    bottom from the point ``((x + cell_offset) * stride, (y + cell_offset) *
    stride)``; ``box_units: cells`` (default, x stride) or ``pixels``
    (model-input pixels).
  * ``wh_offset``: classic CenterNet: a ``[.., 2]`` size (w, h) and,
    optionally, a ``[.., 2]`` sub-cell offset (dx, dy): centre ``((x + dx +
    cell_offset) * stride, ...)``, size in ``box_units``.

  Outputs are told apart by channel count (C, 4, 2) and layout (channels
  first or last), in the order heatmap, boxes, offset where that is
  ambiguous (e.g. two 2-channel outputs). ``nms_iou`` < 1 adds NMS (default
  1.0, off: the peaks are the suppression).
- ``ssd`` (:class:`SsdDecoder`): boxes ``[1, N, 4]`` and scores ``[1, N, C]``,
  decoded already (boxes relative to the image, not to prior boxes: raw
  anchor-relative SSD heads with their priors are not read), told apart by
  the last side (4 vs C; boxes first when both are 4). ``box_format``
  ``xyxy`` | ``yxyx`` | ``cxcywh``; ``normalized`` (true: 0..1 of the
  input, false: model-input pixels); ``background_class`` (true: score
  column 0 is the background, so C = labels + 1; it is dropped and ids
  shift by one); ``activation`` ``none`` | ``sigmoid`` | ``softmax`` (over
  all C columns, background included). Then best class and NMS.
"""

import itertools
from typing import Dict, List

import numpy as np

from .detector_layouts import _xyxy
from .postprocess import _check_finite, best_class, Detections, OutputError, suppressed
from .preprocess import Transform


def _choice(name: str, value, allowed) -> str:
    if value not in allowed:
        raise ValueError(f"{name} '{value}' unknown (one of {', '.join(allowed)})")
    return value


def _flag(name: str, value) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(f'{name} must be true or false, got {value!r}')
    return bool(value)


class CenterNetDecoder:
    """Heatmap peaks (3 x 3 max) and the box regressed at each peak's cell."""

    def __init__(self, input_w: int, input_h: int, num_classes: int,
                 score_threshold: float = 0.3, max_detections: int = 100,
                 box_encoding: str = 'ltrb', box_units: str = 'cells',
                 cell_offset: float = 0.0, activation: str = 'none', nms_iou: float = 1.0,
                 agnostic: bool = False):
        self.input_size = (int(input_w), int(input_h))
        self.num_classes = int(num_classes)
        if self.num_classes < 1:
            raise ValueError('a detector needs at least one class (labels file)')
        self.score_threshold = float(score_threshold)
        self.max_detections = int(max_detections)
        self.box_encoding = _choice('box_encoding', box_encoding, ('ltrb', 'wh_offset'))
        self.box_units = _choice('box_units', box_units, ('cells', 'pixels'))
        self.cell_offset = float(cell_offset)
        self.activation = _choice('activation', activation, ('none', 'sigmoid'))
        self.nms_iou = float(nms_iou)
        self.agnostic = _flag('agnostic', agnostic)
        self._layouts: Dict[tuple, tuple] = {}      # output shapes -> how they were read

    def _roles(self, outputs: List[np.ndarray]):
        """Return (heatmap, boxes, offset or None) as C x H x W views, found by shape."""
        shapes = tuple(tuple(np.shape(o)) for o in outputs)
        if shapes not in self._layouts:
            self._layouts[shapes] = self._find(shapes)
        order, layouts = self._layouts[shapes]
        planes = []
        for i, nhwc in zip(order, layouts):
            a = np.asarray(outputs[i])[0]
            planes.append(np.moveaxis(a, 2, 0) if nhwc else a)
        return planes[0], planes[1], planes[2] if len(planes) > 2 else None

    def _find(self, shapes):
        channels = [self.num_classes, 4 if self.box_encoding == 'ltrb' else 2, 2]
        counts = (2,) if self.box_encoding == 'ltrb' else (2, 3)
        if len(shapes) in counts and all(len(s) == 4 and s[0] == 1 for s in shapes):
            for order in itertools.permutations(range(len(shapes))):
                for layouts in itertools.product((False, True), repeat=len(shapes)):
                    grids = set()
                    ok = True
                    for want, i, nhwc in zip(channels, order, layouts):
                        s = shapes[i]
                        ok &= (s[3] if nhwc else s[1]) == want
                        grids.add(s[1:3] if nhwc else s[2:4])
                    if ok and len(grids) == 1:
                        return order, layouts
        want = ('[1, H, W, 4] ltrb distances' if self.box_encoding == 'ltrb' else
                '[1, H, W, 2] sizes (and optionally [1, H, W, 2] offsets)')
        raise OutputError(f'centernet: expected a heatmap [1, H, W, {self.num_classes}] '
                          f'({self.num_classes} labels) and {want} on the same grid, or '
                          f'the same channels first; got shapes {[list(s) for s in shapes]}')

    def __call__(self, outputs: List[np.ndarray], tf: Transform) -> Detections:
        """Decode the heatmap and box outputs; boxes in source pixels."""
        heat, reg, off = self._roles(outputs)
        _check_finite('heatmap', heat)
        t = self.score_threshold
        if self.activation == 'sigmoid':     # peaks and order are the same on logits
            t = float(np.log(t / (1 - t))) if 0 < t < 1 else (-np.inf if t <= 0 else np.inf)
        c, y, x = np.nonzero(heat > t)
        _, h, w = heat.shape
        v = heat[c, y, x]
        peak = np.ones(len(v), bool)
        for dy, dx in itertools.product((-1, 0, 1), repeat=2):
            if dy or dx:
                peak &= v >= heat[c, np.clip(y + dy, 0, h - 1), np.clip(x + dx, 0, w - 1)]
        c, y, x, v = c[peak], y[peak], x[peak], v[peak]
        top = np.argsort(-v, kind='stable')[:self.max_detections]
        c, y, x, v = c[top], y[top], x[top], v[top].astype(np.float32)
        if self.activation == 'sigmoid':
            v = 1.0 / (1.0 + np.exp(-v))
        stride = np.array([self.input_size[0] / w, self.input_size[1] / h], np.float32)
        vals = np.asarray(reg[:, y, x], np.float32).T
        _check_finite('box regression', vals)
        cell = np.stack([x, y], 1).astype(np.float32) + self.cell_offset
        if self.box_encoding == 'ltrb':
            dist = vals * np.tile(stride, 2) if self.box_units == 'cells' else vals
            centre = cell * stride
            boxes = np.concatenate([centre - dist[:, :2], centre + dist[:, 2:]], 1)
        else:
            if off is not None:
                dxy = np.asarray(off[:, y, x], np.float32).T
                _check_finite('offsets', dxy)
                cell = cell + dxy
            wh = vals * stride if self.box_units == 'cells' else vals
            boxes = _xyxy(np.concatenate([cell * stride, wh], 1))
        class_ids = c.astype(np.int64)
        if self.nms_iou < 1.0:
            return suppressed(boxes, v, class_ids, tf, self.nms_iou, self.max_detections,
                              self.agnostic)
        return Detections(tf.to_source(boxes), v, class_ids)


class SsdDecoder:
    """Decoded SSD-style outputs: a box and C class scores per candidate."""

    def __init__(self, input_w: int, input_h: int, num_classes: int,
                 score_threshold: float = 0.5, nms_iou: float = 0.45,
                 max_detections: int = 100, box_format: str = 'xyxy', normalized: bool = True,
                 background_class: bool = False, activation: str = 'none',
                 agnostic: bool = False):
        self.num_classes = int(num_classes)
        if self.num_classes < 1:
            raise ValueError('a detector needs at least one class (labels file)')
        self.score_threshold = float(score_threshold)
        self.nms_iou = float(nms_iou)
        self.max_detections = int(max_detections)
        self.box_format = _choice('box_format', box_format, ('xyxy', 'yxyx', 'cxcywh'))
        self.normalized = _flag('normalized', normalized)
        self.background_class = _flag('background_class', background_class)
        self.activation = _choice('activation', activation, ('none', 'sigmoid', 'softmax'))
        self.agnostic = _flag('agnostic', agnostic)
        self.columns = self.num_classes + int(self.background_class)
        self.scale = np.array([input_w, input_h] * 2, np.float32) if self.normalized else 1.0

    def _split(self, outputs: List[np.ndarray]):
        arrs = [np.asarray(o) for o in outputs]
        shapes = [list(a.shape) for a in arrs]
        if len(arrs) == 2 and all(a.ndim == 2 or (a.ndim in (3, 4) and a.shape[0] == 1)
                                  for a in arrs):
            last = [a.shape[-1] for a in arrs]
            order = (0, 1) if last == [4, self.columns] else \
                (1, 0) if last == [self.columns, 4] else None
            if order is not None:
                boxes = arrs[order[0]].reshape(-1, 4)
                scores = arrs[order[1]].reshape(-1, self.columns)
                if len(boxes) == len(scores):
                    return boxes, scores
        bg = ' + 1 background' if self.background_class else ''
        raise OutputError(f'ssd: expected boxes [1, N, 4] and scores [1, N, {self.columns}] '
                          f'({self.num_classes} labels{bg}); got shapes {shapes}')

    def __call__(self, outputs: List[np.ndarray], tf: Transform) -> Detections:
        """Decode the box and score outputs; boxes in source pixels."""
        boxes, scores = self._split(outputs)
        scores = np.asarray(scores, np.float32)
        _check_finite('scores', scores)
        if self.activation == 'sigmoid':
            scores = 1.0 / (1.0 + np.exp(-np.clip(scores, -60.0, 60.0)))
        elif self.activation == 'softmax':
            scores = np.exp(scores - scores.max(1, keepdims=True))
            scores /= scores.sum(1, keepdims=True)
        if self.background_class:
            scores = scores[:, 1:]
        idx, best, class_ids = best_class(scores, self.score_threshold)
        b = np.array(boxes[idx], np.float32)
        if self.box_format == 'yxyx':
            b = b[:, [1, 0, 3, 2]]
        elif self.box_format == 'cxcywh':
            b = _xyxy(b)
        b *= self.scale
        return suppressed(b, best, class_ids, tf, self.nms_iou, self.max_detections,
                          self.agnostic)

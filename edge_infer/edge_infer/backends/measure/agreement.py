# Copyright 2026 edge_infer contributors. Apache-2.0.
"""How far a candidate's decoded results agree with the CPU fp32 reference, per task (0..1).

- classification: share of the frames whose reference top-1 is clear
  (ahead of its second by :data:`CLEAR_MARGIN`) that keep it; the near
  ties are counted apart, in the detail (a flip between classes the
  reference can hardly tell apart is not an accuracy loss);
- detection (and instance segmentation): F1 of boxes matched by class and
  IoU >= 0.5, scaled down when every object of a frame is missed;
- pose: that F1 times the share of the reference's confident keypoints
  (score >= 0.3) of matched instances that the candidate puts within 5 % of
  the instance's box size (PCK);
- semantic segmentation: the mean over frames of the IoU of the non-zero
  classes' pixels, class by class (a frame empty in both agrees).

Each verdict comes with a 95 % interval (:class:`Verdict`): Wilson's score
interval for the classifier's share, a bootstrap over the frames for the
others. The floors are in config/backends.yaml (``min_accuracy``, per task)
and are compared with the point value; the interval says how much the frames
judged can tell.
"""

from typing import Callable, List, NamedTuple, Sequence, Tuple

import numpy as np

from ...core.postprocess import Classes, Detections

# A classifier's top-1 may flip between classes the fp32 reference itself
# cannot tell apart: on a street frame MobileNetV2 scored flagpole 0.128 and
# swing 0.126, and bf16 / fp16 runs (score changes up to 0.016) picked swing;
# an int8 file flipped "pole 0.31" and "tripod 0.25". Such a flip is not an
# accuracy loss; a flip away from a clear winner is. So only frames whose
# reference top-1 leads its second by CLEAR_MARGIN are counted; the near ties
# are reported apart. Where no frame is clear, every frame counts, a flip
# within TIE_MARGIN excused.
CLEAR_MARGIN = 0.10
TIE_MARGIN = 0.01
Z95 = 1.96
BOOTSTRAP = 1000


class Verdict(NamedTuple):
    """An agreement (0..1), its 95 % interval, how many frames it rests on, and the detail."""

    value: float
    low: float
    high: float
    frames: int
    detail: str


def wilson(k: int, n: int, z: float = Z95) -> Tuple[float, float]:
    """Return Wilson's score interval for ``k`` successes in ``n`` trials ((0, 1) if n is 0)."""
    if n <= 0:
        return 0.0, 1.0
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, float(centre - half)), min(1.0, float(centre + half))


def bootstrap(n: int, value: Callable[[np.ndarray], float]) -> Tuple[float, float]:
    """Return the 2.5 and 97.5 percentiles of ``value(frame indices)`` over resampled frames.

    Seeded: the same outputs give the same interval.
    """
    if n <= 1:
        v = value(np.arange(n))
        return v, v
    rng = np.random.default_rng(0)
    samples = [value(idx) for idx in rng.integers(0, n, (BOOTSTRAP, n))]
    return float(np.percentile(samples, 2.5)), float(np.percentile(samples, 97.5))


def _interval(low: float, high: float, n: int, what: str = 'frames') -> str:
    return f'95 % interval {low:.2f}-{high:.2f} over {n} {what}'


def _top1(ref: List[Classes], got: List[Classes], clear_margin: float = CLEAR_MARGIN,
          tie_margin: float = TIE_MARGIN) -> Verdict:
    """Share of the frames with a clear reference top-1 whose top-1 agrees; near ties apart."""
    same = np.array([int(g.class_ids[0]) == int(r.class_ids[0]) for r, g in zip(ref, got)])
    margin = np.array([float(r.scores[0] - r.scores[1]) if len(r) > 1 else 1.0 for r in ref])
    clear = margin >= clear_margin
    dmax = max(float(abs(r.scores[0] - g.scores[0])) for r, g in zip(ref, got))
    ties = ''
    if clear.any():
        k, n = int(same[clear].sum()), int(clear.sum())
        detail = f'top-1 same on {k}/{n} frames with a clear reference top-1'
        if (~clear).any():
            ties = (f'; near ties (reference top-2 within {clear_margin:g}) apart: same on '
                    f'{int(same[~clear].sum())}/{int((~clear).sum())}')
    else:   # no clear frame: all count, a flip between tied classes excused
        excused = 0
        for r, g, s in zip(ref, got, same):
            hit = np.flatnonzero(r.class_ids == int(g.class_ids[0]))
            excused += int(not s and hit.size > 0
                           and float(r.scores[0] - r.scores[hit[0]]) <= tie_margin)
        k, n = int(same.sum()) + excused, len(ref)
        detail = f'top-1 same on {int(same.sum())}/{n} frames (no clear reference top-1)'
        if excused:
            ties = (f' (+{excused} flip(s) between classes tied within {tie_margin:g} in the '
                    f'reference)')
    low, high = wilson(k, n)
    what = 'clear frames' if clear.any() else 'frames'
    return Verdict(k / n, low, high, n, f'{detail}{ties}, max top-1 score diff {dmax:.3f}, '
                                        f'{_interval(low, high, n, what)}')


def _top1_agreement(ref: List[Classes], got: List[Classes],
                    tie_margin: float = TIE_MARGIN) -> Tuple[float, str]:
    """Return (agreement, detail) of the top-1 classes (:func:`_top1`)."""
    v = _top1(ref, got, tie_margin=tie_margin)
    return v.value, v.detail


def _iou(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Return the IoU of one box (x1, y1, x2, y2) against many."""
    x1 = np.maximum(a[0], b[:, 0])
    y1 = np.maximum(a[1], b[:, 1])
    x2 = np.minimum(a[2], b[:, 2])
    y2 = np.minimum(a[3], b[:, 3])
    inter = np.clip(x2 - x1, 0, None) * np.clip(y2 - y1, 0, None)
    area = (a[2] - a[0]) * (a[3] - a[1]) + (b[:, 2] - b[:, 0]) * (b[:, 3] - b[:, 1]) - inter
    return inter / np.maximum(area, 1e-9)


def _pairs(ref: Detections, got: Detections):
    """Yield (i, j) of matched instances: same class, IoU >= 0.5, greedy by reference score."""
    free = np.ones(len(got.scores), bool)
    for i in np.argsort(-ref.scores):
        if not free.any():
            return
        same = free & (got.class_ids == ref.class_ids[i])
        if not same.any():
            continue
        ious = np.where(same, _iou(ref.boxes[i], got.boxes), -1.0)
        j = int(np.argmax(ious))
        if ious[j] >= 0.5:
            free[j] = False
            yield int(i), j


def _matches(ref: Sequence[Detections], got: Sequence[Detections]) -> List[List[Tuple[int, int]]]:
    """Return each frame's matched (reference, candidate) pairs: matched once per verdict."""
    return [list(_pairs(r, g)) for r, g in zip(ref, got)]


def _box_counts(ref: Sequence[Detections], got: Sequence[Detections],
                pairs: List[List[Tuple[int, int]]]) -> np.ndarray:
    """Per frame: matched, reference boxes, boxes found, has objects, all of them missed."""
    rows = [(len(p), len(r.scores), len(g.scores), len(r.scores) > 0,
             len(r.scores) > 0 and not p) for r, g, p in zip(ref, got, pairs)]
    return np.array(rows, float).reshape(-1, 5)


def _f1(c: np.ndarray) -> float:
    """Return the box F1 of per-frame counts, scaled by the share of frames not wholly missed."""
    matched, n_ref, n_got, with_objects, lost = c.sum(axis=0)
    if n_ref + n_got == 0:
        return 1.0
    f1 = 2 * matched / (n_ref + n_got)
    return float(f1 * (1 - lost / with_objects)) if lost else float(f1)


def _detection(ref: List[Detections], got: List[Detections]) -> Verdict:
    """F1 of matches (same class, IoU >= 0.5, greedy by score) over all frames.

    A frame whose objects are ALL missed counts beyond its boxes: the F1 is
    scaled by the share of frames with objects that kept at least one (an
    int8 NanoDet missed the only person of a photo while its F1 over all
    boxes stayed 0.98).
    """
    pairs = _matches(ref, got)
    c = _box_counts(ref, got, pairs)
    n = len(c)
    if not c[:, 1:3].sum():
        return Verdict(1.0, 1.0, 1.0, n, 'no detections in either (frames without objects)')
    low, high = bootstrap(n, lambda idx: _f1(c[idx]))
    return Verdict(_f1(c), low, high, n,
                   f'{_box_detail(ref, got, pairs, c)}, {_interval(low, high, n)}')


def _box_detail(ref: Sequence[Detections], got: Sequence[Detections],
                pairs: List[List[Tuple[int, int]]], c: np.ndarray) -> str:
    """Say how many boxes matched, the largest score change, the frames that lost all."""
    matched, n_ref, n_got, with_objects, lost = (int(v) for v in c.sum(axis=0))
    dscore = max([float(abs(r.scores[i] - g.scores[j]))
                  for r, g, p in zip(ref, got, pairs) for i, j in p] or [0.0])
    return (f'{matched} of {n_ref} reference boxes matched ({n_got} found), '
            f'max score diff {dscore:.3f}'
            + (f', every object missed on {lost} of {with_objects} frames' if lost else ''))


def _detection_agreement(ref: List[Detections], got: List[Detections]) -> Tuple[float, str]:
    """Return (agreement, detail) of the boxes (:func:`_detection`)."""
    v = _detection(ref, got)
    return v.value, v.detail


KEYPOINT_SCORE = 0.3    # a reference keypoint counts when at least this confident
KEYPOINT_TOLERANCE = 0.05   # of the instance's box size (sqrt of its area)


def _pose(ref, got) -> Verdict:
    """Return the detection F1 of the instances times the PCK of their confident keypoints."""
    pairs = _matches(ref, got)
    c = _box_counts(ref, got, pairs)
    points = []
    for r, g, p in zip(ref, got, pairs):
        near = total = 0
        for i, j in p:
            x1, y1, x2, y2 = r.boxes[i]
            tol = KEYPOINT_TOLERANCE * max(1.0, float(np.sqrt(max(0, x2 - x1) * max(0, y2 - y1))))
            sure = r.keypoints[i, :, 2] >= KEYPOINT_SCORE
            d = np.hypot(*(r.keypoints[i, sure, :2] - g.keypoints[j, sure, :2]).T)
            near += int((d <= tol).sum())
            total += int(sure.sum())
        points.append((near, total))
    pk = np.array(points, float).reshape(-1, 2)

    def value(idx: np.ndarray) -> float:
        near, total = pk[idx].sum(axis=0)
        return _f1(c[idx]) * (near / total if total else 1.0)
    n = len(c)
    low, high = bootstrap(n, value)
    near, total = (int(v) for v in pk.sum(axis=0))
    return Verdict(value(np.arange(n)), low, high, n,
                   f'{_box_detail(ref, got, pairs, c)}; keypoints within 5 % of the box: '
                   f'{near}/{total}, '
                   f'{_interval(low, high, n)}')


def _mask(ref, got) -> Verdict:
    """Mean over frames of the class-by-class IoU of the non-zero mask pixels."""
    ious = []
    for r, g in zip(ref, got):
        if r.mask.shape != g.mask.shape:
            ious.append(0.0)
            continue
        inter = union = 0
        for c in np.union1d(np.unique(r.mask), np.unique(g.mask)):
            if c == 0:
                continue
            a, b = r.mask == c, g.mask == c
            inter += int((a & b).sum())
            union += int((a | b).sum())
        ious.append(inter / union if union else 1.0)
    arr = np.array(ious)
    low, high = bootstrap(len(arr), lambda idx: float(arr[idx].mean()))
    return Verdict(float(arr.mean()), low, high, len(arr),
                   f'mask IoU: mean {arr.mean():.3f}, min {arr.min():.3f}, '
                   f'{_interval(low, high, len(arr))}')


def judge(spec, ref: list, got: list) -> Verdict:
    """Return the agreement of ``got`` with ``ref`` for ``spec``'s task, with its interval.

    ``got`` may be shorter than ``ref`` (a slow candidate judged on fewer
    frames): it is compared with the reference's first ``len(got)``.
    """
    ref = list(ref)[:len(got)]
    if spec.task == 'classification':
        return _top1(ref, got)
    if spec.task == 'pose':
        return _pose(ref, got)
    if spec.task == 'segmentation' and not isinstance(ref[0], Detections):
        return _mask(ref, got)
    return _detection(ref, got)


def agreement(spec, ref: list, got: list) -> Tuple[float, str]:
    """Return (agreement 0..1, detail) of ``got`` vs ``ref`` for ``spec``'s task."""
    v = judge(spec, ref, got)
    return v.value, v.detail

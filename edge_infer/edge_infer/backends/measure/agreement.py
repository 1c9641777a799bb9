# Copyright 2026 edge_infer contributors. Apache-2.0.
"""How far a candidate's decoded results agree with the CPU fp32 reference, per task (0..1).

- classification: share of frames with the same top-1 (a flip between
  classes the reference itself ties is not a loss);
- detection (and instance segmentation): F1 of boxes matched by class and
  IoU >= 0.5, scaled down when every object of a frame is missed;
- pose: that F1 times the share of the reference's confident keypoints
  (score >= 0.3) of matched instances that the candidate puts within 5 % of
  the instance's box size (PCK);
- semantic segmentation: the mean over frames of the IoU of the non-zero
  classes' pixels, class by class (a frame empty in both agrees).

The floors are in config/backends.yaml (``min_accuracy``, per task).
"""

from typing import List, Tuple

import numpy as np

from ...core.postprocess import Classes, Detections

# A classifier's top-1 may flip between classes the fp32 reference itself
# cannot tell apart: on a street frame MobileNetV2 scored flagpole 0.128 and
# swing 0.126, and bf16 / fp16 runs (score changes up to 0.016) picked swing.
# Such a flip is not an accuracy loss; a flip away from a clear winner is.
TIE_MARGIN = 0.01


def _top1_agreement(ref: List[Classes], got: List[Classes],
                    tie_margin: float = TIE_MARGIN) -> Tuple[float, str]:
    """Share of frames whose top-1 agrees with the reference.

    A different top-1 still agrees when the reference's own probability of
    that class is within ``tie_margin`` of its top-1 (a tie in the reference);
    such frames are counted in the detail.
    """
    same = ties = 0
    for r, g in zip(ref, got):
        top = int(g.class_ids[0])
        if top == int(r.class_ids[0]):
            same += 1
            continue
        hit = np.flatnonzero(r.class_ids == top)
        if hit.size and float(r.scores[0] - r.scores[hit[0]]) <= tie_margin:
            ties += 1
    dmax = max(float(abs(r.scores[0] - g.scores[0])) for r, g in zip(ref, got))
    detail = f'top-1 same on {same}/{len(ref)} frames'
    if ties:
        detail += (f' (+{ties} flip(s) between classes tied within {tie_margin:g} in the '
                   f'reference)')
    return (same + ties) / len(ref), detail + f', max top-1 score diff {dmax:.3f}'


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


def _detection_agreement(ref: List[Detections], got: List[Detections]) -> Tuple[float, str]:
    """F1 of matches (same class, IoU >= 0.5, greedy by score) over all frames.

    A frame whose objects are ALL missed counts beyond its boxes: the F1 is
    scaled by the share of frames with objects that kept at least one (an
    int8 NanoDet missed the only person of a photo while its F1 over all
    boxes stayed 0.98).
    """
    matched = n_ref = n_got = 0
    frames_with, frames_lost = 0, 0
    dscore = 0.0
    for r, g in zip(ref, got):
        before = matched
        n_ref += len(r.scores)
        n_got += len(g.scores)
        for i, j in _pairs(r, g):
            matched += 1
            dscore = max(dscore, float(abs(r.scores[i] - g.scores[j])))
        if len(r.scores):
            frames_with += 1
            frames_lost += matched == before
    if n_ref + n_got == 0:
        return 1.0, 'no detections in either (frames without objects)'
    f1 = 2 * matched / (n_ref + n_got)
    if frames_lost:
        f1 *= 1 - frames_lost / frames_with
    return f1, (f'{matched} of {n_ref} reference boxes matched ({n_got} found), '
                f'max score diff {dscore:.3f}'
                + (f', every object missed on {frames_lost} of {frames_with} frames'
                   if frames_lost else ''))


KEYPOINT_SCORE = 0.3    # a reference keypoint counts when at least this confident
KEYPOINT_TOLERANCE = 0.05   # of the instance's box size (sqrt of its area)


def _pose_agreement(ref, got) -> Tuple[float, str]:
    """Return the detection F1 of the instances times the PCK of their confident keypoints."""
    f1, detail = _detection_agreement(ref, got)
    near = total = 0
    for r, g in zip(ref, got):
        for i, j in _pairs(r, g):
            x1, y1, x2, y2 = r.boxes[i]
            tol = KEYPOINT_TOLERANCE * max(1.0, float(np.sqrt(max(0, x2 - x1) * max(0, y2 - y1))))
            sure = r.keypoints[i, :, 2] >= KEYPOINT_SCORE
            d = np.hypot(*(r.keypoints[i, sure, :2] - g.keypoints[j, sure, :2]).T)
            near += int((d <= tol).sum())
            total += int(sure.sum())
    pck = near / total if total else 1.0
    return f1 * pck, f'{detail}; keypoints within 5 % of the box: {near}/{total}'


def _mask_agreement(ref, got) -> Tuple[float, str]:
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
    return float(np.mean(ious)), f'mask IoU: mean {np.mean(ious):.3f}, min {min(ious):.3f}'


def agreement(spec, ref: list, got: list) -> Tuple[float, str]:
    """Return (agreement 0..1, detail) of ``got`` vs ``ref`` for ``spec``'s task."""
    if spec.task == 'classification':
        return _top1_agreement(ref, got)
    if spec.task == 'pose':
        return _pose_agreement(ref, got)
    if spec.task == 'segmentation' and not isinstance(ref[0], Detections):
        return _mask_agreement(ref, got)
    return _detection_agreement(ref, got)

# Copyright 2026 edge_infer contributors. Apache-2.0.
"""Results drawn on an image: the node's ``~/debug_image`` and the demo's pictures.

:func:`annotate` draws on a BGR image in place: boxes with label and score
(detector), the top classes (classifier), and a caption in the top-left
corner (model, backend, latency). :func:`draw_keypoints` adds poses (dots and
skeleton lines) and :func:`draw_mask` blends a mask (class or instance ids)
over the image. They work on plain values, so the node (from a model result)
and the demo (from result messages) share them.
"""

from typing import Iterable, Optional, Sequence, Tuple

import numpy as np

BOX = (0, 255, 0)
TEXT = (0, 200, 255)
CAPTION = (255, 255, 255)
KEYPOINT = (0, 0, 255)

# (label, score, x1, y1, x2, y2) in image pixels
Box = Tuple[str, float, float, float, float, float]


def to_bgr(pixels: np.ndarray, color: str) -> np.ndarray:
    """Return a new, contiguous BGR copy of an H x W x C image (never the input's memory).

    cv2.cvtColor reads padded rows (a frame viewed in place in its message) as
    they are: the conversion is the only copy.
    """
    import cv2
    if color == 'mono' or pixels.ndim == 2 or pixels.shape[2] == 1:
        return cv2.cvtColor(pixels.reshape(pixels.shape[:2]), cv2.COLOR_GRAY2BGR)
    if pixels.shape[2] == 4:
        code = cv2.COLOR_RGBA2BGR if color.startswith('rgb') else cv2.COLOR_BGRA2BGR
        return cv2.cvtColor(pixels, code)
    if color.startswith('rgb'):
        return cv2.cvtColor(pixels, cv2.COLOR_RGB2BGR)
    return np.array(pixels, copy=True, order='C')


def annotate(img: np.ndarray, boxes: Iterable[Box] = (),
             classes: Sequence[Tuple[str, float]] = (), caption: str = '',
             top_k: Optional[int] = None, rectangles: bool = True) -> np.ndarray:
    """Draw boxes, classes and a caption on ``img`` (BGR, in place); return it.

    ``rectangles`` False: the boxes' labels only (their outline drawn otherwise).
    """
    import cv2
    h, w = img.shape[:2]
    scale = max(0.4, min(1.5, w / 1000))
    thick = max(1, int(round(2 * scale)))
    for label, score, x1, y1, x2, y2 in boxes:
        p1 = (int(max(0, x1)), int(max(0, y1)))
        p2 = (int(min(w - 1, x2)), int(min(h - 1, y2)))
        if rectangles:
            cv2.rectangle(img, p1, p2, BOX, thick)
        cv2.putText(img, f'{label} {score:.2f}', (p1[0], max(int(14 * scale), p1[1] - 4)),
                    cv2.FONT_HERSHEY_SIMPLEX, 0.5 * scale, BOX, thick, cv2.LINE_AA)
    y = int(22 * scale) + (int(20 * scale) if caption else 0)
    for label, score in list(classes)[:top_k]:
        cv2.putText(img, f'{label} {score:.2f}', (8, y), cv2.FONT_HERSHEY_SIMPLEX,
                    0.6 * scale, TEXT, thick, cv2.LINE_AA)
        y += int(22 * scale)
    if caption:
        (tw, th), _ = cv2.getTextSize(caption, cv2.FONT_HERSHEY_SIMPLEX, 0.45 * scale, 1)
        cv2.rectangle(img, (0, 0), (min(w - 1, tw + 10), th + 10), (0, 0, 0), -1)
        cv2.putText(img, caption, (5, th + 5), cv2.FONT_HERSHEY_SIMPLEX, 0.45 * scale,
                    CAPTION, 1, cv2.LINE_AA)
    return img


def palette(n: int = 256) -> np.ndarray:
    """Return n BGR colours (uint8, n x 3), the same every run: id i gets colour i.

    Hues step by the golden ratio so that neighbouring ids differ; id 0 is black.
    """
    import cv2
    hues = (np.arange(n) * 0.618033988749895 * 180) % 180
    hsv = np.stack([hues, np.full(n, 200), np.full(n, 255)], 1).astype(np.uint8)
    colours = cv2.cvtColor(hsv[None], cv2.COLOR_HSV2BGR)[0]
    colours[0] = 0
    return colours


_PALETTE = palette()


def draw_mask(img: np.ndarray, mask: np.ndarray, alpha: float = 0.5) -> np.ndarray:
    """Blend a colour per non-zero id of ``mask`` (H x W uint8) over ``img`` (BGR, in place).

    Pixels where ``mask`` is 0 are left as they are; a mask of another size is
    resized to the image's first (nearest neighbour). Returns ``img``.
    """
    import cv2
    h, w = img.shape[:2]
    mask = np.asarray(mask, np.uint8)
    if mask.shape[:2] != (h, w):
        mask = cv2.resize(mask, (w, h), interpolation=cv2.INTER_NEAREST)
    on = mask > 0
    if on.any():
        over = img[on].astype(np.float32) * (1.0 - alpha) + _PALETTE[mask[on]] * alpha
        img[on] = np.clip(over + 0.5, 0, 255).astype(np.uint8)
    return img


def draw_keypoints(img: np.ndarray, keypoints: np.ndarray,
                   skeleton: Sequence[Tuple[int, int]] = (), threshold: float = 0.3,
                   radius: Optional[int] = None) -> np.ndarray:
    """Draw poses on ``img`` (BGR, in place): keypoints over ``threshold``, skeleton lines.

    ``keypoints``: N x K x 3 (x, y in image pixels, score); a line is drawn for
    each ``skeleton`` pair (0-based indices) whose ends both pass. Returns ``img``.
    """
    import cv2
    h, w = img.shape[:2]
    scale = max(0.4, min(1.5, w / 1000))
    thick = max(1, int(round(2 * scale)))
    r = radius if radius is not None else max(2, int(round(3 * scale)))
    kps = np.asarray(keypoints, np.float32)
    if kps.size == 0:
        return img
    for n, person in enumerate(kps.reshape(-1, kps.shape[-2], kps.shape[-1])):
        colour = tuple(int(c) for c in _PALETTE[1 + n % 255])
        pts = [(int(round(x)), int(round(y))) if s > threshold else None
               for x, y, s in person.tolist()]
        for a, b in skeleton:
            pa = pts[a] if 0 <= a < len(pts) else None
            pb = pts[b] if 0 <= b < len(pts) else None
            if pa and pb:
                cv2.line(img, pa, pb, colour, thick, cv2.LINE_AA)
        for p in pts:
            if p:
                cv2.circle(img, p, r, KEYPOINT, -1, cv2.LINE_AA)
                cv2.circle(img, p, r, colour, 1, cv2.LINE_AA)
    return img


def draw_result(img: np.ndarray, spec, output, caption: str = '') -> np.ndarray:
    """Draw one model result of any task on ``img`` (BGR, in place); return it.

    ``spec``: the registry entry (labels, skeleton, keypoint threshold);
    ``output``: what its decoder returned (Detections, Poses, InstanceMasks,
    SemanticMask or Classes).
    """
    mask = getattr(output, 'mask', None)
    if mask is not None:
        draw_mask(img, mask)
    keypoints = getattr(output, 'keypoints', None)
    if keypoints is not None:
        draw_keypoints(img, keypoints, spec.skeleton,
                       float(spec.decoder_args.get('keypoint_threshold', 0.3)))
    if spec.task == 'classification':
        return annotate(img, classes=[(spec.label(c), s) for c, s in zip(
            output.class_ids.tolist(), output.scores.tolist())], caption=caption)
    ids = getattr(output, 'track_ids', None)
    boxes = [] if not hasattr(output, 'boxes') else [
        (spec.label(c) if i < 0 else f'#{i} {spec.label(c)}', s, *b)    # the tracker's id
        for b, s, c, i in zip(output.boxes.tolist(), output.scores.tolist(),
                              output.class_ids.tolist(),
                              ids.tolist() if ids is not None else [-1] * len(output.boxes))]
    rboxes = getattr(output, 'rboxes', None)
    if rboxes is not None:      # oriented boxes: their outline, the label at their bounds
        import cv2
        from .obb import corners
        thick = max(1, int(round(2 * max(0.4, min(1.5, img.shape[1] / 1000)))))
        outlines = list(np.round(corners(rboxes)).astype(np.int32))
        cv2.polylines(img, outlines, True, BOX, thick)
    return annotate(img, boxes, caption=caption, rectangles=rboxes is None)

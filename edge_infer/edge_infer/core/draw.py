# Copyright 2026 edge_infer contributors. Apache-2.0.
"""Results drawn on an image: the node's ``~/debug_image`` and the demo's pictures.

One function, :func:`annotate`, draws on a BGR image in place: boxes with
label and score (detector), the top classes (classifier), and a caption in
the top-left corner (model, backend, latency). It works on plain values, so
the node (from a model result) and the demo (from result messages) share it.
"""

from typing import Iterable, Optional, Sequence, Tuple

import numpy as np

BOX = (0, 255, 0)
TEXT = (0, 200, 255)
CAPTION = (255, 255, 255)

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
             top_k: Optional[int] = None) -> np.ndarray:
    """Draw boxes, classes and a caption on ``img`` (BGR, in place); return it."""
    import cv2
    h, w = img.shape[:2]
    scale = max(0.4, min(1.5, w / 1000))
    thick = max(1, int(round(2 * scale)))
    for label, score, x1, y1, x2, y2 in boxes:
        p1 = (int(max(0, x1)), int(max(0, y1)))
        p2 = (int(min(w - 1, x2)), int(min(h - 1, y2)))
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

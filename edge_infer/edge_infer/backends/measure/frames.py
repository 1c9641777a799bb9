# Copyright 2026 edge_infer contributors. Apache-2.0.
"""The real frames candidates are judged on, and those int8 quantizers calibrate on.

- :func:`calibration_frames`: the bundled video's second half and its
  photos, for the accuracy check; synthetic frames, said so, when the
  footage is absent;
- :func:`video_frames`: frames spread over a part of the bundled video.
"""

import pathlib
from typing import Callable, List, Optional, Tuple

import numpy as np

from ...core.backend import first_line
from ...core.image import Frame

Log = Callable[[str], None]

# The bundled video in two halves: the accuracy check judges on the second half
# (and the photos); int8 quantizers calibrate on the first (quantize.py), so a
# variant is never judged on a frame it was calibrated on, nor on its neighbours.
JUDGE_SPAN = (0.5, 1.0)
CALIBRATION_SPAN = (0.0, 0.5)


def video_frames(n: int, span: Tuple[float, float] = JUDGE_SPAN, phase: float = 0.0,
                 log: Optional[Log] = None) -> List[Frame]:
    """Return ``n`` frames of the bundled video, spread evenly over ``span`` (shares of it).

    ``phase`` in [0, 1) shifts the positions by that share of the step. An
    absent or unreadable video gives no frames (said to ``log``).
    """
    from ... import paths
    frames: List[Frame] = []
    videos = sorted((paths.data_home() / 'cache').glob('*.avi'))
    if not videos or n <= 0:
        return frames
    try:
        import cv2
        cap = cv2.VideoCapture(str(videos[0]))
        total = int(cap.get(cv2.CAP_PROP_FRAME_COUNT)) or 100
        lo, hi = int(span[0] * total), int(span[1] * total)
        for k in range(n):
            cap.set(cv2.CAP_PROP_POS_FRAMES, lo + int((k + phase) * (hi - lo) / n))
            ok, img = cap.read()
            if ok:
                frames.append(Frame(img, 'bgr'))
        cap.release()
    except Exception as exc:  # unreadable footage: the caller falls back
        if log:
            log(f'calibration footage unreadable: {first_line(exc)}')
    return frames


def calibration_frames(n: int = 6, log: Optional[Log] = None, phase: float = 0.0,
                       photos: Optional[bool] = None,
                       span: Tuple[float, float] = JUDGE_SPAN) -> Tuple[List[Frame], str]:
    """Return (frames, what they are): the frames candidates are judged on.

    Video frames spread evenly over the second half of the bundled video
    (``span``), then the photos (at most half of ``n``; by default only at
    ``phase`` 0). The first half is left to int8 calibration
    (:data:`CALIBRATION_SPAN`), so accuracy is judged on frames no quantizer saw.
    Falls back to seeded random frames when the footage is not there (a robot
    that skipped ``edge_infer prepare``) and says so.
    """
    from ... import paths
    pics: List[pathlib.Path] = []
    if phase == 0 if photos is None else photos:
        pics = sorted((paths.data_home() / 'cache').glob('photos/*.png'))[:n // 2]
    frames = video_frames(max(1, n - len(pics)), span, phase, log)
    try:
        import cv2
        for p in pics[:max(0, n - len(frames))]:
            img = cv2.imread(str(p))
            if img is not None:
                frames.append(Frame(img, 'bgr'))
    except Exception as exc:  # unreadable photos: synthetic frames below
        if log:
            log(f'calibration photos unreadable: {first_line(exc)}')
    if frames:
        part = {JUDGE_SPAN: 'second half', CALIBRATION_SPAN: 'first half'}.get(
            (span[0], span[1]), f'{span[0]:g}-{span[1]:g}')
        return frames[:n], (f'{len(frames[:n])} real frames (vtest.avi {part}'
                            f'{" + photos" if pics else ""})')
    rng = np.random.default_rng(3 + int(phase * 1000))
    frames = [Frame(rng.integers(0, 256, (480, 640, 3), dtype=np.uint8), 'bgr')
              for _ in range(n)]
    return frames, f'{n} synthetic random frames (footage not found; run edge_infer prepare)'

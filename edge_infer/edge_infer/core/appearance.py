# Copyright 2026 edge_infer contributors. Apache-2.0.
"""What a tracked object looks like: an appearance descriptor per box, and distances (no ROS).

The tracker's re-association (:mod:`.reid`) asks an :class:`Embedder` for
one descriptor per box of a frame and compares descriptors by
:meth:`Embedder.distance`, 0 (the same) to 1 (nothing shared). The default,
:class:`ColourHistograms`, needs no model: the colours of a person's upper
and lower body (torso and legs: clothes), from the pixels the node already
decoded. A learned embedder (a ReID network exported to ONNX) plugs in behind
the same two calls; docs/tracking.md says which weights were checked.
"""

from typing import Protocol

import cv2
import numpy as np

from .image import Frame

#: Hue bins of a coloured pixel (OpenCV's hue: 0-180) and its saturation split.
HUE_BINS = 8
SAT_SPLIT = 110
#: A pixel under this saturation or value has no hue to speak of: it counts by brightness.
MIN_SAT, MIN_VAL = 40, 40
GREY_BINS = 8
BINS = HUE_BINS * 2 + GREY_BINS     # per part
#: The parts of a box described, as fractions of its height and width: the
#: torso and the legs, the central half of the width (less background; no head).
PARTS = ((0.1, 0.45), (0.55, 0.95))
COLUMNS = (0.25, 0.75)
#: The box's outer columns on each side (mostly background), and how much of
#: their histogram is taken off the centre's: colours of the ground behind a
#: person are not theirs.
SIDES = 0.12
BACKGROUND = 0.5
#: Pixels sampled per part at most along each side (a strided view: no resize).
SAMPLES = 16


class Embedder(Protocol):
    """Appearance descriptors of boxes, and their distances."""

    name: str

    def describe(self, frame: Frame, boxes: np.ndarray) -> np.ndarray:
        """Return one descriptor per box (N x D float32); ``boxes`` in source pixels."""

    def distance(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Return the len(a) x len(b) distances, 0 (the same) to 1."""

    def mix(self, desc: np.ndarray, look: np.ndarray, weight: float) -> np.ndarray:
        """Return the running descriptor ``desc`` moved by ``weight`` towards ``look``."""


def _hsv(pixels: np.ndarray, color: str) -> np.ndarray:
    """Return ``pixels`` (M x 3, or M x 1 mono) as M x 3 HSV; mono: brightness only."""
    if pixels.shape[-1] == 1 or color == 'mono':
        v = pixels[:, 0]
        return np.stack([np.zeros_like(v), np.zeros_like(v), v], axis=-1)
    code = cv2.COLOR_RGB2HSV if color.startswith('rgb') else cv2.COLOR_BGR2HSV
    return cv2.cvtColor(np.ascontiguousarray(pixels[None, :, :3]), code)[0]


def _bins(hsv: np.ndarray) -> np.ndarray:
    """Return each HSV pixel's bin (M int): hue x saturation, or brightness for greys."""
    h, s, v = (hsv[:, i].astype(np.int32) for i in range(3))
    grey = (s < MIN_SAT) | (v < MIN_VAL)
    return np.where(grey, HUE_BINS * 2 + np.minimum(v * GREY_BINS // 256, GREY_BINS - 1),
                    (h * HUE_BINS // 180) * 2 + (s >= SAT_SPLIT))


class ColourHistograms:
    """Colour histograms of the torso and the legs: clothes, cheap, no model.

    Each part's histogram has 8 hues x 2 saturations for coloured pixels and
    8 brightness bins for grey, black and white ones. The descriptor holds
    the square roots of both (each part's has unit length), so that a dot
    product is the Bhattacharyya coefficient, and :meth:`distance` is the
    Hellinger distance averaged over the two parts. It does not see faces,
    and two people in the same colours are the same to it: the
    re-association's margin rule (:mod:`.reid`) is what refuses them.
    """

    name = 'colour_histograms'

    def describe(self, frame: Frame, boxes: np.ndarray) -> np.ndarray:
        """Return one descriptor per box (N x 2*BINS float32); zeros for a box off the image."""
        boxes = np.asarray(boxes, dtype=np.float64).reshape(-1, 4)
        pixels = frame.pixels.reshape(frame.pixels.shape[0], frame.pixels.shape[1], -1)
        ph, pw = pixels.shape[:2]
        scale = pw / max(1, frame.width)        # a JPEG decoded at 1/2, 1/4 or 1/8
        samples, groups = [], []    # each part's centre and sides: pixels, histogram number
        for i, (x1, y1, x2, y2) in enumerate(boxes * scale):
            w, h = x2 - x1, y2 - y1
            x0, x3 = int(max(0, x1)), int(min(pw, x2))
            if x3 - x0 < 4:
                continue
            step_c = max(1, (x3 - x0) // (2 * SAMPLES))
            rel = (np.arange(x0, x3, step_c) - x1) / max(1e-9, w)
            centre = (rel >= COLUMNS[0]) & (rel < COLUMNS[1])
            sides = (rel < SIDES) | (rel >= 1.0 - SIDES)
            for k, (top, bottom) in enumerate(PARTS):
                r0, r1 = int(max(0, y1 + h * top)), int(min(ph, y1 + h * bottom))
                if r1 - r0 < 2:
                    continue
                part = pixels[r0:r1:max(1, (r1 - r0) // SAMPLES), x0:x3:step_c]
                for j, cols in enumerate((centre, sides)):
                    if cols.any():
                        samples.append(part[:, cols].reshape(-1, part.shape[2]))
                        groups.append(np.full(samples[-1].shape[0], 4 * i + 2 * k + j))
        hist = np.zeros((len(boxes), 2, 2, BINS), dtype=np.float32)     # box, part, centre/sides
        if samples:
            index = np.concatenate(groups) * BINS + _bins(_hsv(np.concatenate(samples),
                                                               frame.color))
            hist.reshape(-1)[:] = np.bincount(index, minlength=hist.size)
            hist /= np.maximum(1.0, hist.sum(axis=3, keepdims=True))
        look = hist[:, :, 0]
        if BACKGROUND:      # less what the box's sides show: the ground behind a person
            fore = np.clip(look - BACKGROUND * hist[:, :, 1], 0.0, None)
            total = fore.sum(axis=2, keepdims=True)
            look = np.where(total > 0.2, fore / np.maximum(total, 1e-9), look)
        return np.sqrt(look).reshape(len(boxes), 2 * BINS)

    def distance(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Return the mean Hellinger distance of the parts (len(a) x len(b), 0 to 1)."""
        a = np.asarray(a, dtype=np.float32).reshape(-1, 2, BINS)
        b = np.asarray(b, dtype=np.float32).reshape(-1, 2, BINS)
        coeff = np.einsum('ikd,jkd->ijk', a, b)         # Bhattacharyya per part
        return np.sqrt(np.clip(1.0 - coeff, 0.0, 1.0)).mean(axis=2)

    def mix(self, desc: np.ndarray, look: np.ndarray, weight: float) -> np.ndarray:
        """Return ``desc`` moved by ``weight`` towards ``look``, each part of unit length again."""
        mixed = ((1.0 - weight) * desc + weight * look).reshape(2, BINS)
        norm = np.linalg.norm(mixed, axis=1, keepdims=True)
        return (mixed / np.maximum(norm, 1e-9)).ravel().astype(np.float32)

# Copyright 2026 edge_infer contributors. Apache-2.0.
"""Frame -> model input tensor in one pass, into a buffer allocated once.

Resize (letterbox, centre crop or stretch) is done by OpenCV; the channel
reorder (RGB/BGR/mono to the model's order), HWC -> NCHW transpose and
normalisation ``(x - mean) / std`` are fused per channel and written straight
into a preallocated float32 tensor that the backend reads without copying.
:class:`Transform` maps model-input pixels back to source-image pixels.
"""

from dataclasses import dataclass
from typing import Sequence

import cv2
import numpy as np

from .image import Frame


@dataclass(frozen=True)
class InputSpec:
    """What a model expects at its input (from the registry)."""

    width: int
    height: int
    color: str = 'rgb'                 # channel order the model was trained on
    layout: str = 'NCHW'               # 'NCHW' or 'NHWC'
    resize: str = 'letterbox'          # 'letterbox', 'center_crop' or 'stretch'
    crop_fraction: float = 0.875       # centre crop: crop side / shorter side
    pad_value: int = 0                 # letterbox border, in pixel units
    mean: Sequence[float] = (0.0, 0.0, 0.0)   # per model channel, pixel units
    std: Sequence[float] = (1.0, 1.0, 1.0)


@dataclass(frozen=True)
class Transform:
    """Model-input pixel (u, v) -> source pixel ((u - pad_x) / scale_x, ...)."""

    scale_x: float
    scale_y: float
    pad_x: float
    pad_y: float

    def to_source(self, boxes: np.ndarray) -> np.ndarray:
        """Map N x 4 boxes (x1, y1, x2, y2) from model input to source pixels, in place."""
        boxes[:, 0::2] -= self.pad_x
        boxes[:, 0::2] /= self.scale_x
        boxes[:, 1::2] -= self.pad_y
        boxes[:, 1::2] /= self.scale_y
        return boxes


class Preprocessor:
    """Turns frames of any size into the model's input tensor.

    The returned tensor is the same buffer on every call: consume it (run the
    model) before the next call.
    """

    def __init__(self, spec: InputSpec):
        if spec.layout not in ('NCHW', 'NHWC'):
            raise ValueError(f"input layout '{spec.layout}' not supported (NCHW, NHWC)")
        if spec.resize not in ('letterbox', 'center_crop', 'stretch'):
            raise ValueError(
                f"resize '{spec.resize}' not supported (letterbox, center_crop, stretch)")
        if spec.color not in ('rgb', 'bgr'):
            raise ValueError(f"model colour order '{spec.color}' not supported (rgb, bgr)")
        if len(spec.mean) != 3 or len(spec.std) != 3 or min(spec.std) <= 0:
            raise ValueError('mean and std need 3 values each, std > 0')
        self.spec = spec
        w, h = spec.width, spec.height
        shape = (1, 3, h, w) if spec.layout == 'NCHW' else (1, h, w, 3)
        self.tensor = np.empty(shape, np.float32)
        self._canvas = np.empty((h, w, 4), np.uint8)   # letterbox canvas, up to 4 ch
        self._mean = [float(m) for m in spec.mean]
        self._inv_std = [1.0 / float(s) for s in spec.std]

    def _plane(self, c: int) -> np.ndarray:
        if self.spec.layout == 'NCHW':
            return self.tensor[0, c]
        return self.tensor[0, :, :, c]

    def __call__(self, frame: Frame) -> tuple:
        """Return (tensor, Transform) for ``frame``."""
        spec = self.spec
        src = frame.pixels
        h0, w0 = src.shape[:2]
        W, H = spec.width, spec.height
        if spec.resize == 'letterbox':
            scale = min(W / w0, H / h0)
            nw, nh = max(1, round(w0 * scale)), max(1, round(h0 * scale))
            px, py = (W - nw) // 2, (H - nh) // 2
            ch = src.shape[2]
            canvas = self._canvas[:, :, :ch]
            canvas[...] = spec.pad_value
            interp = cv2.INTER_AREA if scale < 1 else cv2.INTER_LINEAR
            resized = cv2.resize(src, (nw, nh), interpolation=interp)
            canvas[py:py + nh, px:px + nw] = resized.reshape(nh, nw, ch)
            img = canvas
            tf = Transform(nw / w0, nh / h0, px, py)
        elif spec.resize == 'center_crop':
            # As torchvision: shorter side to min(W, H) / crop_fraction, then a
            # centred W x H crop; done as one crop of the source and one resize.
            scale = (min(W, H) / spec.crop_fraction) / min(w0, h0)
            cw, ch = min(w0, round(W / scale)), min(h0, round(H / scale))
            xi, yi = (w0 - cw) // 2, (h0 - ch) // 2
            crop = src[yi:yi + ch, xi:xi + cw]
            interp = cv2.INTER_AREA if ch > H else cv2.INTER_LINEAR
            img = cv2.resize(crop, (W, H), interpolation=interp)
            tf = Transform(W / cw, H / ch, -xi * W / cw, -yi * H / ch)
        else:
            img = cv2.resize(src, (W, H), interpolation=cv2.INTER_AREA
                             if w0 > W else cv2.INTER_LINEAR)
            tf = Transform(W / w0, H / h0, 0.0, 0.0)
        if img.ndim == 2:
            img = img[:, :, None]
        for c, name in enumerate(spec.color):
            if frame.color == 'mono':
                src_c = 0
            else:
                src_c = frame.color.index(name)
            plane = self._plane(c)
            np.subtract(img[:, :, src_c], self._mean[c], out=plane, dtype=np.float32)
            plane *= self._inv_std[c]
        return self.tensor, tf

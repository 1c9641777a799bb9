# Copyright 2026 edge_infer contributors. Apache-2.0.
"""Frame -> model input tensor in one pass, into a buffer allocated once.

Resize (letterbox, centre crop or stretch) is done by OpenCV; the channel
reorder (RGB/BGR/mono to the model's order), HWC -> NCHW transpose and
normalisation ``(x - mean) / std`` are fused per channel and written straight
into a preallocated float32 tensor that the backend reads without copying.
:class:`Transform` maps model-input pixels back to source-image pixels: boxes,
points (keypoints) and whole maps (masks, at the source size).
"""

from dataclasses import dataclass
from typing import Optional, Sequence, Tuple

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
    """Model-input pixel (u, v) -> source pixel ((u - pad_x) / scale_x, ...).

    Coordinates are continuous (pixel ``i`` spans ``i .. i + 1``), in both
    images. ``src_w`` x ``src_h`` is the source image's size (0 when unknown:
    made by hand); the mask mappings need it.
    """

    scale_x: float
    scale_y: float
    pad_x: float
    pad_y: float
    src_w: int = 0
    src_h: int = 0

    def to_source(self, boxes: np.ndarray) -> np.ndarray:
        """Map N x 4 boxes (x1, y1, x2, y2) from model input to source pixels, in place."""
        boxes[:, 0::2] -= self.pad_x
        boxes[:, 0::2] /= self.scale_x
        boxes[:, 1::2] -= self.pad_y
        boxes[:, 1::2] /= self.scale_y
        return boxes

    def points_to_source(self, xy: np.ndarray) -> np.ndarray:
        """Return ``... x 2`` points (x, y), model-input pixels, as source pixels (new array)."""
        xy = np.asarray(xy, np.float32)
        out = np.empty_like(xy)
        out[..., 0] = (xy[..., 0] - self.pad_x) / self.scale_x
        out[..., 1] = (xy[..., 1] - self.pad_y) / self.scale_y
        return out

    def map_affine(self, map_w: int, map_h: int, input_w: int, input_h: int) -> np.ndarray:
        """Return the 2 x 3 affine: source pixel index -> index in a map over the model input.

        The map (``map_w`` x ``map_h``, e.g. a model's mask output or prototype
        grid) covers the whole model input (``input_w`` x ``input_h``); pixel
        centres are at index + 0.5 in both, as cv2.resize takes them. Used with
        ``cv2.warpAffine(..., flags=interpolation | cv2.WARP_INVERSE_MAP)``.
        """
        kx, ky = map_w / input_w, map_h / input_h
        return np.array([[self.scale_x * kx, 0.0,
                          (0.5 * self.scale_x + self.pad_x) * kx - 0.5],
                         [0.0, self.scale_y * ky,
                          (0.5 * self.scale_y + self.pad_y) * ky - 0.5]], np.float64)

    def visible(self, input_w: int, input_h: int) -> tuple:
        """Return the source rectangle (x0, y0, x1, y1), whole pixels, the model input shows.

        The whole image for letterbox and stretch; the crop for centre crop.
        """
        x0 = max(0, int(np.ceil(-self.pad_x / self.scale_x - 1e-6)))
        y0 = max(0, int(np.ceil(-self.pad_y / self.scale_y - 1e-6)))
        x1 = min(self.src_w, int(np.floor((input_w - self.pad_x) / self.scale_x + 1e-6)))
        y1 = min(self.src_h, int(np.floor((input_h - self.pad_y) / self.scale_y + 1e-6)))
        return x0, y0, max(x0, x1), max(y0, y1)

    def mask_to_source(self, mask: np.ndarray, interpolation: int = cv2.INTER_LINEAR,
                       input_size: Optional[Tuple[int, int]] = None) -> np.ndarray:
        """Return a map over the model input (H x W) resampled to the source size.

        ``mask``: float scores or uint8 ids (use ``cv2.INTER_NEAREST`` for ids),
        at the model-input size, or at any size covering the whole model input
        when ``input_size`` = (width, height) says what that input is (e.g. a
        quarter-resolution output). The letterbox padding is dropped, the
        centre crop undone (source pixels the crop cut off are 0) and the
        stretch undone, in one ``cv2.warpAffine``.
        """
        if self.src_w <= 0 or self.src_h <= 0:
            raise ValueError('Transform has no source size (src_w, src_h)')
        mask = np.asarray(mask)
        if mask.ndim != 2:
            raise ValueError(f'mask_to_source needs an H x W map, got shape {list(mask.shape)}')
        h, w = mask.shape
        iw, ih = input_size if input_size else (w, h)
        if mask.dtype == np.bool_ or (mask.dtype.kind in 'iu' and mask.dtype != np.uint8 and
                                      mask.size and 0 <= mask.min() and mask.max() < 256):
            mask = mask.astype(np.uint8)
        elif mask.dtype not in (np.uint8, np.float32):
            mask = mask.astype(np.float32)
        dst = cv2.warpAffine(mask, self.map_affine(w, h, iw, ih), (self.src_w, self.src_h),
                             flags=interpolation | cv2.WARP_INVERSE_MAP,
                             borderMode=cv2.BORDER_REPLICATE)
        x0, y0, x1, y1 = self.visible(iw, ih)     # outside: what a centre crop cut off
        dst[:y0] = 0
        dst[y1:] = 0
        dst[:, :x0] = 0
        dst[:, x1:] = 0
        return dst


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
            tf = Transform(nw / w0, nh / h0, px, py, w0, h0)
        elif spec.resize == 'center_crop':
            # As torchvision: shorter side to min(W, H) / crop_fraction, then a
            # centred W x H crop; done as one crop of the source and one resize.
            scale = (min(W, H) / spec.crop_fraction) / min(w0, h0)
            cw, ch = min(w0, round(W / scale)), min(h0, round(H / scale))
            xi, yi = (w0 - cw) // 2, (h0 - ch) // 2
            crop = src[yi:yi + ch, xi:xi + cw]
            interp = cv2.INTER_AREA if ch > H else cv2.INTER_LINEAR
            img = cv2.resize(crop, (W, H), interpolation=interp)
            tf = Transform(W / cw, H / ch, -xi * W / cw, -yi * H / ch, w0, h0)
        else:
            img = cv2.resize(src, (W, H), interpolation=cv2.INTER_AREA
                             if w0 > W else cv2.INTER_LINEAR)
            tf = Transform(W / w0, H / h0, 0.0, 0.0, w0, h0)
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

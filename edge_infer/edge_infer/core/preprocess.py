# Copyright 2026 edge_infer contributors. Apache-2.0.
"""Frame -> model input tensor in one pass, into a buffer allocated once.

Resize (letterbox, centre crop or stretch) is done by OpenCV; the channel
reorder (RGB/BGR/mono to the model's order), HWC -> NCHW transpose and
normalisation ``(x - mean) / std`` are fused per channel and written straight
into a preallocated float32 tensor that the backend reads without copying.
Input kind ``u8`` (:data:`INPUT_KINDS`) stops after the resize: a 1 x H x W x 3
uint8 tensor in the model's colour order, for a backend that does the rest
inside its compiled graph (OpenVINO's preprocessing, ``+pre`` candidates).
:class:`Transform` maps model-input pixels back to source-image pixels: boxes,
points (keypoints) and whole maps (masks, at the source size).
"""

from dataclasses import dataclass, replace
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
    interpolation: str = 'area'        # downscaling: one of INTERPOLATIONS (below)
    jpeg_dct_scaling: bool = False     # decode JPEG frames at 1/2, 1/4, 1/8 where enough


# The u8 resize when the frame is larger than the model input. 'area'
# averages every source pixel (cv2.INTER_AREA); 'linear' reads 4 per output
# pixel (cv2.INTER_LINEAR, half-pixel centres: tf.image.resize's and
# Ultralytics' own); 'area2' averages in two steps: first by the whole
# factor (2 for MobileNetV2's 504 x 504 crop of a 768x576 frame: an exact box
# average, OpenCV's fast path), then 'area' for what is left: the closest to
# torchvision's antialiased bilinear. Each model's registry entry names the
# one whose results agree with its authors' preprocessing
# (core/reference_preprocess.py, bench/probes/authors_reference.py: MoveNet agrees
# 1.000 with 'linear' and 0.222 with 'area'); 'area' is the default.
# 'warp' samples bilinearly at corner-aligned positions (source index = input
# index / scale, cv2.warpAffine), as the authors' cv2.warpPerspective does
# (NanoDet's warp.py, MediaPipe's ImageToTensor): 'linear' (half-pixel
# centres) is shifted from it by (1 / scale - 1) / 2 source pixels, which
# changed the selfie mask on 37 % of the judged frames.
INTERPOLATIONS = {'linear': cv2.INTER_LINEAR, 'area': cv2.INTER_AREA, 'area2': cv2.INTER_AREA,
                  'warp': cv2.INTER_LINEAR}

# What a backend session takes (Session.input_kind): 'float' the model's own
# input (normalised float32, its layout); 'u8' the resized frame, uint8,
# 1 x H x W x 3 in the model's colour order, letterbox border = pad_value.
INPUT_KINDS = ('float', 'u8')


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

    def for_source(self, width: int, height: int) -> 'Transform':
        """Return this Transform for a source of ``width`` x ``height`` the frame was scaled from.

        A JPEG decoded at 1/2 scale is a frame of half the source's size:
        results then land in the source's pixels, as if it had been decoded whole.
        """
        kx, ky = self.src_w / width, self.src_h / height
        return Transform(self.scale_x * kx, self.scale_y * ky, self.pad_x, self.pad_y,
                         width, height)

    def to_source(self, boxes: np.ndarray) -> np.ndarray:
        """Map N x 4 boxes (x1, y1, x2, y2) from model input to source pixels, in place.

        Clipped to the source image when its size is known: a box a model
        places partly outside the frame ("(176, -1)-(242, 79)") is published
        as the part inside it, as Ultralytics' own results are.
        """
        boxes[:, 0::2] -= self.pad_x
        boxes[:, 0::2] /= self.scale_x
        boxes[:, 1::2] -= self.pad_y
        boxes[:, 1::2] /= self.scale_y
        return self.clip(boxes)

    def clip(self, boxes: np.ndarray) -> np.ndarray:
        """Clip N x 4 source-pixel boxes to the source image, in place (its size known)."""
        if self.src_w > 0 and self.src_h > 0:
            np.clip(boxes[:, 0::2], 0.0, float(self.src_w), out=boxes[:, 0::2])
            np.clip(boxes[:, 1::2], 0.0, float(self.src_h), out=boxes[:, 1::2])
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


# A frame size's plan: (crop x, y, w, h), resized (w, h), tensor region (x, y),
# interpolation, Transform (Preprocessor._plan)
_Plan = Tuple[Tuple[int, int, int, int], Tuple[int, int], Tuple[int, int], int, Transform]


def _into(region: np.ndarray, result: np.ndarray) -> None:
    """Copy ``result`` into ``region`` unless OpenCV already wrote it there."""
    if not np.shares_memory(region, result):
        region[...] = result.reshape(region.shape)


class Preprocessor:
    """Turns frames of any size into the model's input tensor.

    The returned tensor is the same buffer on every call: consume it (run the
    model) before the next call.
    """

    def __init__(self, spec: InputSpec, kind: str = 'float'):
        if spec.layout not in ('NCHW', 'NHWC'):
            raise ValueError(f"input layout '{spec.layout}' not supported (NCHW, NHWC)")
        if spec.resize not in ('letterbox', 'center_crop', 'stretch'):
            raise ValueError(
                f"resize '{spec.resize}' not supported (letterbox, center_crop, stretch)")
        if spec.color not in ('rgb', 'bgr'):
            raise ValueError(f"model colour order '{spec.color}' not supported (rgb, bgr)")
        if len(spec.mean) != 3 or len(spec.std) != 3 or min(spec.std) <= 0:
            raise ValueError('mean and std need 3 values each, std > 0')
        if spec.interpolation not in INTERPOLATIONS:
            raise ValueError(f"interpolation '{spec.interpolation}' not supported "
                             f"({', '.join(INTERPOLATIONS)})")
        if kind not in INPUT_KINDS:
            raise ValueError(f"input kind '{kind}' not supported ({', '.join(INPUT_KINDS)})")
        self.spec = spec
        self.kind = kind
        w, h = spec.width, spec.height
        if kind == 'u8':
            self.tensor = np.empty((1, h, w, 3), np.uint8)
        else:
            shape = (1, 3, h, w) if spec.layout == 'NCHW' else (1, h, w, 3)
            self.tensor = np.empty(shape, np.float32)
        self._mean = [float(m) for m in spec.mean]
        self._inv_std = [1.0 / float(s) for s in spec.std]
        self._geometry: Optional[Tuple[int, int, int]] = None   # (frame w, h, channels)
        self._plan_of: Optional[_Plan] = None                    # what _plan() returned for it
        self._resized: Optional[np.ndarray] = None  # u8 buffer the frame is resized into, reused
        self._box: Optional[Tuple[int, int]] = None     # see _plan
        self._warp: Optional[np.ndarray] = None         # see _plan

    def _plane(self, c: int) -> np.ndarray:
        if self.spec.layout == 'NCHW' and self.kind == 'float':
            return self.tensor[0, c]
        return self.tensor[0, :, :, c]

    def _plan(self, w0: int, h0: int) -> _Plan:
        """Return (crop of the frame, resized size, tensor region, Transform) for a frame size.

        Computed once per frame size. A letterbox's border is written into
        the tensor here, once: frames of the same size write only the region.
        """
        spec = self.spec
        W, H = spec.width, spec.height
        crop = (0, 0, w0, h0)
        if spec.resize == 'letterbox':
            scale = min(W / w0, H / h0)
            nw, nh = max(1, round(w0 * scale)), max(1, round(h0 * scale))
            px, py = (W - nw) // 2, (H - nh) // 2
            tf = Transform(nw / w0, nh / h0, px, py, w0, h0)
            for c in range(3):      # the border: the pad value, normalised
                if self.kind == 'u8':
                    self._plane(c)[...] = spec.pad_value
                    continue
                self._plane(c)[...] = np.float32(spec.pad_value - self._mean[c]) * np.float32(
                    self._inv_std[c])
        elif spec.resize == 'center_crop':
            # As torchvision: shorter side to min(W, H) / crop_fraction, then a
            # centred W x H crop; done as one crop of the source and one resize.
            scale = (min(W, H) / spec.crop_fraction) / min(w0, h0)
            cw, ch = min(w0, round(W / scale)), min(h0, round(H / scale))
            xi, yi = (w0 - cw) // 2, (h0 - ch) // 2
            crop, (nw, nh), (px, py) = (xi, yi, cw, ch), (W, H), (0, 0)
            tf = Transform(W / cw, H / ch, -xi * W / cw, -yi * H / ch, w0, h0)
        else:
            nw, nh, px, py = W, H, 0, 0
            tf = Transform(W / w0, H / h0, 0.0, 0.0, w0, h0)
        shrink = nw < crop[2] or nh < crop[3]
        interp = INTERPOLATIONS[spec.interpolation] if shrink else cv2.INTER_LINEAR
        self._warp = None       # 'warp': the corner-aligned scale, for cv2.warpAffine
        if spec.interpolation == 'warp':
            sx, sy = nw / crop[2], nh / crop[3]
            self._warp = np.array([[sx, 0.0, 0.0], [0.0, sy, 0.0]])
            tf = replace(tf, pad_x=tf.pad_x + 0.5 * (1 - sx), pad_y=tf.pad_y + 0.5 * (1 - sy))
        self._box = None        # 'area2': the whole-factor box average's size, first
        kx, ky = crop[2] // nw, crop[3] // nh
        if spec.interpolation == 'area2' and min(kx, ky) >= 1 and max(kx, ky) >= 2 and \
                crop[2] % kx == 0 and crop[3] % ky == 0:
            self._box = (crop[2] // kx, crop[3] // ky)
        return crop, (nw, nh), (px, py), interp, tf

    def _resize(self, src: np.ndarray, size: tuple, interp: int, dst=None) -> np.ndarray:
        """Return ``src`` resized to ``size`` (into ``dst`` if cv2 can), 'area2' in two steps."""
        if self._warp is not None:
            return cv2.warpAffine(src, self._warp, size, dst=dst, flags=cv2.INTER_LINEAR,
                                  borderMode=cv2.BORDER_REPLICATE)
        if self._box is not None:
            src = cv2.resize(src, self._box, interpolation=cv2.INTER_AREA)
        return cv2.resize(src, size, dst=dst, interpolation=interp)

    def _to_u8(self, src: np.ndarray, color: str, ch: int, size: tuple, at: tuple,
               interp: int) -> None:
        """Write the resized frame into the u8 tensor, model colour order, in place.

        OpenCV writes straight into the tensor's region (a view): the resize
        itself where the channel order already matches, else one SIMD colour
        conversion (a numpy channel flip is ~25x slower: a strided copy).
        """
        (nw, nh), (px, py) = size, at
        region = self.tensor[0, py:py + nh, px:px + nw]
        same = color == self.spec.color and ch == 3
        if src.shape[:2] != (nh, nw):
            if same:
                _into(region, self._resize(src, size, interp, dst=region))
                return
            src = self._resize(src, size, interp, dst=self._resized if ch > 1 else None)
        if same:
            region[...] = src
        elif color == 'mono':
            _into(region, cv2.cvtColor(src.reshape(nh, nw), cv2.COLOR_GRAY2RGB, dst=region))
        else:
            code = {3: cv2.COLOR_BGR2RGB, 4: cv2.COLOR_BGRA2RGB}[ch] \
                if color != self.spec.color else cv2.COLOR_BGRA2BGR
            _into(region, cv2.cvtColor(src, code, dst=region))

    def __call__(self, frame: Frame) -> tuple:
        """Return (tensor, Transform) for ``frame``.

        One u8 resize (into a buffer reused while the frame size stays), then
        one pass per channel into the float tensor: reorder, ``(x - mean) /
        std`` and the layout change fused.
        """
        src = frame.pixels
        h0, w0 = src.shape[:2]
        ch = 1 if src.ndim == 2 else src.shape[2]
        key = (w0, h0, ch)
        plan = self._plan_of
        if key != self._geometry or plan is None:
            plan = self._plan_of = self._plan(w0, h0)
            self._geometry = key
            nw, nh = plan[1]
            self._resized = np.empty((nh, nw, ch), np.uint8)
        (xi, yi, cw, chh), (nw, nh), (px, py), interp, tf = plan
        if (cw, chh) != (w0, h0):
            src = src[yi:yi + chh, xi:xi + cw]
        if self.kind == 'u8':
            self._to_u8(src, frame.color, ch, (nw, nh), (px, py), interp)
            return self.tensor, (tf.for_source(*frame.source_size)
                                 if frame.source_size is not None else tf)
        out = self._resized
        if (nw, nh) == (w0, h0) and (cw, chh) == (w0, h0):
            img = src.reshape(nh, nw, ch)
        else:
            # cv2 writes into ``out`` when it is the right size and type (not for 1 channel)
            img = self._resize(src, (nw, nh), interp,
                               dst=out if ch > 1 else None).reshape(nh, nw, ch)
        for c, name in enumerate(self.spec.color):
            src_c = 0 if frame.color == 'mono' else frame.color.index(name)
            region = self._plane(c)[py:py + nh, px:px + nw]
            # (x - mean) * (1 / std), in this order: the same float32 values as ever
            np.subtract(img[:, :, src_c], self._mean[c], out=region, dtype=np.float32)
            region *= self._inv_std[c]
        if frame.source_size is not None:   # decoded smaller than its source (scaled JPEG)
            tf = tf.for_source(*frame.source_size)
        return self.tensor, tf

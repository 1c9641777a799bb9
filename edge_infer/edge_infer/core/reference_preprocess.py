# Copyright 2026 edge_infer contributors. Apache-2.0.
"""Each model's input made the way its authors make it: the accuracy guard's reference.

The runtime path (:mod:`.preprocess`) is built for speed; this one is built
to be what a model was trained and published with, so that every faster
path can be judged against it (``backends/measure/profiling.py``
:class:`Reference`). A registry entry's ``preprocess`` block
(:class:`AuthorsPreprocess`) names one of :data:`PIPELINES`:

- ``warp_perspective``: ``cv2.warpPerspective`` (bilinear, no antialias) with
  a matrix from corner-aligned pixel indices, border = pad value
  (NanoDet's ``warp.py``; MediaPipe's ImageToTensor on the CPU);
- ``cv2_resize``: ``cv2.resize`` INTER_LINEAR, then a centred pad or crop
  (Ultralytics' LetterBox, MB3-CenterNet's ``preprocess``; the default);
- ``tf_resize_with_pad``: ``tf.image.resize_with_pad`` (bilinear,
  half-pixel centres, float, no antialias), then ``tf.cast(..., tf.int32)``
  (MoveNet's TF Hub tutorial);
- ``pil_resize_center_crop``: torchvision's ``ImageClassification`` on a PIL
  image: shorter side to ``resize_size`` with PIL's antialiased bilinear
  filter, centre crop, ``/ 255``, mean / std.

Every function takes a :class:`~.image.Frame` (any colour order) and returns
(float32 tensor in the model's layout, :class:`~.preprocess.Transform`).
They allocate per call: the guard runs them on a dozen frames, not per frame.
"""

from dataclasses import dataclass
import math
from typing import Tuple

import cv2
import numpy as np

from .image import Frame
from .preprocess import InputSpec, Transform

PIPELINES = ('warp_perspective', 'cv2_resize', 'tf_resize_with_pad', 'pil_resize_center_crop')


@dataclass(frozen=True)
class AuthorsPreprocess:
    """How a model's authors turn an image into its input (registry key ``preprocess``)."""

    pipeline: str = 'cv2_resize'
    resize: str = 'letterbox'       # letterbox | stretch | center_crop
    interpolation: str = 'linear'   # what the authors' resize does (documentation + check)
    antialias: bool = False
    crop: str = 'none'              # e.g. 'centre 224 x 224 of the resized image'
    resize_size: int = 0            # pil_resize_center_crop: the shorter side first
    scale_by: str = 'size'          # cv2_resize: 'size' (dsize) or 'factor' (fx, fy)
    pad_value: int = 0
    color: str = 'rgb'
    source: str = ''                # file and line, or paper, where it comes from
    default: str = ''               # set when not from the registry: the default taken, why

    def describe(self) -> str:
        """Return one line: the pipeline and its key settings."""
        aa = 'antialias' if self.antialias else 'no antialias'
        pad = f', pad {self.pad_value}' if self.resize == 'letterbox' else ''
        return (f'{self.pipeline} ({self.resize}, {self.interpolation}, {aa}{pad}, '
                f'{self.color.upper()})')


def check(pre: AuthorsPreprocess, spec: InputSpec) -> None:
    """Raise ValueError where ``pre`` cannot describe a model with input ``spec``."""
    if pre.pipeline not in PIPELINES:
        raise ValueError(f"preprocess pipeline '{pre.pipeline}' unknown "
                         f"(one of {', '.join(PIPELINES)})")
    if pre.color != spec.color:
        raise ValueError(f"preprocess color '{pre.color}' differs from the input's "
                         f"'{spec.color}' (the model has one channel order)")
    allowed = {'warp_perspective': ('letterbox', 'stretch'),
               'cv2_resize': ('letterbox', 'stretch', 'center_crop'),
               'tf_resize_with_pad': ('letterbox',),
               'pil_resize_center_crop': ('center_crop',)}[pre.pipeline]
    if pre.resize not in allowed:
        raise ValueError(f"preprocess pipeline '{pre.pipeline}' does resize "
                         f"{' or '.join(allowed)}, not '{pre.resize}'")
    if pre.pipeline == 'pil_resize_center_crop' and pre.resize_size < max(spec.width,
                                                                          spec.height):
        raise ValueError('preprocess resize_size must cover the input '
                         f'({pre.resize_size} < {max(spec.width, spec.height)})')
    if pre.scale_by not in ('size', 'factor'):
        raise ValueError(f"preprocess scale_by '{pre.scale_by}' unknown (size, factor)")


def _ordered(frame: Frame, color: str) -> np.ndarray:
    """Return the frame's pixels as H x W x 3 uint8 in ``color`` order (a copy)."""
    px = frame.pixels
    if px.ndim == 2 or px.shape[2] == 1:
        return cv2.cvtColor(px.reshape(px.shape[:2]), cv2.COLOR_GRAY2RGB)
    px = px[:, :, :3]
    return np.ascontiguousarray(px if frame.color == color else px[:, :, ::-1])


def _normalized(img: np.ndarray, spec: InputSpec) -> np.ndarray:
    """Return ``(img - mean) / std`` as float32 in the model's layout, batch of one."""
    x = (img.astype(np.float32) - np.array(spec.mean, np.float32)) / np.array(spec.std, np.float32)
    return (x.transpose(2, 0, 1) if spec.layout == 'NCHW' else x)[None].copy()


def _corner_transform(m: np.ndarray, w: int, h: int) -> Transform:
    """Return the Transform of an axis-aligned matrix on pixel indices (centres at i)."""
    sx, sy = float(m[0, 0]), float(m[1, 1])
    return Transform(sx, sy, float(m[0, 2]) + 0.5 * (1 - sx),
                     float(m[1, 2]) + 0.5 * (1 - sy), w, h)


def warp_perspective(frame: Frame, spec: InputSpec, pre: AuthorsPreprocess):
    """Return NanoDet's ``warp_and_resize`` / MediaPipe's ImageToTensor input."""
    img = _ordered(frame, pre.color)
    h, w = img.shape[:2]
    W, H = spec.width, spec.height
    if pre.resize == 'letterbox':     # centre to origin, scale, origin to the centre
        r = H / h if w / h < W / H else W / w
        m = np.array([[r, 0, 0.5 * W - r * w / 2], [0, r, 0.5 * H - r * h / 2], [0, 0, 1]])
    else:
        m = np.diag([W / w, H / h, 1.0])
    out = cv2.warpPerspective(img, m, (W, H), flags=cv2.INTER_LINEAR,
                              borderMode=cv2.BORDER_CONSTANT, borderValue=(pre.pad_value,) * 3)
    return _normalized(out, spec), _corner_transform(m, w, h)


def cv2_resize(frame: Frame, spec: InputSpec, pre: AuthorsPreprocess):
    """Return the input of a ``cv2.resize`` INTER_LINEAR pipeline: pad or crop, centred."""
    img = _ordered(frame, pre.color)
    h, w = img.shape[:2]
    W, H = spec.width, spec.height
    if pre.resize == 'stretch':
        out = cv2.resize(img, (W, H), interpolation=cv2.INTER_LINEAR)
        return _normalized(out, spec), Transform(W / w, H / h, 0.0, 0.0, w, h)
    if pre.resize == 'center_crop':
        r = (min(W, H) / spec.crop_fraction) / min(w, h)
    else:
        r = min(W / w, H / h)
    nw, nh = int(round(w * r)), int(round(h * r))
    if pre.scale_by == 'factor':      # cv2 maps with 1 / fx, its size rounded
        small = cv2.resize(img, None, fx=r, fy=r, interpolation=cv2.INTER_LINEAR)
        sx = sy = r
    else:
        small = cv2.resize(img, (nw, nh), interpolation=cv2.INTER_LINEAR)
        sx, sy = nw / w, nh / h
    nh, nw = small.shape[:2]
    if pre.resize == 'center_crop':
        x0, y0 = (nw - W) // 2, (nh - H) // 2
        out = small[y0:y0 + H, x0:x0 + W]
        return _normalized(out, spec), Transform(sx, sy, -x0, -y0, w, h)
    out = np.full((H, W, 3), pre.pad_value, np.uint8)
    px, py = (W - nw) // 2, (H - nh) // 2
    out[py:py + nh, px:px + nw] = small
    return _normalized(out, spec), Transform(sx, sy, px, py, w, h)


def _tf_bilinear(img: np.ndarray, out_h: int, out_w: int) -> np.ndarray:
    """Return TF's ResizeBilinear (half-pixel centres, float32 lerps) of an H x W x C image."""
    h, w = img.shape[:2]

    def axis(n_out: int, n_in: int):
        scale = np.float32(n_in) / np.float32(n_out)
        src = (np.arange(n_out, dtype=np.float32) + np.float32(0.5)) * scale - np.float32(0.5)
        lo = np.floor(src)
        return (np.maximum(lo, 0).astype(np.int64),
                np.minimum(np.ceil(src), n_in - 1).astype(np.int64), src - lo)
    y0, y1, ly = axis(out_h, h)
    x0, x1, lx = axis(out_w, w)
    f = img.astype(np.float32)
    lx = lx[None, :, None]
    top = f[y0][:, x0] + (f[y0][:, x1] - f[y0][:, x0]) * lx
    bottom = f[y1][:, x0] + (f[y1][:, x1] - f[y1][:, x0]) * lx
    return top + (bottom - top) * ly[:, None, None]


def tf_resize_with_pad(frame: Frame, spec: InputSpec, pre: AuthorsPreprocess):
    """Return ``tf.cast(tf.image.resize_with_pad(img, H, W), tf.int32)`` as the model's input."""
    img = _ordered(frame, pre.color)
    h, w = img.shape[:2]
    W, H = spec.width, spec.height
    f32 = np.float32
    ratio = max(f32(w) / f32(W), f32(h) / f32(H))
    rw, rh = f32(w) / ratio, f32(h) / ratio
    nw, nh = int(math.floor(rw)), int(math.floor(rh))
    px, py = max(0, int(math.floor((f32(W) - rw) / 2))), max(0, int(math.floor((f32(H) - rh) / 2)))
    out = np.full((H, W, 3), float(pre.pad_value), np.float32)
    out[py:py + nh, px:px + nw] = _tf_bilinear(img, nh, nw)
    out = np.trunc(out)                 # tf.cast(float -> int32) truncates
    return _normalized(out, spec), Transform(nw / w, nh / h, px, py, w, h)


def _pil_coefficients(n_in: int, n_out: int) -> np.ndarray:
    """Return PIL's 8-bit bilinear weights (n_out x n_in), fixed point (22 bits) as floats."""
    scale = n_in / n_out
    fscale = max(scale, 1.0)
    support = 1.0 * fscale
    k = np.zeros((n_out, n_in), np.float64)
    for x in range(n_out):
        centre = (x + 0.5) * scale
        lo = max(int(centre - support + 0.5), 0)
        hi = min(int(centre + support + 0.5), n_in)
        t = np.abs((np.arange(lo, hi) - centre + 0.5) * (1.0 / fscale))
        wt = np.where(t < 1.0, 1.0 - t, 0.0)
        total = wt.sum()
        if total:
            wt = wt / total
        k[x, lo:hi] = np.where(wt < 0, np.trunc(-0.5 + wt * (1 << 22)),
                               np.trunc(0.5 + wt * (1 << 22)))
    return k


def _pil_pass(img: np.ndarray, k: np.ndarray) -> np.ndarray:
    """Return one PIL resampling pass along axis 0 of ``img`` (uint8, integer sums exact)."""
    flat = img.reshape(img.shape[0], -1).astype(np.float64)
    acc = k @ flat + float(1 << 21)
    return np.clip(np.floor(acc / float(1 << 22)), 0, 255).astype(np.uint8).reshape(
        (k.shape[0],) + img.shape[1:])


def pil_bilinear_numpy(img: np.ndarray, nw: int, nh: int) -> np.ndarray:
    """Return PIL's ``Image.resize((nw, nh), BILINEAR)`` of H x W x 3 uint8, in numpy."""
    h, w = img.shape[:2]
    out = img
    if nw != w:                                 # PIL: the horizontal pass first
        out = _pil_pass(out.transpose(1, 0, 2), _pil_coefficients(w, nw)).transpose(1, 0, 2)
    if nh != h:
        out = _pil_pass(out, _pil_coefficients(h, nh))
    return out


def pil_bilinear(img: np.ndarray, nw: int, nh: int) -> np.ndarray:
    """Return PIL's bilinear resize: Pillow itself where installed (30x faster), else numpy."""
    try:
        from PIL import Image
    except ImportError:     # not a dependency: the same pixels in numpy (test-pinned)
        return pil_bilinear_numpy(img, nw, nh)
    return np.asarray(Image.fromarray(np.ascontiguousarray(img)).resize(
        (nw, nh), Image.Resampling.BILINEAR))


def pil_resize_center_crop(frame: Frame, spec: InputSpec, pre: AuthorsPreprocess):
    """Return torchvision's ``Resize(resize_size)`` (PIL bilinear, antialias) + ``CenterCrop``."""
    img = _ordered(frame, pre.color)
    h, w = img.shape[:2]
    short, long = (w, h) if w <= h else (h, w)
    new_short, new_long = pre.resize_size, int(pre.resize_size * long / short)
    nw, nh = (new_short, new_long) if w <= h else (new_long, new_short)
    out = pil_bilinear(img, nw, nh)
    W, H = spec.width, spec.height
    top, left = int(round((nh - H) / 2.0)), int(round((nw - W) / 2.0))
    out = out[top:top + H, left:left + W]
    x = out.astype(np.float32) / np.float32(255)
    mean = np.array(spec.mean, np.float32) / np.float32(255)
    std = np.array(spec.std, np.float32) / np.float32(255)
    x = (x - mean) / std
    x = (x.transpose(2, 0, 1) if spec.layout == 'NCHW' else x)[None].copy()
    return x, Transform(nw / w, nh / h, -left, -top, w, h)


def reference_input(frame: Frame, spec: InputSpec,
                    pre: AuthorsPreprocess) -> Tuple[np.ndarray, Transform]:
    """Return (float32 input tensor, Transform) for ``frame`` made the authors' way."""
    fn = {'warp_perspective': warp_perspective, 'cv2_resize': cv2_resize,
          'tf_resize_with_pad': tf_resize_with_pad,
          'pil_resize_center_crop': pil_resize_center_crop}[pre.pipeline]
    return fn(frame, spec, pre)

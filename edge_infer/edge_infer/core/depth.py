# Copyright 2026 edge_infer contributors. Apache-2.0.
"""Depth for 2D results: distance, 3D centre and size, 3D keypoints (no ROS).

Works on the fields of a sensor_msgs/Image depth frame aligned to the colour
image (``16UC1`` / ``mono16`` millimetres, ``32FC1`` metres) and on
CameraInfo's K. Every bad input raises :class:`DepthError` with a one-line
reason that the node logs as is (and counts); a detection whose depth cannot
be measured gets no 3D (NaN) and a reason, never a made-up distance.

The robust depth of a box is the median of its valid depth pixels in the
box's core (the central ``core`` fraction of its width and height), or
within its mask where the model gives one. The pixels are read on a fixed
grid of 32 x 32 samples per box (a smaller core's pixels repeat), so the
cost does not grow with the box; see docs/depth.md. The depth frame nearest
a result's stamp: core/depth_buffer.py.

Pixel conventions: boxes and keypoints are in continuous image coordinates
(the image spans 0..W, as the decoders give them); K follows ROS / OpenCV,
where the first pixel's centre is 0, so a box centre ``u`` projects as
``(u - 0.5 - cx) / fx``. Coordinates out: the camera's optical frame
(x right, y down, z forward), metres.
"""

from collections import Counter
from dataclasses import dataclass, field
from typing import List, Optional, Tuple, Union

import numpy as np

# encoding -> (numpy dtype, metres per unit)
ENCODINGS = {'16uc1': (np.uint16, 0.001), 'mono16': (np.uint16, 0.001),
             '32fc1': (np.float32, 1.0)}
ACCEPTED = '16UC1 (mm), mono16 (mm), 32FC1 (m)'

# The reasons a detection has no 3D (its entry in Located.reasons; '' when it has one)
NO_DEPTH = 'no valid depth'         # too few pixels finite and > 0 (holes, NaN)
OUT_OF_RANGE = 'out of range'       # enough depth, but too little of it within [min_m, max_m]
OUTSIDE = 'outside the image'       # the box does not overlap the image

GRID = 32               # samples per box side, at most
MIN_FRACTION = 0.05     # of the core's samples that must be valid
KEYPOINT_MIN_VALID = 3  # valid pixels in a keypoint's window


class DepthError(ValueError):
    """A depth frame or camera model that cannot be used; the message says why."""


@dataclass
class DepthImage:
    """A depth frame: ``pixels`` H x W in its units (a view on the message), ``scale`` m/unit.

    ``flat`` (1-D, every row with its padding) and ``row`` (its elements per
    row) view the same memory: what the per-box sampling indexes.
    """

    pixels: np.ndarray
    scale: float = 1.0
    flat: Optional[np.ndarray] = field(default=None, repr=False)
    row: int = 0

    def __post_init__(self):
        p = self.pixels
        if self.flat is None and p.ndim == 2 and p.flags.c_contiguous:
            self.flat, self.row = p.reshape(-1), p.shape[1]

    @property
    def width(self) -> int:
        """Frame width in pixels."""
        return int(self.pixels.shape[1])

    @property
    def height(self) -> int:
        """Frame height in pixels."""
        return int(self.pixels.shape[0])

    def metres(self) -> np.ndarray:
        """Return a float32 copy of the whole frame in metres; 0 and NaN stay invalid."""
        return self.pixels.astype(np.float32) * np.float32(self.scale)


def from_raw(encoding: str, height: int, width: int, step: int, data,
             is_bigendian: int = 0) -> DepthImage:
    """View a depth sensor_msgs/Image's buffer as an H x W array in its units (no copy)."""
    enc = encoding.lower()
    if enc not in ENCODINGS:
        raise DepthError(f"depth encoding '{encoding}' is not supported (accepted: {ACCEPTED})")
    dtype, scale = ENCODINGS[enc]
    itemsize = np.dtype(dtype).itemsize
    if height <= 0 or width <= 0:
        raise DepthError(f'empty {encoding} depth image: {width}x{height}')
    if step < width * itemsize:
        raise DepthError(f'{encoding} depth {width}x{height}: step {step} < width {width} x '
                         f'{itemsize} bytes = {width * itemsize}')
    buf = np.frombuffer(data, dtype=np.uint8)
    if buf.size != step * height:
        raise DepthError(f'{encoding} depth {width}x{height}: data size {buf.size} != step '
                         f'{step} x height {height} = {step * height}')
    ordered = np.dtype(dtype).newbyteorder('>' if is_bigendian else '<')
    if step % itemsize:     # rows that do not start on a whole pixel: a strided view only
        pixels = np.ndarray((height, width), ordered, buf, strides=(step, itemsize))
        return DepthImage(pixels, scale)
    flat = buf.view(ordered)
    row = step // itemsize
    return DepthImage(flat.reshape(height, row)[:, :width], scale, flat, row)


def from_fields(fields) -> DepthImage:
    """View a parsed Image (core/cdr.py ``parse_image``'s ImageFields) as a depth frame."""
    return from_raw(fields.encoding, fields.height, fields.width, fields.step, fields.data,
                    fields.is_bigendian)


@dataclass(frozen=True)
class Intrinsics:
    """A pinhole camera: focal lengths and principal point in pixels, and its image size."""

    fx: float
    fy: float
    cx: float
    cy: float
    width: int
    height: int

    @classmethod
    def from_camera_info(cls, k, width: int, height: int) -> 'Intrinsics':
        """Read CameraInfo's K (9 numbers, row-major); DepthError if it cannot project."""
        vals = np.asarray(k, dtype=np.float64).ravel()
        if vals.size != 9:
            raise DepthError(f'CameraInfo K has {vals.size} numbers, expected 9')
        if not np.isfinite(vals).all():
            raise DepthError('CameraInfo K holds NaN or Inf')
        if not vals.any():
            raise DepthError('CameraInfo K is all zero (an uncalibrated camera): no 3D')
        fx, cx, fy, cy = vals[0], vals[2], vals[4], vals[5]
        if fx <= 0 or fy <= 0:
            raise DepthError(f'CameraInfo K has fx {fx:g}, fy {fy:g}: both must be > 0')
        if width <= 0 or height <= 0:
            raise DepthError(f'CameraInfo size {width}x{height}: K cannot be checked '
                             'against the depth frame')
        return cls(float(fx), float(fy), float(cx), float(cy), int(width), int(height))


def check_aligned(depth: DepthImage, intrinsics: Intrinsics,
                  image_size: Optional[Tuple[int, int]] = None) -> None:
    """Raise DepthError unless depth, K and the colour image (width, height) share one size."""
    size = (depth.width, depth.height)
    if image_size is not None and tuple(image_size) != size:
        raise DepthError(f"depth {size[0]}x{size[1]} is not the colour image's size "
                         f'{image_size[0]}x{image_size[1]}: depth must be aligned to colour')
    if (intrinsics.width, intrinsics.height) != size:
        raise DepthError(f'CameraInfo is for {intrinsics.width}x{intrinsics.height}, the depth '
                         f'frame is {size[0]}x{size[1]}')


@dataclass
class Located:
    """Per detection: ``distance`` (N,) m, ``centers`` and ``sizes`` (N, 3) m; NaN where none.

    ``sizes`` are the box's width and height at that distance, and the spread
    of the valid depths (p90 - p10) as its extent along z. ``reasons[i]`` is
    '' where detection i has 3D, else why not (NO_DEPTH, OUT_OF_RANGE, OUTSIDE).
    """

    distance: np.ndarray
    centers: np.ndarray
    sizes: np.ndarray
    reasons: List[str]

    @property
    def valid(self) -> np.ndarray:
        """Return which detections have 3D, (N,) bool."""
        return np.isfinite(self.distance)

    def counts(self) -> Counter:
        """Return the detections without 3D, counted by reason."""
        return Counter(r for r in self.reasons if r)


def _as_depth(depth: Union[DepthImage, np.ndarray]) -> DepthImage:
    return depth if isinstance(depth, DepthImage) else DepthImage(np.asarray(depth), 1.0)


def _grid(lo: np.ndarray, hi: np.ndarray, limit: int) -> np.ndarray:
    """Return (N, GRID) pixel indices spread over [lo, hi) of each row, within 0..limit-1."""
    t = (np.arange(GRID, dtype=np.float32) + 0.5) / GRID
    pos = lo[:, None] + (hi - lo)[:, None] * t[None, :]
    return np.clip(pos.astype(np.intp), 0, limit - 1)


def _gather(depth: DepthImage, ys: np.ndarray, xs: np.ndarray) -> np.ndarray:
    """Return the pixels at rows ys (N, A) x columns xs (N, B) as (N, A * B), native order."""
    if depth.flat is not None:
        raw = depth.flat[ys[:, :, None] * depth.row + xs[:, None, :]]
    else:
        raw = depth.pixels[ys[:, :, None], xs[:, None, :]]
    if not raw.dtype.isnative:
        raw = raw.astype(raw.dtype.newbyteorder('='))
    return raw.reshape(ys.shape[0], ys.shape[1] * xs.shape[1])


def _raw_range(depth: DepthImage, min_m: float, max_m: float) -> Tuple[float, float]:
    """Return [min_m, max_m] in the frame's units (whole numbers for 16-bit frames)."""
    lo, hi = min_m / depth.scale, max_m / depth.scale
    if depth.pixels.dtype.kind in 'ui':     # python ints: the comparisons stay integer
        top = int(np.iinfo(depth.pixels.dtype).max)
        return max(int(np.ceil(lo)), 1), min(int(np.floor(hi)), top)
    return lo, hi


def _robust(depth: DepthImage, raw: np.ndarray, region: np.ndarray, min_m: float, max_m: float,
            fraction: float, least: int) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Return per row the median, p10 and p90 (metres) of the valid samples within ``region``.

    ``region``: (N, S) or (N, 1) bool. A row with fewer valid samples than
    ``fraction`` of its region (and than ``least``) gets NaN. Also returned:
    its samples that hold depth at all (finite, > 0), and the number needed.
    """
    lo, hi = _raw_range(depth, min_m, max_m)
    if raw.dtype.kind == 'f':
        present = region & (raw > 0) & (raw < np.inf)
        fill = np.inf
    else:
        present = region & (raw > 0)
        fill = np.iinfo(raw.dtype).max
    valid = present & (raw >= lo) & (raw <= hi)
    ordered = np.sort(np.where(valid, raw, fill), axis=1)
    count = valid.sum(1)
    area = region.sum(1) * (raw.shape[1] // region.shape[1])
    need = np.maximum(np.ceil(fraction * area), least)
    last = np.maximum(count - 1, 0)[:, None]
    pos = last * np.array([0.5, 0.1, 0.9])
    below = pos.astype(np.intp)
    ends = np.take_along_axis(ordered, np.concatenate([below, np.minimum(below + 1, last)], 1),
                              1).astype(np.float64)
    with np.errstate(invalid='ignore'):     # rows without a valid sample: inf - inf
        q = (ends[:, :3] + (ends[:, 3:] - ends[:, :3]) * (pos - below)) * depth.scale
    q[count < need] = np.nan
    return q, present.sum(1), need


def locate(depth: Union[DepthImage, np.ndarray], boxes: np.ndarray, intrinsics: Intrinsics,
           masks: Optional[np.ndarray] = None, core: float = 0.5, min_m: float = 0.1,
           max_m: float = 20.0, image_size: Optional[Tuple[int, int]] = None) -> Located:
    """Measure each box's distance and back-project its centre and size with K.

    ``depth``: a DepthImage, or an H x W float array in metres. ``boxes``: N x 4
    (x1, y1, x2, y2) in the colour image's pixels (``image_size``, checked
    against the depth's when given). ``masks``: the instance map of
    InstanceMasks (H x W, detection i is ``i + 1``) or N x H x W bool; where a
    detection's mask covers none of its box's samples, its core is used.
    """
    depth = _as_depth(depth)
    check_aligned(depth, intrinsics, image_size)
    if not 0 < core <= 1:
        raise ValueError(f'core {core}: must be in (0, 1]')
    boxes = np.asarray(boxes, dtype=np.float32).reshape(-1, 4)
    W, H = depth.width, depth.height
    x1, y1 = np.clip(boxes[:, 0], 0, W), np.clip(boxes[:, 1], 0, H)
    x2, y2 = np.clip(boxes[:, 2], 0, W), np.clip(boxes[:, 3], 0, H)
    inside = (x2 > x1) & (y2 > y1)
    if masks is None:
        mx, my = (1 - core) / 2 * (x2 - x1), (1 - core) / 2 * (y2 - y1)
        xs, ys = _grid(x1 + mx, x2 - mx, W), _grid(y1 + my, y2 - my, H)
    else:
        xs, ys = _grid(x1, x2, W), _grid(y1, y2, H)
    raw = _gather(depth, ys, xs)
    region = inside[:, None]
    if masks is not None:
        region = region & _mask_samples(masks, xs, ys, (W, H))
        empty = inside & ~region.any(1)
        if empty.any():     # masks that miss every sample: their box's core instead
            sub = locate(depth, boxes[empty], intrinsics, None, core, min_m, max_m)
            return _merge(_from_samples(depth, raw, region, boxes, intrinsics, min_m, max_m,
                                        inside), empty, sub)
    return _from_samples(depth, raw, region, boxes, intrinsics, min_m, max_m, inside)


def _mask_samples(masks: np.ndarray, xs: np.ndarray, ys: np.ndarray,
                  size: Tuple[int, int]) -> np.ndarray:
    """Return (N, GRID * GRID) whether each sample lies in its detection's mask."""
    masks = np.asarray(masks)
    n = xs.shape[0]
    if masks.shape[-2:] != size[::-1] or masks.ndim not in (2, 3) or (
            masks.ndim == 3 and masks.shape[0] != n):
        raise ValueError(f'masks of shape {masks.shape}: expected {size[1]} x {size[0]} ids '
                         f'or {n} x {size[1]} x {size[0]}')
    if masks.ndim == 2:
        return _gather(DepthImage(masks), ys, xs) == np.arange(1, n + 1).reshape(n, 1)
    picked = masks[np.arange(n)[:, None, None], ys[:, :, None], xs[:, None, :]]
    return picked.reshape(n, GRID * GRID).astype(bool)


def _from_samples(depth: DepthImage, raw: np.ndarray, region: np.ndarray, boxes: np.ndarray,
                  k: Intrinsics, min_m: float, max_m: float, inside: np.ndarray) -> Located:
    q, present, need = _robust(depth, raw, region, min_m, max_m, MIN_FRACTION, 1)
    z, p10, p90 = q[:, 0], q[:, 1], q[:, 2]
    reasons = ['' if ok else OUTSIDE if not ins else OUT_OF_RANGE if p >= nd else NO_DEPTH
               for ok, ins, p, nd in zip(np.isfinite(z).tolist(), inside.tolist(),
                                         present.tolist(), need.tolist())]
    u = (boxes[:, 0] + boxes[:, 2]) / 2 - 0.5
    v = (boxes[:, 1] + boxes[:, 3]) / 2 - 0.5
    centers = np.stack([(u - k.cx) * z / k.fx, (v - k.cy) * z / k.fy, z], 1)
    ext = np.where(np.isfinite(z), p90 - p10, np.nan)
    sizes = np.stack([(boxes[:, 2] - boxes[:, 0]) * z / k.fx,
                      (boxes[:, 3] - boxes[:, 1]) * z / k.fy, ext], 1)
    return Located(z.astype(np.float32), centers.astype(np.float32),
                   sizes.astype(np.float32), reasons)


def _merge(out: Located, rows: np.ndarray, sub: Located) -> Located:
    idx = np.flatnonzero(rows)
    out.distance[idx], out.centers[idx], out.sizes[idx] = sub.distance, sub.centers, sub.sizes
    for j, i in enumerate(idx.tolist()):
        out.reasons[i] = sub.reasons[j]
    return out


def keypoints_3d(depth: Union[DepthImage, np.ndarray], keypoints: np.ndarray,
                 intrinsics: Intrinsics, min_score: float = 0.3, window: int = 5,
                 min_m: float = 0.1, max_m: float = 20.0) -> np.ndarray:
    """Return N x K x 3 keypoints in metres (optical frame); NaN where there is no depth.

    ``keypoints``: N x K x 2 (x, y) or N x K x 3 (x, y, score) in image pixels,
    as Poses holds them; a score under ``min_score`` gives NaN. Each point's
    depth is the median of the valid pixels in a ``window`` x ``window``
    square around it (at least 3 of them).
    """
    depth = _as_depth(depth)
    check_aligned(depth, intrinsics)
    kp = np.asarray(keypoints, dtype=np.float32)
    n, kk = kp.shape[0], kp.shape[1]
    pts = kp.reshape(-1, kp.shape[2])
    half = window // 2
    off = np.arange(-half, window - half)
    col = np.floor(pts[:, 0]).astype(np.intp)
    row = np.floor(pts[:, 1]).astype(np.intp)
    on = (col >= 0) & (col < depth.width) & (row >= 0) & (row < depth.height)
    if pts.shape[1] > 2:
        on &= pts[:, 2] >= min_score
    xs = np.clip(col[:, None] + off[None, :], 0, depth.width - 1)
    ys = np.clip(row[:, None] + off[None, :], 0, depth.height - 1)
    q, _, _ = _robust(depth, _gather(depth, ys, xs), on[:, None], min_m, max_m, 0.0,
                      min(KEYPOINT_MIN_VALID, window * window))
    z = q[:, 0]
    u, v = pts[:, 0] - 0.5, pts[:, 1] - 0.5
    out = np.stack([(u - intrinsics.cx) * z / intrinsics.fx,
                    (v - intrinsics.cy) * z / intrinsics.fy, z], 1)
    return out.astype(np.float32).reshape(n, kk, 3)

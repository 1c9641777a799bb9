# Copyright 2026 edge_infer contributors. Apache-2.0.
"""A synthetic depth camera beside recorded colour frames (``record --synthetic-depth``).

For testing 3D without a depth camera: each colour frame gets a 16UC1 depth
image (millimetres) of the same size, aligned to it, showing a flat wall at
``distance_m`` with 1 % Gaussian noise and 5 % holes (0, as real sensors
leave them), and a CameraInfo whose K has a 60 degree horizontal field of
view. Every detection's 3D centre should then come back at that distance,
within the noise: the launch test checks it.
"""

from __future__ import annotations

import math

from edge_infer.core.bag_read import _TYPESTORE, header_msg, IMAGE_TYPE
import numpy as np

INFO_TYPE = 'sensor_msgs/msg/CameraInfo'
HFOV_DEG = 60.0


def depth_topics(topic: str) -> tuple[str, str]:
    """Return the depth image and CameraInfo topics beside the colour ``topic``."""
    base = topic.rstrip('/').rsplit('/', 1)[0]
    return f'{base}/depth/image_raw', f'{base}/depth/camera_info'


def intrinsics(width: int, height: int) -> tuple[float, float, float, float]:
    """Return (fx, fy, cx, cy) of a pinhole camera with a 60 degree horizontal view."""
    fx = width / 2 / math.tan(math.radians(HFOV_DEG) / 2)
    return fx, fx, (width - 1) / 2, (height - 1) / 2


def depth_cdr(width: int, height: int, distance_m: float, stamp_ns: int, frame_id: str,
              seed: int) -> bytes:
    """Serialize a 16UC1 depth image of a wall at ``distance_m`` (noise, holes)."""
    rng = np.random.default_rng(seed)
    mm = distance_m * 1000.0 * (1.0 + 0.01 * rng.standard_normal((height, width)))
    depth = np.clip(np.round(mm), 1, 65535).astype('<u2')
    depth[rng.random((height, width)) < 0.05] = 0       # holes: no reading
    msg = _TYPESTORE.types[IMAGE_TYPE](
        header=header_msg(stamp_ns, frame_id), height=height, width=width, encoding='16UC1',
        is_bigendian=0, step=width * 2, data=depth.reshape(-1).view(np.uint8))
    return bytes(_TYPESTORE.serialize_cdr(msg, IMAGE_TYPE))


def camera_info_cdr(width: int, height: int, stamp_ns: int, frame_id: str) -> bytes:
    """Serialize the synthetic camera's CameraInfo (no distortion)."""
    fx, fy, cx, cy = intrinsics(width, height)
    types = _TYPESTORE.types
    msg = types[INFO_TYPE](
        header=header_msg(stamp_ns, frame_id), height=height, width=width,
        distortion_model='plumb_bob', d=np.zeros(5),
        k=np.array([fx, 0, cx, 0, fy, cy, 0, 0, 1], dtype=np.float64),
        r=np.eye(3).reshape(-1),
        p=np.array([fx, 0, cx, 0, 0, fy, cy, 0, 0, 0, 1, 0], dtype=np.float64),
        binning_x=0, binning_y=0,
        roi=types['sensor_msgs/msg/RegionOfInterest'](x_offset=0, y_offset=0, height=0,
                                                      width=0, do_rectify=False))
    return bytes(_TYPESTORE.serialize_cdr(msg, INFO_TYPE))

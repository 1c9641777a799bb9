# Copyright 2026 edge_infer contributors. Apache-2.0.
"""Frames to calibrate and validate int8 variants on: a user's folder or bag, or the bundled video.

:func:`calibration_sets` gives :mod:`.quantize` two disjoint sets from one
grid; :func:`source_frames` also checks a model's ``calibration:`` entry
(``edge_infer model add``).
"""

import pathlib
from typing import Callable, List, Sequence

Log = Callable[[str], object]


class QuantizeError(ValueError):
    """A variant cannot be made: no footage, a graph the quantizer refuses, a missing library."""


def _spread(items: Sequence, n: int) -> List:
    """Return ``n`` items spread evenly over ``items`` (all of them when fewer)."""
    if len(items) <= n:
        return list(items)
    return [items[int(k * len(items) / n)] for k in range(n)]


def _bag_frames(bag: pathlib.Path, n: int):
    """Return ``n`` frames spread over the image messages of a rosbag2 folder."""
    from ...core.bag_read import bag_info, decode_image, iter_bag_frames
    from ...core.image import Frame
    info = bag_info(bag)
    kinds = ('sensor_msgs/msg/Image', 'sensor_msgs/msg/CompressedImage')
    topics = [t for t, v in info['topics'].items() if v['type'] in kinds]
    if not topics:
        raise QuantizeError(f'calibration bag {bag} has no Image or CompressedImage topic '
                            f"(topics: {', '.join(sorted(info['topics'])) or 'none'})")
    count = sum(info['topics'][t]['count'] for t in topics)
    wanted = set(_spread(range(count), n))
    frames, bad = [], 0
    for i, (_, msgtype, _, cdr) in enumerate(iter_bag_frames(bag, topics)):
        if i in wanted:
            try:
                frames.append(Frame(decode_image(msgtype, cdr)[1], 'rgb'))
            except ValueError:
                bad += 1
    return frames, f"{len(frames)} frames of bag {bag} ({', '.join(topics)})" + (
        f', {bad} undecodable skipped' if bad else '')


def _folder_frames(folder: pathlib.Path, n: int):
    """Return ``n`` images spread over a folder's image files (sorted by name)."""
    import cv2
    from ...core.bag_read import ImageListError, list_images
    from ...core.image import Frame
    try:
        files = _spread(list_images(folder), n)
    except ImageListError as exc:
        raise QuantizeError(f'calibration folder: {exc}') from None
    frames = [Frame(img, 'bgr') for img in (cv2.imread(str(f)) for f in files)
              if img is not None]
    return frames, f'{len(frames)} images of folder {folder}'


def source_frames(source: str, n: int, log: Log = print):
    """Return (``n`` frames, what they are) from a user's folder or bag, or the bundled video.

    ``source`` '' means the first half of the bundled video
    (:data:`.profiling.CALIBRATION_SPAN`).

    :raises QuantizeError: a source that does not exist or holds no usable image,
        or no footage at all (random frames would calibrate nothing).
    """
    from ..measure.profiling import CALIBRATION_SPAN, video_frames
    if source:
        path = pathlib.Path(source).expanduser()
        if not path.exists():
            raise QuantizeError(f'calibration source {path} does not exist (a folder of '
                                f'images or a rosbag2 folder)')
        if path.is_dir() and (path / 'metadata.yaml').is_file():
            frames, what = _bag_frames(path, n)
        else:
            frames, what = _folder_frames(path, n)
        if not frames:
            raise QuantizeError(f'calibration source {path}: no image could be read')
        return frames, what
    frames = video_frames(n, CALIBRATION_SPAN)
    if not frames:
        raise QuantizeError('no footage for calibration (the bundled video is missing: '
                            'run edge_infer prepare, or name your own with `calibration:`)')
    return frames, f'{len(frames)} frames of the bundled video (vtest.avi first half)'


def calibration_sets(spec, n_calibration: int, n_validation: int, log: Log = print):
    """Return (calibration frames, validation frames, what): disjoint, from one grid.

    The source is the registry entry's ``calibration`` (a folder or a bag),
    else the first half of the bundled video.
    """
    frames, what = source_frames(getattr(spec, 'calibration', '') or '',
                                 n_calibration + n_validation, log)
    if len(frames) < 2:
        raise QuantizeError(f'calibration needs at least 2 frames; {what}')
    # alternate while both sets still want frames, the rest to calibration
    cal: List = []
    val: List = []
    for i, f in enumerate(frames):
        if len(val) < n_validation and (i % 2 == 1 or len(cal) >= n_calibration):
            val.append(f)
        else:
            cal.append(f)
    return cal, val, (f'{what}: {len(cal)} calibrate, {len(val)} validate (alternate '
                      f'frames, disjoint)')

# Copyright 2026 edge_infer contributors. Apache-2.0.
"""Reading rosbag2 folders: frames in log-time order, a summary, an image message decoded.

Also a folder's image files (:func:`list_images`). The runtime reads bags and
folders here (int8 calibration frames: ``backends/precision``); the set-up
tools' recorder and player (``edge_infer.tools.bag``) share its message
types and typestore.
"""

from __future__ import annotations

import os
import pathlib
from typing import Any, Iterable, Iterator, Sequence

import cv2
import numpy as np
from rosbags.rosbag2 import Reader
from rosbags.typesys import get_typestore, Stores

PathLike = str | os.PathLike

IMAGE_TYPE = 'sensor_msgs/msg/Image'
COMPRESSED_TYPE = 'sensor_msgs/msg/CompressedImage'
IMAGE_SUFFIXES = frozenset({'.png', '.jpg', '.jpeg', '.bmp', '.tif', '.tiff', '.webp',
                            '.ppm', '.pgm', '.pnm'})

_TYPESTORE = get_typestore(Stores.ROS2_JAZZY)


def header_msg(stamp_ns: int, frame_id: str):
    """Return a std_msgs/Header of the bags' typestore (for messages written to a bag)."""
    types = _TYPESTORE.types
    sec, nanosec = divmod(stamp_ns, 10**9)
    return types['std_msgs/msg/Header'](
        stamp=types['builtin_interfaces/msg/Time'](sec=sec, nanosec=nanosec),
        frame_id=frame_id)


class ImageListError(RuntimeError):
    """Raised for an image path that does not exist or a folder without image files."""


def list_images(images: PathLike | Iterable[PathLike]) -> list[pathlib.Path]:
    """Expand files and folders (their image files, sorted by name) into a list."""
    if isinstance(images, (str, os.PathLike)):
        images = [images]
    files: list[pathlib.Path] = []
    for item in images:
        path = pathlib.Path(item).expanduser()
        if path.is_dir():
            found = sorted(p for p in path.iterdir()
                           if p.is_file() and p.suffix.lower() in IMAGE_SUFFIXES)
            if not found:
                raise ImageListError(f'folder {path} holds no image files '
                                     f'({", ".join(sorted(IMAGE_SUFFIXES))})')
            files.extend(found)
        elif path.is_file():
            files.append(path)
        else:
            raise ImageListError(f'image {path} does not exist')
    return files


def _dir_size(path: pathlib.Path) -> int:
    return sum(p.stat().st_size for p in path.rglob('*') if p.is_file())


def iter_bag_frames(bag_dir: PathLike, topics: Sequence[str] | None = None
                    ) -> Iterator[tuple[str, str, int, bytes]]:
    """Yield ``(topic, msgtype, log_time_ns, cdr_bytes)`` in log-time order.

    :param bag_dir: rosbag2 folder (mcap or sqlite3).
    :param topics: only these topics (default: all).
    """
    with Reader(pathlib.Path(bag_dir)) as reader:
        conns = reader.connections
        if topics is not None:
            wanted = set(topics)
            conns = [c for c in conns if c.topic in wanted]
            if not conns:
                return
        for conn, stamp, data in reader.messages(connections=conns):
            yield conn.topic, conn.msgtype, stamp, bytes(data)


def bag_info(bag_dir: PathLike) -> dict:
    """Summarize a rosbag2 folder.

    :returns: ``topics`` (name -> ``{'type', 'count'}``), ``messages``,
        ``start_ns``, ``end_ns`` (last message), ``duration_s`` (last minus
        first log time), ``storage``, ``bytes``.
    """
    path = pathlib.Path(bag_dir)
    with Reader(path) as reader:
        count = reader.message_count
        start = reader.start_time if count else 0
        # rosbags reports end_time as one past the last message.
        end = reader.end_time - 1 if count else 0
        return {
            'topics': {name: {'type': info.msgtype, 'count': info.msgcount}
                       for name, info in reader.topics.items()},
            'messages': count,
            'start_ns': start,
            'end_ns': end,
            'duration_s': (end - start) / 1e9,
            'storage': 'mcap' if any(path.rglob('*.mcap*')) else 'sqlite3',
            'bytes': _dir_size(path),
        }


def decode_image(msgtype: str, cdr: bytes) -> tuple[int, np.ndarray]:
    """Decode an Image or CompressedImage CDR payload into ``(stamp_ns, rgb array)``."""
    msg: Any = _TYPESTORE.deserialize_cdr(cdr, msgtype)    # Image or CompressedImage
    stamp = msg.header.stamp.sec * 10**9 + msg.header.stamp.nanosec
    if msgtype == IMAGE_TYPE:
        if msg.encoding not in ('rgb8', 'bgr8'):
            raise ValueError(f'unsupported encoding {msg.encoding}')
        rows = np.asarray(msg.data, dtype=np.uint8).reshape(msg.height, msg.step)
        pixels = rows[:, :msg.width * 3].reshape(msg.height, msg.width, 3)
        if msg.encoding == 'bgr8':
            pixels = pixels[:, :, ::-1]
        return stamp, np.ascontiguousarray(pixels)
    if msgtype == COMPRESSED_TYPE:
        bgr = cv2.imdecode(np.asarray(msg.data, dtype=np.uint8), cv2.IMREAD_COLOR)
        if bgr is None:
            raise ValueError(f'cannot decode compressed image ({msg.format})')
        return stamp, cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB)
    raise ValueError(f'not an image type: {msgtype}')

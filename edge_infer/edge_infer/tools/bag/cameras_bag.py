# Copyright 2026 edge_infer contributors. Apache-2.0.
"""Record several cameras from one real video into one mcap rosbag2 (issue 54).

Each camera is its own view of the pedestrian video: its own moment, its
own rate, its own crop and size, so a multi-camera node meets what a robot's
surround view gives it (cameras not in step, frames of different sizes).
Camera ``name`` publishes ``sensor_msgs/msg/Image`` (rgb8) on
``/<name>/image_raw`` with ``frame_id`` ``<name>_optical``; frame ``k`` is
stamped ``start + k / rate`` and shows the video at the same pace (its
frames stepped by the video's rate over the camera's). The messages are
written in stamp order, as ``ros2 bag record`` would have them.

Example::

    python -m edge_infer.tools.bag.cameras_bag out/cameras --video vtest.avi
"""

from __future__ import annotations

import argparse
import heapq
import pathlib
import sys
from typing import Iterator, Optional, Sequence, Tuple

import cv2
from edge_infer.core.bag_read import _TYPESTORE, IMAGE_TYPE
import numpy as np
from rosbags.rosbag2 import StoragePlugin, Writer

from .record import (_open_video, _prepare_output, _video_frames, abandon, BAG_VERSION,
                     DEFAULT_START_STAMP_NS, image_cdr, Log, OFFERED_QOS, RecordError)

Crop = Optional[Tuple[int, int, int, int]]      # x, y, width, height in the video's pixels
# name, first video frame, rate (Hz), crop (None: the whole view), output size (None: as cropped)
CAMERAS: Tuple[Tuple[str, int, float, Crop, Optional[Tuple[int, int]]], ...] = (
    ('front', 0, 10.0, None, (640, 480)),
    ('left', 150, 10.0, (0, 96, 512, 384), None),
    ('right', 300, 5.0, (256, 192, 512, 384), None),
    ('rear', 450, 15.0, None, (384, 288)),
)


def _view(frames: Iterator[Tuple[int, np.ndarray]], crop: Crop,
          size: Optional[Tuple[int, int]]) -> Iterator[np.ndarray]:
    for _, bgr in frames:
        if crop is not None:
            x, y, w, h = crop
            bgr = bgr[y:y + h, x:x + w]
        if size is not None:
            bgr = cv2.resize(bgr, size, interpolation=cv2.INTER_AREA)
        yield np.ascontiguousarray(bgr)


def record_cameras(out_dir, video, seconds: float = 3.0,
                   cameras: Sequence[tuple] = CAMERAS,
                   start_stamp_ns: int = DEFAULT_START_STAMP_NS, overwrite: bool = False,
                   log: Log = print) -> dict:
    """Record ``seconds`` of each camera of ``cameras`` (:data:`CAMERAS`' form) into a new bag.

    :returns: ``path``, ``topics`` (name -> messages), ``messages``, ``frame_ids``
        (topic -> frame_id), ``sizes`` (topic -> (width, height)).
    :raises RecordError: unreadable video, a camera starting past its end, an existing bag.
    """
    out = pathlib.Path(out_dir).expanduser()
    video = pathlib.Path(video).expanduser()
    _prepare_output(out, overwrite)
    captures, streams = [], []
    writer = Writer(out, version=BAG_VERSION, storage_plugin=StoragePlugin.MCAP)
    topics: dict = {}
    frame_ids: dict = {}
    sizes: dict = {}
    try:
        video_fps = 0.0
        for name, start, rate, crop, size in cameras:
            capture = _open_video(video)
            captures.append(capture)
            video_fps = capture.get(cv2.CAP_PROP_FPS) or 10.0
            stride = max(1, round(video_fps / rate))
            count = int(seconds * rate)
            streams.append(_view(_video_frames(capture, video, start, stride, count), crop,
                                 size))
        writer.open()
        conns = [writer.add_connection(f'/{c[0]}/image_raw', IMAGE_TYPE, typestore=_TYPESTORE,
                                       offered_qos_profiles=[OFFERED_QOS]) for c in cameras]
        # every camera's frames, in stamp order
        schedule = [(start_stamp_ns + round(k * 1e9 / c[2]), i, k)
                    for i, c in enumerate(cameras) for k in range(int(seconds * c[2]))]
        heapq.heapify(schedule)
        while schedule:
            stamp, i, _ = heapq.heappop(schedule)
            bgr = next(streams[i], None)
            if bgr is None:
                raise RecordError(f'video {video} ends before camera {cameras[i][0]} has '
                                  f'{seconds:g} s of frames')
            frame_id = f'{cameras[i][0]}_optical'
            writer.write(conns[i], stamp, image_cdr(bgr, stamp, frame_id))
            topic = conns[i].topic
            topics[topic] = topics.get(topic, 0) + 1
            frame_ids[topic], sizes[topic] = frame_id, (bgr.shape[1], bgr.shape[0])
        writer.close()
    except BaseException:
        abandon(writer, out)
        raise
    finally:
        for capture in captures:
            capture.release()
    log(f'cameras bag {out}: ' + ', '.join(f'{t} {n} frames {sizes[t][0]}x{sizes[t][1]}'
                                           for t, n in topics.items()))
    return {'path': out, 'topics': topics, 'messages': sum(topics.values()),
            'frame_ids': frame_ids, 'sizes': sizes}


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Record the cameras bag from the command line."""
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('out', help='bag folder to create')
    ap.add_argument('--video', required=True, help='a video file OpenCV reads')
    ap.add_argument('--seconds', type=float, default=3.0)
    ap.add_argument('--overwrite', action='store_true')
    args = ap.parse_args(argv)
    try:
        record_cameras(args.out, args.video, args.seconds, overwrite=args.overwrite)
    except RecordError as exc:
        print(f'error: {exc}', file=sys.stderr)
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())

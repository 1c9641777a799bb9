# Copyright 2026 edge_infer contributors. Apache-2.0.
"""Record camera footage (a video and/or still images) into an mcap rosbag2.

ROS-free: messages are serialized with the ``rosbags`` library (Jazzy
typestore) and the bag is a rosbag2 folder (``metadata.yaml`` version 9 and
one ``.mcap`` file) that Jazzy's ``ros2 bag play`` reads.

Each recorded frame becomes a ``sensor_msgs/msg/Image`` (rgb8) on ``topic``
and a ``sensor_msgs/msg/CompressedImage`` on ``topic + '/compressed'``
(image_transport naming); both carry the same header, and the bag's log
(receive) time of both equals ``header.stamp``.

Example::

    python -m edge_infer.tools.bag.record out/vtest_bag --video vtest.avi --max-frames 100
"""

from __future__ import annotations

import argparse
import math
import pathlib
import shutil
import sys
import time
from typing import Any, Callable, Final, Iterable, Iterator, Sequence

import cv2
from edge_infer.core.bag_read import (_dir_size, _TYPESTORE, COMPRESSED_TYPE, header_msg,
                                      IMAGE_TYPE, ImageListError, list_images, PathLike)
import numpy as np
from rosbags.interfaces import (Qos, QosDurability, QosHistory, QosLiveliness,
                                QosReliability, QosTime)
from rosbags.rosbag2 import CompressionFormat, CompressionMode, StoragePlugin, Writer

from . import synthetic_depth

Log = Callable[[str], object]
# 2026-01-01T00:00:00Z: a fixed default start keeps recordings reproducible.
DEFAULT_START_STAMP_NS = 1_767_225_600 * 10**9
# Frame rate for bags made of still images only, unless ``fps`` is given.
DEFAULT_IMAGE_FPS = 10.0
MAX_FPS = 1000.0
STILL_FORMATS = ('jpeg', 'png', 'source')
BAG_VERSION: Final = 9  # rosbag2 metadata version written by Jazzy.

# What a typical camera driver offers (the rclpy default profile); recorded in
# the bag so that ``ros2 bag play`` picks a profile any subscriber matches.
OFFERED_QOS = Qos(
    history=QosHistory.KEEP_LAST, depth=10, reliability=QosReliability.RELIABLE,
    durability=QosDurability.VOLATILE, deadline=QosTime(0, 0), lifespan=QosTime(0, 0),
    liveliness=QosLiveliness.SYSTEM_DEFAULT, liveliness_lease_duration=QosTime(0, 0),
    avoid_ros_namespace_conventions=False)


class RecordError(RuntimeError):
    """Raised for unusable inputs or outputs (bad video, empty folder, existing bag)."""


# --------------------------------------------------------------------- sources
def _open_video(video: pathlib.Path) -> cv2.VideoCapture:
    if not video.exists():
        raise RecordError(f'video {video} does not exist')
    if not video.is_file():
        raise RecordError(f'video {video} is not a file')
    capture = cv2.VideoCapture(str(video))
    if not capture.isOpened():
        capture.release()
        raise RecordError(f'cannot read video {video}: OpenCV could not open it '
                          '(not a video, or a codec this OpenCV build lacks)')
    return capture


def _video_frames(capture: cv2.VideoCapture, video: pathlib.Path, start_frame: int,
                  stride: int, max_frames: int | None) -> Iterator[tuple[int, np.ndarray]]:
    """Yield ``(source_index, bgr_frame)``; frames are decoded one at a time."""
    index = 0
    while index < start_frame:
        if not capture.grab():
            raise RecordError(f'video {video} has only {index} frames, '
                              f'cannot start at frame {start_frame}')
        index += 1
    emitted = 0
    while max_frames is None or emitted < max_frames:
        ok, frame = capture.read()
        if not ok or frame is None:
            return
        yield index, frame
        emitted += 1
        index += 1
        for _ in range(stride - 1):
            if not capture.grab():
                return
            index += 1


def _read_image(path: pathlib.Path) -> np.ndarray:
    frame = cv2.imread(str(path), cv2.IMREAD_COLOR)
    if frame is None:
        raise RecordError(f'cannot read image {path}: not an image OpenCV can decode')
    return frame


def abandon(writer: Writer, out: pathlib.Path) -> None:
    """Abort a half-written bag and remove its folder (a recording that failed or was stopped)."""
    if writer.storage is not None:
        writer.abort()
    shutil.rmtree(out, ignore_errors=True)


# -------------------------------------------------------------------- messages
def image_cdr(bgr: np.ndarray, stamp_ns: int, frame_id: str) -> bytes:
    """Serialize a BGR OpenCV frame as an rgb8 ``sensor_msgs/msg/Image`` (CDR)."""
    rgb = cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB)
    height, width = rgb.shape[:2]
    msg = _TYPESTORE.types[IMAGE_TYPE](
        header=header_msg(stamp_ns, frame_id), height=height, width=width, encoding='rgb8',
        is_bigendian=0, step=width * 3, data=rgb.reshape(-1))
    return bytes(_TYPESTORE.serialize_cdr(msg, IMAGE_TYPE))


def compressed_cdr(bgr: np.ndarray, stamp_ns: int, frame_id: str, fmt: str = 'jpeg',
                   jpeg_quality: int = 90, encoded: bytes | None = None) -> bytes:
    """Serialize a BGR frame as a ``sensor_msgs/msg/CompressedImage`` (CDR).

    ``fmt`` is ``'jpeg'`` or ``'png'``; ``encoded`` passes bytes already in
    that format (the frame is then not re-encoded).
    """
    if encoded is None:
        if fmt == 'jpeg':
            ok, buf = cv2.imencode('.jpg', bgr, [cv2.IMWRITE_JPEG_QUALITY, int(jpeg_quality)])
        elif fmt == 'png':
            ok, buf = cv2.imencode('.png', bgr)
        else:
            raise ValueError(f'unsupported compressed format {fmt!r}')
        if not ok:
            raise RecordError(f'OpenCV failed to encode a {bgr.shape} frame as {fmt}')
        data = buf.reshape(-1)
    else:
        data = np.frombuffer(encoded, dtype=np.uint8)
    msg = _TYPESTORE.types[COMPRESSED_TYPE](
        header=header_msg(stamp_ns, frame_id), format=fmt, data=data)
    return bytes(_TYPESTORE.serialize_cdr(msg, COMPRESSED_TYPE))


# ---------------------------------------------------------------------- output
def _is_bag_dir(path: pathlib.Path) -> bool:
    """Return True for an empty folder or one that only holds rosbag2 files."""
    allowed = {'.yaml', '.mcap', '.db3', '.zstd', '.tmp'}
    return all(p.is_file() and p.suffix in allowed for p in path.iterdir())


def _prepare_output(out_dir: pathlib.Path, overwrite: bool) -> None:
    if not out_dir.exists():
        return
    if not overwrite:
        raise RecordError(f'output {out_dir} already exists; choose another folder or '
                          'pass overwrite=True (--overwrite) to replace it')
    if not out_dir.is_dir() or not _is_bag_dir(out_dir):
        raise RecordError(f'refusing to overwrite {out_dir}: it is not a rosbag2 folder')
    shutil.rmtree(out_dir)


def record_bag(out_dir: PathLike, video: PathLike | None = None,
               images: PathLike | Iterable[PathLike] = (), topic: str = '/camera/image_raw',
               frame_id: str = 'camera', fps: float | None = None, start_frame: int = 0,
               max_frames: int | None = None, stride: int = 1, raw: bool = True,
               compressed: bool = True, jpeg_quality: int = 90, still_format: str = 'jpeg',
               start_stamp_ns: int | None = DEFAULT_START_STAMP_NS, overwrite: bool = False,
               zstd: bool = False, depth_m: float | None = None, log: Log = print) -> dict:
    """Record a video and/or still images into a new mcap rosbag2 folder.

    Video frames come first (``start_frame``, then every ``stride``-th frame,
    at most ``max_frames`` of them), then every image in ``images`` (files,
    or folders whose image files are taken in name order), each in its own
    size. Frame ``k`` is stamped ``start_stamp_ns + k * stride / fps``: the
    stamps keep the video's real timing, and images continue at the same
    period. Frames are decoded and written one at a time.

    :param out_dir: bag folder to create; it must not exist unless ``overwrite``.
    :param video: video file readable by OpenCV.
    :param images: image file(s) and/or folder(s).
    :param topic: raw image topic; compressed images go to ``topic + '/compressed'``.
    :param frame_id: ``header.frame_id`` of every message.
    :param fps: source frame rate; default: the video's own, or 10 for images only.
    :param start_frame: first video frame to record (0-based).
    :param max_frames: most video frames to record (``None``: all).
    :param stride: record every ``stride``-th video frame.
    :param raw: write ``sensor_msgs/msg/Image`` (rgb8) messages.
    :param compressed: write ``sensor_msgs/msg/CompressedImage`` messages.
    :param jpeg_quality: JPEG quality 1-100 for compressed messages.
    :param still_format: compressed format of still images: ``'jpeg'``, ``'png'``,
        or ``'source'`` (png for .png files, jpeg otherwise).
    :param start_stamp_ns: stamp of the first frame in ns since the epoch;
        ``None`` means now.
    :param overwrite: replace an existing bag folder at ``out_dir``.
    :param zstd: zstd-compress the mcap chunks (smaller, slower to write).
    :param depth_m: also write a synthetic aligned depth camera (a wall at this
        distance, :mod:`.synthetic_depth`) on ``<topic's namespace>/depth/image_raw``
        and ``/depth/camera_info``, stamped as each frame.
    :param log: callable receiving progress lines.
    :returns: stats: ``path``, ``frames``, ``video_frames``, ``image_frames``,
        ``messages``, ``topics`` (name -> count), ``fps``, ``first_stamp_ns``,
        ``last_stamp_ns``, ``duration_s``, ``bytes``, ``elapsed_s``.
    :raises RecordError: unreadable video or image, empty folder, existing output,
        or nothing to record.
    """
    started = time.perf_counter()
    out = pathlib.Path(out_dir).expanduser()
    if not raw and not compressed:
        raise RecordError('nothing to write: both raw and compressed are disabled')
    if stride < 1:
        raise RecordError(f'stride must be >= 1, got {stride}')
    if start_frame < 0:
        raise RecordError(f'start_frame must be >= 0, got {start_frame}')
    if max_frames is not None and max_frames < 0:
        raise RecordError(f'max_frames must be >= 0, got {max_frames}')
    if not 1 <= jpeg_quality <= 100:
        raise RecordError(f'jpeg_quality must be within 1..100, got {jpeg_quality}')
    if still_format not in STILL_FORMATS:
        raise RecordError(f'still_format must be one of {STILL_FORMATS}, got {still_format!r}')
    if fps is not None and not 0 < fps <= MAX_FPS:
        raise RecordError(f'fps must be within (0, {MAX_FPS:g}], got {fps}')
    if depth_m is not None and not 0.1 <= depth_m <= 60:
        raise RecordError(f'synthetic depth must be within 0.1..60 m, got {depth_m}')
    if not topic.startswith('/'):
        topic = '/' + topic
    try:
        image_files = list_images(images)
    except ImageListError as exc:
        raise RecordError(str(exc)) from None
    if video is None and not image_files:
        raise RecordError('nothing to record: give a video and/or images')
    _prepare_output(out, overwrite)

    capture = None
    frame_rate = fps if fps is not None else DEFAULT_IMAGE_FPS
    if video is not None:
        video = pathlib.Path(video).expanduser()
        capture = _open_video(video)
        if fps is None:
            frame_rate = capture.get(cv2.CAP_PROP_FPS)
            if not (math.isfinite(frame_rate) and 0 < frame_rate <= MAX_FPS):
                capture.release()
                raise RecordError(f'video {video} reports no usable frame rate '
                                  f'({frame_rate}); pass fps (--fps)')
    period_ns = 1e9 * stride / frame_rate
    first_stamp = time.time_ns() if start_stamp_ns is None else int(start_stamp_ns)

    writer = Writer(out, version=BAG_VERSION, storage_plugin=StoragePlugin.MCAP)
    if zstd:
        writer.set_compression(CompressionMode.STORAGE, CompressionFormat.ZSTD)
    counts = {'video': 0, 'images': 0}
    topics: dict[str, int] = {}
    try:
        writer.open()
        conns: list[tuple[Any, str | None]] = []     # (connection, None: raw | 'c')
        if raw:
            conns.append((writer.add_connection(topic, IMAGE_TYPE, typestore=_TYPESTORE,
                                                offered_qos_profiles=[OFFERED_QOS]), None))
        if compressed:
            ctopic = topic.rstrip('/') + '/compressed'
            conns.append((writer.add_connection(ctopic, COMPRESSED_TYPE, typestore=_TYPESTORE,
                                                offered_qos_profiles=[OFFERED_QOS]), 'c'))
        if depth_m is not None:
            dtopic, itopic = synthetic_depth.depth_topics(topic)
            conns.append((writer.add_connection(dtopic, IMAGE_TYPE, typestore=_TYPESTORE,
                                                offered_qos_profiles=[OFFERED_QOS]), 'd'))
            conns.append((writer.add_connection(itopic, synthetic_depth.INFO_TYPE,
                                                typestore=_TYPESTORE,
                                                offered_qos_profiles=[OFFERED_QOS]), 'i'))
        for conn, _ in conns:
            topics[conn.topic] = 0

        def write(bgr: np.ndarray, fmt: str, encoded: bytes | None = None) -> int:
            k = counts['video'] + counts['images']
            stamp = first_stamp + round(k * period_ns)
            height, width = bgr.shape[:2]
            for conn, kind in conns:
                if kind is None:
                    data = image_cdr(bgr, stamp, frame_id)
                elif kind == 'd':
                    assert depth_m is not None
                    data = synthetic_depth.depth_cdr(width, height, depth_m, stamp, frame_id,
                                                     seed=k)
                elif kind == 'i':
                    data = synthetic_depth.camera_info_cdr(width, height, stamp, frame_id)
                else:
                    data = compressed_cdr(bgr, stamp, frame_id, fmt, jpeg_quality, encoded)
                writer.write(conn, stamp, data)
                topics[conn.topic] += 1
            return stamp

        last_stamp = None
        if capture is not None and video is not None:
            frames = _video_frames(capture, video, start_frame, stride, max_frames)
            for _, frame in frames:
                last_stamp = write(frame, 'jpeg')
                counts['video'] += 1
                if counts['video'] % 100 == 0:
                    log(f'record: {counts["video"]} video frames')
            if counts['video'] == 0 and max_frames != 0:
                raise RecordError(f'cannot read video {video}: no frame could be decoded')
        for path in image_files:
            frame = _read_image(path)
            fmt = still_format
            if fmt == 'source':
                fmt = 'png' if path.suffix.lower() == '.png' else 'jpeg'
            last_stamp = write(frame, fmt)
            counts['images'] += 1
        if last_stamp is None:
            raise RecordError('nothing recorded: the inputs yielded no frames')
        writer.close()
    except BaseException:
        abandon(writer, out)
        raise
    finally:
        if capture is not None:
            capture.release()

    frames_total = counts['video'] + counts['images']
    size = _dir_size(out)
    return {
        'path': out,
        'frames': frames_total,
        'video_frames': counts['video'],
        'image_frames': counts['images'],
        'messages': sum(topics.values()),
        'topics': topics,
        'fps': frame_rate / stride,
        'first_stamp_ns': first_stamp,
        'last_stamp_ns': last_stamp,
        'duration_s': (last_stamp - first_stamp) / 1e9,
        'bytes': size,
        'elapsed_s': time.perf_counter() - started,
    }


# ------------------------------------------------------------------------- CLI
def _human(size: int) -> str:
    value = float(size)
    for unit in ('B', 'KiB', 'MiB', 'GiB'):
        if value < 1024 or unit == 'GiB':
            return f'{value:.1f} {unit}' if unit != 'B' else f'{size} B'
        value /= 1024
    return f'{size} B'


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog='python -m edge_infer.tools.bag.record',
        description='Record a video and/or still images into an mcap rosbag2 with '
                    'sensor_msgs/Image (rgb8) on TOPIC and sensor_msgs/CompressedImage on '
                    'TOPIC/compressed. Stamps follow the video frame rate and equal the '
                    'bag log times; images follow the video frames at the same period.',
        epilog='example: python -m edge_infer.tools.bag.record out/bag --video vtest.avi '
               '--images photos/ --max-frames 100')
    parser.add_argument('out', type=pathlib.Path, help='bag folder to create')
    parser.add_argument('--video', type=pathlib.Path, help='video file (anything OpenCV reads)')
    parser.add_argument('--images', nargs='+', default=[], metavar='DIR_OR_FILE',
                        help='image files and/or folders (taken in name order), '
                             'recorded after the video frames')
    parser.add_argument('--topic', default='/camera/image_raw',
                        help='raw image topic (default: %(default)s)')
    parser.add_argument('--frame-id', default='camera', help='header.frame_id (%(default)s)')
    parser.add_argument('--fps', type=float,
                        help=f"frame rate (default: the video's, or {DEFAULT_IMAGE_FPS:g} "
                             'for images only)')
    parser.add_argument('--start-frame', type=int, default=0, help='first video frame (0)')
    parser.add_argument('--max-frames', type=int, help='most video frames to record')
    parser.add_argument('--stride', type=int, default=1, help='keep every K-th video frame')
    parser.add_argument('--no-raw', dest='raw', action='store_false',
                        help='do not write sensor_msgs/Image')
    parser.add_argument('--no-compressed', dest='compressed', action='store_false',
                        help='do not write sensor_msgs/CompressedImage')
    parser.add_argument('--jpeg-quality', type=int, default=90, help='1..100 (%(default)s)')
    parser.add_argument('--still-format', choices=STILL_FORMATS, default='jpeg',
                        help='compressed format of still images (%(default)s)')
    parser.add_argument('--start-stamp', default=str(DEFAULT_START_STAMP_NS),
                        help='first stamp in ns since the epoch, or "now" '
                             '(default: 2026-01-01T00:00:00Z)')
    parser.add_argument('--zstd', action='store_true', help='zstd-compress the mcap chunks')
    parser.add_argument('--synthetic-depth', type=float, metavar='METRES',
                        help='also record an aligned 16UC1 depth camera showing a wall at '
                             'this distance (1 %% noise, 5 %% holes) and its CameraInfo, on '
                             '<topic namespace>/depth/image_raw and /depth/camera_info')
    parser.add_argument('--overwrite', action='store_true',
                        help='replace OUT if it is an existing bag folder')
    parser.add_argument('-q', '--quiet', action='store_true', help='print only the summary')
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point; returns the process exit code."""
    parser = _parser()
    args = parser.parse_args(argv)
    if args.video is None and not args.images:
        parser.error('give --video and/or --images')
    if args.start_stamp == 'now':
        start_stamp = None
    else:
        try:
            start_stamp = int(args.start_stamp)
        except ValueError:
            parser.error(f'--start-stamp: expected integer ns or "now", got {args.start_stamp}')
    try:
        stats = record_bag(
            args.out, video=args.video, images=args.images, topic=args.topic,
            frame_id=args.frame_id, fps=args.fps, start_frame=args.start_frame,
            max_frames=args.max_frames, stride=args.stride, raw=args.raw,
            compressed=args.compressed, jpeg_quality=args.jpeg_quality,
            still_format=args.still_format, start_stamp_ns=start_stamp,
            overwrite=args.overwrite, zstd=args.zstd, depth_m=args.synthetic_depth,
            log=(lambda _: None) if args.quiet else print)
    except RecordError as exc:
        print(f'error: {exc}', file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print('interrupted; partial bag removed', file=sys.stderr)
        return 130
    print(f'recorded {stats["frames"]} frames ({stats["video_frames"]} video, '
          f'{stats["image_frames"]} images) at {stats["fps"]:g} fps, '
          f'{stats["messages"]} messages on {len(stats["topics"])} topics, '
          f'{stats["duration_s"]:.2f} s, {_human(stats["bytes"])} on disk '
          f'in {stats["elapsed_s"]:.1f} s -> {stats["path"]}')
    return 0


if __name__ == '__main__':
    sys.exit(main())

# Copyright 2026 edge_infer contributors. Apache-2.0.
"""Fuzzing the image path with hypothesis: every input gives a frame or one clear error.

What a camera topic can carry: any encoding string, any sizes and steps, any
bytes, damaged JPEG/PNG files, damaged serialized messages. The decoding
functions must return a correct frame or raise their own error type
(ImageError / CdrError, which the node logs in one line) and never anything
else: no crash, no IndexError, no silent wrong-size frame.
"""

import cv2
from edge_infer.core.cdr import CdrError, parse_compressed_image, parse_image
from edge_infer.core.image import ENCODINGS, from_compressed, from_raw, ImageError
from hypothesis import given, HealthCheck, settings, strategies as st
import numpy as np
from rclpy.serialization import serialize_message
from sensor_msgs.msg import CompressedImage, Image

ROS_ENCODINGS = ['rgb8', 'rgba8', 'rgb16', 'rgba16', 'bgr8', 'bgra8', 'bgr16', 'bgra16',
                 'mono8', 'mono16', 'yuv422', 'yuv422_yuy2', 'uyvy', 'yuyv', 'nv21', 'nv24',
                 'bayer_rggb8', 'bayer_bggr8', 'bayer_gbrg8', 'bayer_grbg8', 'bayer_rggb16',
                 '8UC1', '8UC3', '8UC4', '16UC1', '32FC1', '64FC1', '16SC1', '32SC4']
SETTINGS = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow], database=None)

_rng = np.random.default_rng(0)
_IMG = _rng.integers(0, 255, (48, 64, 3), dtype=np.uint8)
JPEG = cv2.imencode('.jpg', _IMG)[1].tobytes()
PNG = cv2.imencode('.png', _IMG)[1].tobytes()


@settings(SETTINGS, max_examples=2000)
@given(enc=st.sampled_from(ROS_ENCODINGS + ['', 'RGB8', 'rgb8 ', 'weird']),
       h=st.integers(-2, 40), w=st.integers(-2, 40), extra=st.integers(-3, 8),
       size_delta=st.integers(-5, 5))
def test_raw_images_give_a_right_frame_or_image_error(enc, h, w, extra, size_delta):
    channels = ENCODINGS.get(enc.lower(), (3, 'rgb'))[0]
    step = max(0, w * channels + extra)
    data = bytes(max(0, step * max(h, 0) + size_delta))
    try:
        frame = from_raw(enc, h, w, step, data)
    except ImageError as exc:
        assert str(exc)
        return
    assert enc.lower() in ENCODINGS and size_delta == 0 and extra >= 0
    assert frame.pixels.shape == (h, w, channels)


@settings(SETTINGS, max_examples=1500)
@given(base=st.sampled_from([JPEG, PNG]), cut=st.integers(0, 2000),
       flips=st.lists(st.tuples(st.integers(0, 4000), st.integers(0, 255)), max_size=6),
       fmt=st.sampled_from(['jpeg', 'png', 'JPEG', 'rgb8; jpeg compressed bgr8', '', 'tiff']))
def test_damaged_jpeg_and_png_give_a_frame_or_image_error(base, cut, flips, fmt):
    data = bytearray(base[:len(base) - cut] if cut < len(base) else b'')
    for pos, val in flips:
        if data:
            data[pos % len(data)] = val
    try:
        frame = from_compressed(fmt, bytes(data))
    except ImageError as exc:
        assert str(exc)
        return
    assert frame.pixels.ndim == 3 and frame.pixels.shape[2] == 3 and frame.color == 'bgr'
    assert frame.pixels.shape[:2] == (48, 64)       # never a different-size surprise


@settings(SETTINGS, max_examples=1500)
@given(blob=st.binary(max_size=600))
def test_random_bytes_never_escape_the_error_types(blob):
    for fn in (parse_image, parse_compressed_image):
        try:
            fn(blob)
        except CdrError:
            pass
    try:
        from_compressed('jpeg', blob)
    except ImageError:
        pass


def _image_msg():
    m = Image(height=4, width=5, encoding='rgb8', step=15, data=bytes(range(60)))
    m.header.frame_id = 'cam'
    m.header.stamp.sec, m.header.stamp.nanosec = 12, 34
    return serialize_message(m)


IMAGE_CDR = _image_msg()
COMP_CDR = serialize_message(CompressedImage(format='jpeg', data=JPEG))


@settings(SETTINGS, max_examples=1500)
@given(which=st.booleans(), cut=st.integers(0, 80),
       flips=st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 255)), max_size=4))
def test_damaged_serialized_messages_parse_right_or_raise_cdr_error(which, cut, flips):
    base = IMAGE_CDR if which else COMP_CDR
    data = bytearray(base[:max(0, len(base) - cut)])
    for pos, val in flips:
        if data:
            data[pos % len(data)] = val
    fn = parse_image if which else parse_compressed_image
    try:
        f = fn(bytes(data))
    except CdrError as exc:
        assert str(exc)
        return
    if bytes(data) == base and which:
        assert (f.sec, f.nanosec, f.frame_id, f.encoding) == (12, 34, 'cam', 'rgb8')
    elif bytes(data) == base:
        assert f.format == 'jpeg' and bytes(f.data) == JPEG
    # whatever parsed is then checked by the image layer, which never lies about sizes
    try:
        if which:
            frame = from_raw(f.encoding, f.height, f.width, f.step, f.data, f.is_bigendian)
            assert frame.pixels.size == f.height * f.width * frame.pixels.shape[2]
        else:
            from_compressed(f.format, f.data)
    except ImageError:
        pass

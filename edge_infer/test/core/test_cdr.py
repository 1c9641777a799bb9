# Copyright 2026 edge_infer contributors. Apache-2.0.
"""Reading camera messages from CDR bytes agrees with rclpy's deserializer, without copies."""

from edge_infer.core.cdr import CdrError, parse_compressed_image, parse_image
from hypothesis import given, settings
from hypothesis import strategies as st
import numpy as np
import pytest
from rclpy.serialization import serialize_message
from sensor_msgs.msg import CompressedImage, Image

names = st.text(alphabet=st.characters(min_codepoint=32, max_codepoint=0x2FF), max_size=9)


@settings(max_examples=300, deadline=None)
@given(frame_id=names, encoding=names, h=st.integers(0, 7), w=st.integers(0, 7),
       pad=st.integers(0, 5), sec=st.integers(-2**31, 2**31 - 1),
       nsec=st.integers(0, 999_999_999), big=st.integers(0, 1))
def test_image_fields_match_the_message(frame_id, encoding, h, w, pad, sec, nsec, big):
    msg = Image(height=h, width=w, encoding=encoding, is_bigendian=big, step=w * 3 + pad)
    msg.header.frame_id = frame_id
    msg.header.stamp.sec, msg.header.stamp.nanosec = sec, nsec
    msg.data = bytes(i % 251 for i in range(h * (w * 3 + pad)))
    raw = serialize_message(msg)
    f = parse_image(raw)
    assert (f.sec, f.nanosec, f.frame_id) == (sec, nsec, frame_id)
    assert (f.height, f.width, f.encoding, f.is_bigendian, f.step) == \
        (h, w, encoding, big, w * 3 + pad)
    assert bytes(f.data) == bytes(msg.data)


@settings(max_examples=200, deadline=None)
@given(frame_id=names, fmt=names, n=st.integers(0, 40))
def test_compressed_fields_match_the_message(frame_id, fmt, n):
    msg = CompressedImage(format=fmt, data=bytes(range(n)))
    msg.header.frame_id = frame_id
    f = parse_compressed_image(serialize_message(msg))
    assert (f.frame_id, f.format, bytes(f.data)) == (frame_id, fmt, bytes(range(n)))


def test_pixels_are_a_view_on_the_received_bytes():
    msg = Image(height=2, width=2, encoding='rgb8', step=6, data=bytes(range(12)))
    raw = serialize_message(msg)
    f = parse_image(raw)
    arr = np.frombuffer(f.data, np.uint8)
    # The array's memory lies inside the serialized buffer: no copy was made.
    base = np.frombuffer(raw, np.uint8).ctypes.data
    assert base <= arr.ctypes.data < base + len(raw)
    assert arr.tolist() == list(range(12))


@pytest.mark.parametrize('cut', [0, 3, 9, 30, -1])
def test_truncated_or_foreign_bytes_raise(cut):
    raw = serialize_message(Image(height=1, width=1, encoding='rgb8', step=3, data=b'abc'))
    with pytest.raises(CdrError):
        parse_image(raw[:cut] if cut >= 0 else b'\x07\x07' + raw[2:])

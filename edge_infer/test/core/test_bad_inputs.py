# Copyright 2026 edge_infer contributors. Apache-2.0.
"""The bad-input matrix at the image layer: every encoding ROS defines, huge frames.

sensor_msgs/image_encodings.hpp lists the encodings below. Supported ones
become frames; every other one is refused with a message naming it and the
supported set (the node logs that line and counts the frame as rejected,
see test_integration.py for the node side).
"""

from edge_infer.core.image import ENCODINGS, from_raw, ImageError
from edge_infer.core.preprocess import InputSpec, Preprocessor
import numpy as np
import pytest

# (encoding, bytes per pixel) from sensor_msgs/image_encodings.hpp
ROS_ENCODINGS = {
    'rgb8': 3, 'rgba8': 4, 'rgb16': 6, 'rgba16': 8, 'bgr8': 3, 'bgra8': 4, 'bgr16': 6,
    'bgra16': 8, 'mono8': 1, 'mono16': 2, '8UC1': 1, '8UC2': 2, '8UC3': 3, '8UC4': 4,
    '8SC1': 1, '16UC1': 2, '16UC3': 6, '16SC1': 2, '32SC1': 4, '32FC1': 4, '32FC3': 12,
    '64FC1': 8, 'bayer_rggb8': 1, 'bayer_bggr8': 1, 'bayer_gbrg8': 1, 'bayer_grbg8': 1,
    'bayer_rggb16': 2, 'bayer_bggr16': 2, 'bayer_gbrg16': 2, 'bayer_grbg16': 2,
    'yuv422': 2, 'yuv422_yuy2': 2, 'uyvy': 2, 'yuyv': 2, 'nv21': 1, 'nv24': 1,
}


@pytest.mark.parametrize('encoding', sorted(ROS_ENCODINGS))
def test_every_ros_encoding_is_processed_or_refused_by_name(encoding):
    h, w = 6, 8
    step = w * ROS_ENCODINGS[encoding]
    data = bytes(range(256)) * (step * h // 256 + 1)
    data = data[:step * h]
    if encoding in ENCODINGS:
        frame = from_raw(encoding, h, w, step, data)
        assert frame.pixels.shape == (h, w, ENCODINGS[encoding][0])
        assert frame.pixels.base is not None               # a view on the message buffer
    else:
        expected = f"unsupported encoding '{encoding}' " + r'\(supported: rgb8, bgr8'
        with pytest.raises(ImageError, match=expected):
            from_raw(encoding, h, w, step, data)


def test_an_8k_frame_is_viewed_in_place_and_letterboxed():
    h, w = 4320, 7680
    data = np.zeros(h * w * 3, np.uint8)
    data[::1000] = 255
    frame = from_raw('rgb8', h, w, w * 3, data.data)
    assert frame.pixels.shape == (h, w, 3) and np.shares_memory(frame.pixels, data)
    spec = InputSpec(width=416, height=416, layout='NCHW', color='bgr', resize='letterbox',
                     pad_value=0.0, mean=(0.0, 0.0, 0.0), std=(1.0, 1.0, 1.0))
    tensor, tf = Preprocessor(spec)(frame)
    assert tensor.shape == (1, 3, 416, 416)
    assert tf.scale_x == tf.scale_y == pytest.approx(416 / 7680)
    # a box over the whole model input maps back to the whole 8K frame
    box = tf.to_source(np.array([[0, tf.pad_y, 416, 416 - tf.pad_y]], np.float64))
    np.testing.assert_allclose(box[0], [0, 0, w, h], atol=8)

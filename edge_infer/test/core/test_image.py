# Copyright 2026 edge_infer contributors. Apache-2.0.
"""sensor_msgs fields -> numpy frames: views, padding, and clear rejections."""

import cv2
from edge_infer.core.image import from_compressed, from_raw, ImageError, JPEG_DETECTS_CORRUPTION
import numpy as np
import pytest


def _rgb(h=4, w=5):
    return (np.arange(h * w * 3, dtype=np.uint32) % 251).astype(np.uint8).reshape(h, w, 3)


def test_rgb8_is_a_view_on_the_message_buffer():
    img = _rgb()
    data = bytearray(img.tobytes())
    frame = from_raw('rgb8', 4, 5, 15, data)
    assert frame.color == 'rgb' and frame.pixels.shape == (4, 5, 3)
    np.testing.assert_array_equal(frame.pixels, img)
    data[0] = 99                       # same memory: no copy was made
    assert frame.pixels[0, 0, 0] == 99


def test_padded_rows_are_skipped_by_step():
    img = _rgb(3, 2)
    padded = np.zeros((3, 8), np.uint8)
    padded[:, :6] = img.reshape(3, 6)
    frame = from_raw('bgr8', 3, 2, 8, padded.tobytes())
    assert frame.color == 'bgr'
    np.testing.assert_array_equal(frame.pixels, img)


def test_mono8_and_rgba8():
    mono = np.arange(12, dtype=np.uint8).reshape(3, 4)
    f = from_raw('mono8', 3, 4, 4, mono.tobytes())
    assert f.pixels.shape == (3, 4, 1) and f.color == 'mono'
    rgba = np.arange(2 * 2 * 4, dtype=np.uint8).reshape(2, 2, 4)
    f = from_raw('rgba8', 2, 2, 8, rgba.tobytes())
    assert f.pixels.shape == (2, 2, 4) and f.color == 'rgb'


@pytest.mark.parametrize('encoding,h,w,step,size,needle', [
    ('yuv422', 2, 2, 4, 8, 'unsupported encoding'),
    ('16UC1', 2, 2, 4, 8, 'unsupported encoding'),
    ('rgb8', 0, 2, 6, 0, 'empty rgb8 image'),
    ('rgb8', 2, 2, 5, 10, 'step 5 < width'),
    ('rgb8', 2, 2, 6, 11, 'data size 11 != step 6 x height 2'),
    ('rgb8', 2, 2, 6, 13, 'data size 13'),
])
def test_bad_raw_images_are_rejected_with_the_reason(encoding, h, w, step, size, needle):
    with pytest.raises(ImageError, match=needle):
        from_raw(encoding, h, w, step, bytes(size))


def _jpeg(img):
    ok, buf = cv2.imencode('.jpg', img)
    assert ok
    return buf.tobytes()


def test_jpeg_and_png_decode_to_bgr():
    img = np.zeros((16, 24, 3), np.uint8)
    img[:, :, 2] = 200                 # red in BGR
    f = from_compressed('jpeg', _jpeg(img))
    assert f.color == 'bgr' and f.pixels.shape == (16, 24, 3)
    assert abs(int(f.pixels[8, 12, 2]) - 200) < 8
    ok, png = cv2.imencode('.png', img)
    f = from_compressed('png', png.tobytes())
    np.testing.assert_array_equal(f.pixels, img)


def test_truncated_and_corrupt_compressed_images_are_rejected():
    img = (np.random.default_rng(0).random((32, 32, 3)) * 255).astype(np.uint8)
    data = _jpeg(img)
    with pytest.raises(ImageError, match='truncated JPEG'):
        from_compressed('jpeg', data[: len(data) // 2])
    ok, png = cv2.imencode('.png', img)
    with pytest.raises(ImageError, match='truncated PNG'):
        from_compressed('png', png.tobytes()[:-20])
    with pytest.raises(ImageError, match='neither JPEG nor PNG'):
        from_compressed('jpeg', b'GIF89a' + bytes(50))
    with pytest.raises(ImageError, match='empty'):
        from_compressed('jpeg', b'')
    corrupt = data[:2] + bytes(len(data) - 4) + data[-2:]   # markers kept, body zeroed
    with pytest.raises(ImageError, match='corrupt JPEG'):
        from_compressed('jpeg', corrupt)


def _scan_start(data: bytes) -> int:
    sos = data.find(b'\xff\xda')
    return sos + 2 + int.from_bytes(data[sos + 2:sos + 4], 'big')


def _corrupt_entropy(data: bytes, n: int = 600) -> bytes:
    """Zero ``n`` bytes in the middle of the entropy-coded data: every marker stays."""
    mid = (_scan_start(data) + len(data)) // 2
    return data[:mid] + bytes(n) + data[mid + n:]


def test_corrupt_entropy_data_is_rejected_where_opencv_decodes_it(footage):
    photo = next(p for p in footage['photos'] if p.name == 'astronaut.png')
    data = _jpeg(cv2.imread(str(photo)))
    bad = _corrupt_entropy(data)
    assert bad[:2] == b'\xff\xd8' and bad[-2:] == b'\xff\xd9' and len(bad) == len(data)
    # the trap: OpenCV returns a (wrong) image, libjpeg only prints on stderr
    assert cv2.imdecode(np.frombuffer(bad, np.uint8), cv2.IMREAD_COLOR) is not None
    with pytest.raises(ImageError) as err:
        from_compressed('jpeg', bad)
    assert str(err.value).startswith(f'corrupt JPEG ({len(bad)} bytes): ')
    assert '\n' not in str(err.value)
    # a good frame decodes exactly as OpenCV does (both libjpeg-turbo)
    np.testing.assert_array_equal(from_compressed('jpeg', data).pixels,
                                  cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_COLOR))


@pytest.mark.parametrize('tail', [b'\x00' * 7, b'\xff' * 3, b'\r\n', b'\x00' * 100_000,
                                  b'\xff\xd9\x00\x00'])
def test_a_complete_jpeg_with_padding_after_its_end_marker_decodes(tail):
    img = (np.random.default_rng(1).random((24, 40, 3)) * 255).astype(np.uint8)
    data = _jpeg(img)
    f = from_compressed('jpeg', data + tail)
    np.testing.assert_array_equal(f.pixels, from_compressed('jpeg', data).pixels)
    # still truncated when the end is missing, whatever padding follows
    with pytest.raises(ImageError, match='truncated JPEG'):
        from_compressed('jpeg', data[: len(data) // 2] + b'\x00' * 7)
    # an end marker glued to a cut scan: the decoder finds the data short
    with pytest.raises(ImageError, match='corrupt JPEG'):
        from_compressed('jpeg', data[: len(data) // 2] + b'\xff\xd9' + tail)


def test_two_faults_that_read_alike_name_their_encoding():
    with pytest.raises(ImageError) as a:
        from_raw('rgba8', 4, 64, 192, bytes(192 * 4))
    with pytest.raises(ImageError) as b:
        from_raw('bgra8', 4, 64, 192, bytes(192 * 4))
    assert str(a.value).startswith('rgba8 64x4: step 192 < width 64 x 4 channels')
    assert str(b.value).startswith('bgra8 64x4:') and str(a.value) != str(b.value)


def test_a_16_bit_png_is_rejected_as_a_depth_image_not_read_as_a_photo():
    depth = (np.arange(48 * 64, dtype=np.uint16).reshape(48, 64) * 20)
    ok, png = cv2.imencode('.png', depth)
    assert ok
    with pytest.raises(ImageError, match=r'16-bit grey PNG .*a depth image'):
        from_compressed('png', png.tobytes())
    ok, png8 = cv2.imencode('.png', (depth >> 8).astype(np.uint8))
    assert from_compressed('png', png8.tobytes()).pixels.shape == (48, 64, 3)


@pytest.mark.skipif(not JPEG_DETECTS_CORRUPTION, reason='scaled decode needs simplejpeg')
def test_a_jpeg_is_decoded_at_the_scale_the_model_needs_and_keeps_the_source_size():
    from edge_infer.core.image import decode_scale
    from edge_infer.core.preprocess import InputSpec, Preprocessor
    rng = np.random.default_rng(1)
    img = cv2.GaussianBlur(rng.integers(0, 256, (576, 768, 3), dtype=np.uint8), (9, 9), 3)
    data = _jpeg(img)
    classifier = InputSpec(224, 224, resize='center_crop', jpeg_dct_scaling=True)
    assert from_compressed('jpeg', data, InputSpec(224, 224)).pixels.shape[:2] == (576, 768)
    assert decode_scale(classifier, 768, 576) == (342, 256)
    f = from_compressed('jpeg', data, classifier)
    assert f.pixels.shape[:2] == (288, 384) and (f.width, f.height) == (768, 576)
    # a detector needing 416x312: no 1/2 scale covers it, so the whole decode
    detector = InputSpec(416, 416, resize='letterbox', jpeg_dct_scaling=True)
    assert from_compressed('jpeg', data, detector).pixels.shape[:2] == (576, 768)
    detector = InputSpec(320, 320, resize='letterbox', jpeg_dct_scaling=True)
    f = from_compressed('jpeg', data, detector)
    assert f.pixels.shape[:2] == (288, 384)
    # results land in the source's pixels: a box over the whole picture maps to it
    _, tf = Preprocessor(detector)(f)
    whole = tf.to_source(np.array([[0.0, 40.0, 320.0, 280.0]]))
    np.testing.assert_allclose(whole, [[0, 0, 768, 576]], atol=1.5)
    # and the tensor is close to the one from the whole decode
    full, _ = Preprocessor(detector)(from_compressed('jpeg', data))
    small, _ = Preprocessor(detector)(f)
    assert np.abs(np.array(full) - np.array(small)).mean() < 2.0

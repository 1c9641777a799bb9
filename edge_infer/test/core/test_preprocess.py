# Copyright 2026 edge_infer contributors. Apache-2.0.
"""Letterbox / centre-crop preprocessing and the mapping back to source pixels."""

import dataclasses

import cv2
from edge_infer.core.image import Frame
from edge_infer.core.preprocess import InputSpec, Preprocessor
import numpy as np
import pytest


def test_letterbox_pads_keeps_aspect_and_normalises_in_model_colour_order():
    spec = InputSpec(width=8, height=8, color='bgr', resize='letterbox', pad_value=0,
                     mean=(10, 20, 30), std=(2, 4, 5))
    pre = Preprocessor(spec)
    src = np.zeros((2, 4, 3), np.uint8)       # 4 wide x 2 high, rgb
    src[..., 0], src[..., 1], src[..., 2] = 100, 50, 30   # r g b
    tensor, tf = pre(Frame(src, 'rgb'))
    assert tensor.shape == (1, 3, 8, 8) and tensor.dtype == np.float32
    # scale 2: image occupies rows 2..5, all columns; pad rows hold (0 - mean) / std
    assert tf.scale_x == tf.scale_y == 2.0 and (tf.pad_x, tf.pad_y) == (0, 2)
    assert tensor[0, 0, 3, 3] == pytest.approx((30 - 10) / 2)     # model ch 0 = b
    assert tensor[0, 1, 3, 3] == pytest.approx((50 - 20) / 4)     # g
    assert tensor[0, 2, 3, 3] == pytest.approx((100 - 30) / 5)    # r
    assert tensor[0, 2, 0, 0] == pytest.approx((0 - 30) / 5)      # padding


def test_boxes_map_back_to_source_pixels():
    pre = Preprocessor(InputSpec(width=416, height=416, resize='letterbox'))
    src = np.zeros((576, 768, 3), np.uint8)
    _, tf = pre(Frame(src, 'rgb'))
    # a box covering the whole letterboxed image area maps to the whole source
    s = 416 / 768
    top = (416 - round(576 * s)) // 2
    box = np.array([[0, top, 416, top + round(576 * s)]], np.float32)
    np.testing.assert_allclose(tf.to_source(box), [[0, 0, 768, 576]], atol=1.0)


def test_same_buffer_every_frame_no_reallocation():
    pre = Preprocessor(InputSpec(width=16, height=16))
    a, _ = pre(Frame(np.zeros((20, 30, 3), np.uint8), 'rgb'))
    b, _ = pre(Frame(np.full((40, 10, 3), 255, np.uint8), 'bgr'))
    assert a is b and a.ctypes.data == b.ctypes.data and b.flags['C_CONTIGUOUS']


def test_center_crop_matches_resize_then_crop():
    spec = InputSpec(width=224, height=224, resize='center_crop', crop_fraction=0.875)
    pre = Preprocessor(spec)
    src = np.zeros((300, 400, 3), np.uint8)
    src[:, 200:] = 255                         # right half white
    tensor, tf = pre(Frame(src, 'rgb'))
    # shorter side 300 -> 256: crop is the central 262.5 x 262.5 source pixels
    assert tensor[0, 0, 112, 0] == 0 and tensor[0, 0, 112, 223] == 255
    centre = tf.to_source(np.array([[112, 112, 112, 112]], np.float32))[0]
    np.testing.assert_allclose(centre[:2], [200, 150], atol=1.0)


def test_mono_is_replicated_to_three_channels_and_nhwc_layout():
    spec = InputSpec(width=4, height=4, resize='stretch', layout='NHWC')
    tensor, _ = Preprocessor(spec)(Frame(np.full((4, 4, 1), 7, np.uint8), 'mono'))
    assert tensor.shape == (1, 4, 4, 3) and np.all(tensor == 7)


@pytest.mark.parametrize('kw', [{'layout': 'CHW'}, {'resize': 'fill'}, {'color': 'hsv'},
                                {'std': (1, 0, 1)}, {'mean': (1, 2)}])
def test_bad_specs_are_refused(kw):
    with pytest.raises(ValueError):
        Preprocessor(InputSpec(width=4, height=4, **kw))


def _normalised(u8: np.ndarray, spec: InputSpec) -> np.ndarray:
    """Do what a '+pre' graph does with a u8 tensor: float, (x - mean) / std, layout."""
    x = (u8.astype(np.float32) - np.float32(spec.mean)) * (1 / np.float32(spec.std))
    return x.transpose(0, 3, 1, 2) if spec.layout == 'NCHW' else x


@pytest.mark.parametrize('resize', ['letterbox', 'center_crop', 'stretch'])
@pytest.mark.parametrize('encoding', ['rgb', 'bgr', 'mono', 'rgba'])
def test_u8_input_is_the_float_input_before_normalisation(resize, encoding):
    """Kind 'u8' stops after the resize; normalising it gives the float kind's tensor."""
    spec = InputSpec(width=32, height=24, color='bgr', resize=resize, pad_value=114,
                     mean=(10, 20, 30), std=(2, 4, 5))
    rng = np.random.default_rng(5)
    channels = {'mono': 1, 'rgba': 4}.get(encoding, 3)
    frame = Frame(rng.integers(0, 256, (50, 90, channels), dtype=np.uint8),
                  encoding[:3] if encoding != 'mono' else 'mono')
    ref, tf_ref = Preprocessor(spec)(frame)
    u8_pre = Preprocessor(spec, 'u8')
    u8, tf = u8_pre(frame)
    assert u8.shape == (1, 24, 32, 3) and u8.dtype == np.uint8 and tf == tf_ref
    np.testing.assert_allclose(_normalised(u8, spec), ref, rtol=0, atol=1e-5)
    if resize == 'letterbox':       # the border holds the pad value itself
        assert np.all(u8[0, 0] == 114) and np.all(u8[0, -1] == 114)
    again, _ = u8_pre(frame)
    assert again is u8      # the same buffer every frame


def test_an_unknown_input_kind_is_refused():
    with pytest.raises(ValueError, match="input kind 'f16'"):
        Preprocessor(InputSpec(width=4, height=4), 'f16')


def test_area2_averages_by_the_whole_factor_first_and_only_where_it_divides():
    rng = np.random.default_rng(9)
    frame = Frame(rng.integers(0, 256, (576, 768, 3), dtype=np.uint8), 'bgr')
    spec = InputSpec(width=224, height=224, color='bgr', resize='center_crop')
    crop = frame.pixels[36:540, 132:636]    # the 504 x 504 centre crop (224 / 0.875 of 576)
    two_steps = cv2.resize(cv2.resize(crop, (252, 252), interpolation=cv2.INTER_AREA),
                           (224, 224), interpolation=cv2.INTER_AREA)
    got, _ = Preprocessor(dataclasses.replace(spec, interpolation='area2'), 'u8')(frame)
    np.testing.assert_array_equal(got[0], two_steps)
    one_step, _ = Preprocessor(spec, 'u8')(frame)
    assert not np.array_equal(got, one_step)      # rounding differs: a per-model choice
    # a factor below 2 (NanoDet's 768 -> 416): no box step, the same pixels as 'area'
    letter = InputSpec(width=416, height=416, color='bgr')
    a, _ = Preprocessor(letter, 'u8')(frame)
    b, _ = Preprocessor(dataclasses.replace(letter, interpolation='area2'), 'u8')(frame)
    np.testing.assert_array_equal(a, b)

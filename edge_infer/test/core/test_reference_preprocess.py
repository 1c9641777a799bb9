# Copyright 2026 edge_infer contributors. Apache-2.0.
"""Each bundled model's reference input equals its authors' pipeline, written out by hand.

On real frames (the pedestrian video at 768x576, the astronaut and cat
photos): the pixels inside every reference tensor are exactly the ones the
authors' own calls give (cv2.warpPerspective with their matrix, cv2.resize
with their factor, TF's bilinear formula, PIL's resize), and the registry
records each pipeline with its source.
"""

import dataclasses

import cv2
from edge_infer.core import reference_preprocess as rp
from edge_infer.core.image import Frame
from edge_infer.core.registry import load_registry, RegistryError
import numpy as np
import pytest
import yaml


@pytest.fixture(scope='module')
def registry():
    """Return the package's registry."""
    from edge_infer import paths
    return load_registry(paths.config_dir() / 'models.yaml')


@pytest.fixture(scope='module')
def frames(footage):
    """Return three real BGR frames of different sizes: video, astronaut, cat."""
    cap = cv2.VideoCapture(str(footage['video']))
    cap.set(cv2.CAP_PROP_POS_FRAMES, 100)
    ok, video = cap.read()
    cap.release()
    assert ok
    photos = {p.name: p for p in footage['photos']}
    return [video] + [cv2.imread(str(photos[n])) for n in ('astronaut.png', 'chelsea.png')]


def _pixels(tensor: np.ndarray, spec) -> np.ndarray:
    """Return the H x W x 3 pixel values (0..255) a reference tensor was made from."""
    x = tensor[0].transpose(1, 2, 0) if spec.layout == 'NCHW' else tensor[0]
    return np.rint(x * np.float32(spec.std) + np.float32(spec.mean))


def test_nanodet_is_its_warp_and_resize(registry, frames):
    spec = registry['nanodet']
    for bgr in frames:
        h, w = bgr.shape[:2]
        c, s, t = np.eye(3), np.eye(3), np.eye(3)      # warp.py: T @ Rs @ C
        c[0, 2], c[1, 2] = -w / 2, -h / 2
        ratio = 416 / h if w / h < 1 else 416 / w
        s[0, 0] = s[1, 1] = ratio
        t[0, 2], t[1, 2] = 208, 208
        want = cv2.warpPerspective(bgr, t @ s @ c, dsize=(416, 416))
        got, tf = rp.reference_input(Frame(bgr, 'bgr'), spec.input_spec, spec.preprocess)
        assert got.shape == (1, 3, 416, 416) and got.dtype == np.float32
        np.testing.assert_array_equal(_pixels(got, spec.input_spec), want)
        # the frame's centre lands on the input's centre
        assert tf.points_to_source(np.array([[208.0, 208.0]]))[0] == pytest.approx(
            [w / 2, h / 2], abs=0.5)
    # an RGB frame gives the same BGR input
    rgb_in, _ = rp.reference_input(Frame(frames[0][:, :, ::-1], 'rgb'), spec.input_spec,
                                   spec.preprocess)
    bgr_in, _ = rp.reference_input(Frame(frames[0], 'bgr'), spec.input_spec, spec.preprocess)
    np.testing.assert_array_equal(rgb_in, bgr_in)


def test_selfie_is_mediapipes_image_to_tensor(registry, frames):
    spec = registry['selfie']
    for bgr in frames:
        h, w = bgr.shape[:2]
        rgb = cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB)
        src = cv2.boxPoints(((w / 2, h / 2), (w, h), 0.0)).astype(np.float32)
        dst = np.float32([[0, 256], [0, 0], [256, 0], [256, 256]])
        m = cv2.getPerspectiveTransform(src, dst)
        want = cv2.warpPerspective(rgb, m, (256, 256), flags=cv2.INTER_LINEAR,
                                   borderMode=cv2.BORDER_CONSTANT)
        got, _ = rp.reference_input(Frame(bgr, 'bgr'), spec.input_spec, spec.preprocess)
        assert got.shape == (1, 256, 256, 3)
        np.testing.assert_array_equal(_pixels(got, spec.input_spec), want)
        np.testing.assert_allclose(got[0], want.astype(np.float32) / 255, rtol=0, atol=1e-7)


def test_centernet_is_its_preprocess(registry, frames):
    spec = registry['centernet']
    for bgr in frames:
        rgb = cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB)
        h, w = rgb.shape[:2]
        scale = min(512 / h, 512 / w)
        small = cv2.resize(rgb, None, fx=scale, fy=scale)
        want = np.zeros((512, 512, 3), np.uint8)
        dx, dy = (512 - small.shape[1]) // 2, (512 - small.shape[0]) // 2
        want[dy:dy + small.shape[0], dx:dx + small.shape[1]] = small
        got, tf = rp.reference_input(Frame(bgr, 'bgr'), spec.input_spec, spec.preprocess)
        np.testing.assert_array_equal(got[0], want.astype(np.float32))
        assert (tf.pad_x, tf.pad_y) == (dx, dy)


def _tf_pixel(img: np.ndarray, oy: int, ox: int, out_h: int, out_w: int) -> np.ndarray:
    """Return TF's ResizeBilinear value at one output pixel, written out as its kernel does."""
    f = np.float32
    h, w = img.shape[:2]
    sy, sx = f(h) / f(out_h), f(w) / f(out_w)
    iy, ix = (f(oy) + f(0.5)) * sy - f(0.5), (f(ox) + f(0.5)) * sx - f(0.5)
    y0, x0 = max(int(np.floor(iy)), 0), max(int(np.floor(ix)), 0)
    y1, x1 = min(int(np.ceil(iy)), h - 1), min(int(np.ceil(ix)), w - 1)
    ly, lx = iy - f(np.floor(iy)), ix - f(np.floor(ix))
    p = img.astype(np.float32)
    top = p[y0, x0] + (p[y0, x1] - p[y0, x0]) * lx
    bottom = p[y1, x0] + (p[y1, x1] - p[y1, x0]) * lx
    return top + (bottom - top) * ly


def test_movenet_is_resize_with_pad_then_int32(registry, frames):
    spec = registry['movenet_lightning']
    rng = np.random.default_rng(5)
    for bgr in frames:
        rgb = cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB)
        h, w = rgb.shape[:2]
        ratio = max(np.float32(w) / np.float32(192), np.float32(h) / np.float32(192))
        nh, nw = int(np.floor(np.float32(h) / ratio)), int(np.floor(np.float32(w) / ratio))
        py = int(np.floor((np.float32(192) - np.float32(h) / ratio) / 2))
        px = int(np.floor((np.float32(192) - np.float32(w) / ratio) / 2))
        got, tf = rp.reference_input(Frame(bgr, 'bgr'), spec.input_spec, spec.preprocess)
        x = got[0]
        assert (tf.pad_x, tf.pad_y) == (px, py)
        assert not x[:py].any() and not x[py + nh:].any()
        assert not x[:, :px].any() and not x[:, px + nw:].any()
        for oy, ox in rng.integers(0, [nh, nw], (200, 2)):
            want = np.trunc(_tf_pixel(rgb, int(oy), int(ox), nh, nw))
            np.testing.assert_array_equal(x[py + oy, px + ox], want)
        assert np.array_equal(x, np.trunc(x))


def test_mobilenet_is_torchvision_on_a_pil_image(registry, frames):
    Image = pytest.importorskip('PIL.Image')
    spec = registry['mobilenet_v2']
    for bgr in frames:
        rgb = cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB)
        h, w = rgb.shape[:2]
        short, long = min(w, h), max(w, h)
        size = (256, int(256 * long / short)) if w <= h else (int(256 * long / short), 256)
        big = np.asarray(Image.fromarray(rgb).resize(size, Image.BILINEAR))
        top, left = int(round((size[1] - 224) / 2.0)), int(round((size[0] - 224) / 2.0))
        want = big[top:top + 224, left:left + 224]
        got, tf = rp.reference_input(Frame(bgr, 'bgr'), spec.input_spec, spec.preprocess)
        assert got.shape == (1, 3, 224, 224)
        np.testing.assert_array_equal(_pixels(got, spec.input_spec), want)
        assert tf.scale_x == pytest.approx(size[0] / w)
        # without Pillow: the same pixels from numpy
        np.testing.assert_array_equal(rp.pil_bilinear_numpy(rgb, *size), big)


def test_registry_records_every_bundled_pipeline(registry):
    for name, spec in registry.items():
        pre = spec.preprocess
        assert pre.source and not pre.default, name
        assert pre.color == spec.input_spec.color
        rp.check(pre, spec.input_spec)
    assert registry['mobilenet_v2'].preprocess.antialias
    assert registry['nanodet'].preprocess.pipeline == 'warp_perspective'


def _entry(**over) -> dict:
    entry = {'file': 'm.onnx', 'task': 'detection', 'labels': 'labels.txt',
             'input': {'width': 640, 'height': 640, 'resize': 'letterbox', 'pad_value': 114,
                       'normalize': {'mean': [0, 0, 0], 'std': [255, 255, 255]}},
             'output': {'decoder': 'yolov8', 'score_threshold': 0.25, 'nms_iou': 0.7}}
    entry.update(over)
    return entry


def _load(tmp_path, entry):
    (tmp_path / 'labels.txt').write_text('person\n')
    path = tmp_path / 'models.yaml'
    path.write_text(yaml.safe_dump({'models': {'m': entry}}))
    return load_registry(path)['m']


def test_an_entry_without_the_block_gets_a_stated_default(tmp_path):
    pre = _load(tmp_path, _entry()).preprocess
    assert (pre.pipeline, pre.interpolation, pre.pad_value) == ('cv2_resize', 'linear', 114)
    assert 'Ultralytics' in pre.default and 'augment.py' in pre.source
    other = _entry(output={'decoder': 'yolox', 'score_threshold': 0.3, 'nms_iou': 0.5})
    other['input'] = dict(other['input'], pad_value=0)
    pre = _load(tmp_path, other).preprocess
    assert pre.pad_value == 0 and 'INTER_LINEAR' in pre.default


@pytest.mark.parametrize('block, said', [
    ({'pipeline': 'warp_perspective'}, 'needs a source'),
    ({'pipeline': 'lanczos', 'source': 'x'}, "pipeline 'lanczos' unknown"),
    ({'pipeline': 'cv2_resize', 'color': 'bgr', 'source': 'x'}, 'differs'),
    ({'pipeline': 'tf_resize_with_pad', 'resize': 'stretch', 'source': 'x'}, 'letterbox'),
    ({'pipeline': 'cv2_resize', 'source': 'x', 'typo': 1}, 'takes no typo'),
])
def test_a_bad_block_is_refused_with_its_reason(tmp_path, block, said):
    with pytest.raises(RegistryError, match=said):
        _load(tmp_path, _entry(preprocess=block))


def test_every_pipeline_keeps_a_frame_of_any_colour_order(registry, frames):
    gray = Frame(cv2.cvtColor(frames[1], cv2.COLOR_BGR2GRAY), 'mono')
    bgra = Frame(cv2.cvtColor(frames[1], cv2.COLOR_BGR2BGRA), 'bgr')
    for spec in registry.values():
        want, _ = rp.reference_input(Frame(frames[1], 'bgr'), spec.input_spec, spec.preprocess)
        got, _ = rp.reference_input(bgra, spec.input_spec, spec.preprocess)
        np.testing.assert_array_equal(got, want)
        mono, _ = rp.reference_input(gray, spec.input_spec, spec.preprocess)
        assert mono.shape == want.shape
    plain = dataclasses.replace(registry['centernet'].preprocess, scale_by='size')
    a, _ = rp.reference_input(Frame(frames[0], 'bgr'), registry['centernet'].input_spec, plain)
    b, _ = rp.reference_input(Frame(frames[0], 'bgr'), registry['centernet'].input_spec,
                              registry['centernet'].preprocess)
    np.testing.assert_array_equal(a, b)     # 768 x 2/3 is whole: the two calls agree


@pytest.mark.parametrize('model', ['selfie', 'nanodet'])
def test_the_runtime_warp_resize_gives_the_authors_warp(registry, frames, model):
    from edge_infer.core.preprocess import Preprocessor
    spec = registry[model]
    warp = Preprocessor(dataclasses.replace(spec.input_spec, interpolation='warp'))
    for kind in ('float', 'u8'):
        pre = Preprocessor(warp.spec, kind)
        for bgr in frames[:2]:      # whole offsets: the letterbox region is placed alike
            want, wtf = rp.reference_input(Frame(bgr, 'bgr'), spec.input_spec,
                                           spec.preprocess)
            got, tf = pre(Frame(bgr, 'bgr'))
            got = _pixels(got, spec.input_spec) if kind == 'float' else got[0]
            diff = np.abs(got.astype(np.float32) - _pixels(want, spec.input_spec))
            assert diff.max() <= 1 and (diff > 0).mean() < 0.01, (kind, diff.max())
            assert (tf.scale_x, tf.pad_x, tf.pad_y) == pytest.approx(
                (wtf.scale_x, wtf.pad_x, wtf.pad_y))

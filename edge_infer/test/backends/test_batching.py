# Copyright 2026 edge_infer contributors. Apache-2.0.
"""Several frames in one run: a batch-N session gives each frame what batch 1 gives it.

Real models (NanoDet, MobileNetV2: both exported at batch 1, NanoDet with
its batch 1 written into Reshape and Resize constants) on real frames of
the pedestrian video, on ONNX Runtime and OpenVINO; the measured verdict
and its cache; a backend that cannot batch says so.
"""

import math

import cv2
from edge_infer.backends.libs.opencv_dnn import OpenCvDnnBackend
from edge_infer.backends.libs.openvino import OpenVinoBackend
from edge_infer.backends.libs.ort import OrtCpuBackend
from edge_infer.backends.live.batching import plan_batch
from edge_infer.backends.measure.cache import ProfileCache
from edge_infer.core.backend import BackendError
from edge_infer.core.image import Frame
from edge_infer.core.model import Model
from edge_infer.core.registry import load_models
import numpy as np
import pytest


def _frames(footage, n):
    cap = cv2.VideoCapture(str(footage['video']))
    out = []
    for k in range(n * 15):
        ok, bgr = cap.read()
        assert ok
        if k % 15 == 0:     # frames apart: each with its own people
            out.append(Frame(bgr, 'bgr'))
    cap.release()
    return out


def _same(a, b):
    for field in ('boxes', 'scores', 'class_ids'):
        x, y = getattr(a, field, None), getattr(b, field, None)
        if x is not None:
            np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize('name, backend', [
    ('nanodet', OrtCpuBackend(1)), ('nanodet', OpenVinoBackend(1)),
    ('mobilenet_v2', OpenVinoBackend(1, graph_preprocessing=True))])
def test_a_batch_gives_each_frame_what_one_at_a_time_gives(data_home, footage, name, backend):
    spec = load_models()[name]
    model = Model(spec, backend, data_home / 'models')
    batch = model.batched(3)
    try:
        frames = _frames(footage, 3)
        alone = [model.infer(f).output for f in frames]
        together = batch.infer_batch(frames)
        assert [r.batch for r in together] == [3, 3, 3]
        assert len({r.inference_ms for r in together}) == 1     # the one run's time
        for a, r in zip(alone, together):
            _same(a, r.output)
        if name == 'nanodet':
            assert all(len(a) >= 1 for a in alone)      # the video's people, found
        partial = batch.infer_batch(frames[:2])     # padded to 3: the same answers
        assert [r.batch for r in partial] == [2, 2]
        for a, r in zip(alone, partial):
            _same(a, r.output)
        with pytest.raises(ValueError, match='4 frames for a batch of 3'):
            batch.infer_batch(frames + frames[:1])
    finally:
        batch.close()
        model.close()


def test_the_verdict_is_measured_once_then_read_and_a_backend_that_cannot_batch_says_so(
        data_home, tmp_path):
    spec = load_models()['mobilenet_v2']

    class Manager:
        board = {'cpu': 'test'}
        cache = ProfileCache(tmp_path / 'profiles.json', log=lambda line: None)

    model = Model(spec, OpenVinoBackend(1), data_home / 'models')
    try:
        first = plan_batch(model, 2, 'on', Manager, rounds=2)
        assert first.size == 2 and first.min_frames == 2 and first.model is not None
        assert math.isfinite(first.single_ms) and math.isfinite(first.batch_ms)
        assert 'batches of up to 2' in first.why and '(cached)' not in first.why
        first.close()
        again = plan_batch(model, 2, 'auto', Manager)
        assert '(cached)' in again.why
        assert (again.single_ms, again.batch_ms) == (first.single_ms, first.batch_ms)
        # batch or not, as measured: a batch pays when a frame costs 10 % less
        assert (again.size == 2) == (first.batch_ms <= 0.9 * first.single_ms)
        # auto: no batch session held until the load calls for one
        assert again.model is None
        again.reopen()
        assert (again.model is not None) == (again.size == 2)
        again.close()
        assert plan_batch(model, 2, 'off', Manager).size == 1
        assert plan_batch(model, 1, 'on', Manager).size == 1     # one camera
    finally:
        model.close()
    model = Model(spec, OpenCvDnnBackend('cpu'), data_home / 'models')
    try:
        plan = plan_batch(model, 2, 'auto', Manager)
        assert plan.size == 1 and 'runs one frame at a time here' in plan.why
        with pytest.raises(BackendError, match='opencv-dnn/cpu runs one frame at a time'):
            plan_batch(model, 2, 'on', Manager)
    finally:
        model.close()

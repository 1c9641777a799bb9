# Copyright 2026 edge_infer contributors. Apache-2.0.
"""The public names only (docs/python_api.md): a model on a backend, a frame, ids, depth."""

import cv2
import edge_infer as ei
import numpy as np
import pytest


def test_the_public_names_run_a_frame_track_it_and_locate_it(tmp_path, data_home, footage):
    assert set(ei.__all__) >= {'open_model', 'Frame', 'make_tracker', 'locate', 'Intrinsics'}
    lines = []
    model = ei.open_model('nanodet', backend='onnxruntime/cpu/t1', cache_dir=tmp_path,
                          log=lines.append)
    assert model.backend_name == 'onnxruntime/cpu/t1'
    cap = cv2.VideoCapture(str(footage['video']))      # the pedestrian video
    ok, bgr = cap.read()
    cap.release()
    assert ok
    result = model.infer(ei.Frame(bgr, 'bgr'))
    dets = result.output
    assert len(dets) >= 2 and result.inference_ms > 0      # the video's people
    h, w = bgr.shape[:2]
    assert (dets.boxes[:, 2] <= w + 1).all() and (dets.boxes[:, 3] <= h + 1).all()
    tracker = ei.make_tracker('bytetrack', min_hits=1)
    tracker.update(dets.boxes, dets.scores, dets.class_ids, stamp_s=0.0)
    ids = tracker.update(dets.boxes, dets.scores, dets.class_ids, stamp_s=0.1)
    assert len(set(ids[ids >= 0].tolist())) == (ids >= 0).sum() >= 2
    K = ei.Intrinsics(fx=500.0, fy=500.0, cx=w / 2, cy=h / 2, width=w, height=h)
    where = ei.locate(np.full((h, w), 2.5, np.float32), dets.boxes, K)
    assert np.allclose(where.distance, 2.5)


def test_an_unknown_model_names_the_known_ones(tmp_path):
    with pytest.raises(ei.RegistryError, match='nanodet'):
        ei.open_model('no_such_model', cache_dir=tmp_path)
    with pytest.raises(AttributeError):
        ei.no_such_name

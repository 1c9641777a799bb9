# Copyright 2026 edge_infer contributors. Apache-2.0.
"""Oriented boxes (Ultralytics ``task: obb``): decoded, suppressed, mapped, drawn, published."""

import math

from edge_infer.core.obb import corners, RotatedDetections, YoloObbDecoder
from edge_infer.core.preprocess import Transform
from edge_infer.tools.models import user
import numpy as np
import pytest
from test_model_add import _single_output_model


def _same_rectangle(a, b, tol=0.6):
    """Whether two (cx, cy, w, h, theta) describe one rectangle (corner order aside)."""
    ca, cb = corners(np.array([a], np.float32))[0], corners(np.array([b], np.float32))[0]
    return all(np.min(np.linalg.norm(cb - p, axis=1)) < tol for p in ca)


def _output(rows, nc):
    """Return a [1, 4 + nc + 1, N] output of ``rows`` (cx, cy, w, h, class, score, theta)."""
    out = np.zeros((1, 4 + nc + 1, len(rows)), np.float32)
    for i, (cx, cy, w, h, c, s, t) in enumerate(rows):
        out[0, :4, i] = (cx, cy, w, h)
        out[0, 4 + c, i] = s
        out[0, 4 + nc, i] = t
    return out


def test_rotated_boxes_are_suppressed_per_class_and_mapped_to_the_source():
    nc = 2
    rows = [(100, 80, 60, 20, 0, 0.9, 0.5),
            (102, 81, 60, 20, 0, 0.8, 0.52),     # the same object: suppressed
            (100, 80, 60, 20, 1, 0.7, 0.5),      # the same place, another class: kept
            (30, 140, 40, 40, 0, 0.1, 0.0)]      # under the threshold
    dec = YoloObbDecoder(nc, score_threshold=0.25, nms_iou=0.5)
    # a letterbox: the source 400 x 320 scaled by 0.5, padded by 10 px at the top
    tf = Transform(0.5, 0.5, 0.0, 10.0, 400, 320)
    out = dec([_output(rows, nc)], tf)
    assert isinstance(out, RotatedDetections) and len(out) == 2
    assert out.class_ids.tolist() == [0, 1] and out.scores[0] == pytest.approx(0.9)
    # centre (100, 80) -> (200, 140), sides doubled, the angle kept
    assert _same_rectangle(out.rboxes[0], (200, 140, 120, 40, 0.5)), out.rboxes[0]
    quad = corners(out.rboxes[:1])[0]
    assert np.allclose(out.boxes[0], [*quad.min(0), *quad.max(0)], atol=0.6)


def test_a_rotated_box_past_the_edge_has_its_bounds_clipped():
    out = YoloObbDecoder(1)([_output([(5, 5, 40, 10, 0, 0.9, math.pi / 4)], 1)],
                            Transform(1.0, 1.0, 0.0, 0.0, 100, 100))
    x1, y1, x2, y2 = out.boxes[0].tolist()
    assert x1 == 0.0 and y1 == 0.0 and 0 < x2 < 30 and 0 < y2 < 30
    assert out.rboxes[0, 0] == pytest.approx(5, abs=0.5)    # the box itself is not cut


def test_the_decoder_names_the_layout_it_expected():
    from edge_infer.core.postprocess import OutputError
    with pytest.raises(OutputError, match=r'4 box values \+ 3 classes \+ 1 angle'):
        YoloObbDecoder(3)([np.zeros((1, 7, 10), np.float32)], Transform(1, 1, 0, 0, 10, 10))


def test_an_ultralytics_obb_export_is_recognised_from_its_metadata(tmp_path):
    f = _single_output_model(tmp_path / 'obb.onnx', [1, 20, 300], {
        'author': 'Ultralytics', 'task': 'obb', 'imgsz': '[64, 64]'})
    prop = user.propose(f)
    assert (prop.family, prop.task, len(prop.labels)) == ('yolov8_obb', 'detection', 15)
    assert prop.output['decoder'] == 'yolov8_obb' and prop.inputs['resize'] == 'letterbox'
    name, prop = user.add(f, registry=tmp_path / 'reg.yaml', models_dir=tmp_path / 'm')
    from edge_infer.core.registry import load_registry
    assert isinstance(load_registry(tmp_path / 'reg.yaml')['obb'].make_decoder(), YoloObbDecoder)
    bad = _single_output_model(tmp_path / 'bad.onnx', [1, 2, 3, 4], {'task': 'obb'})
    with pytest.raises(user.ModelError, match=r"task 'obb' .* expected one \[1, 4 \+ classes"):
        user.propose(bad)


def test_edge_infer_messages_carry_the_angle_and_the_drawing_outlines_it(tmp_path):
    from edge_infer.core.draw import draw_result
    from edge_infer.nodes.tasks import _detections
    f = _single_output_model(tmp_path / 'obb.onnx', [1, 7, 10], {'task': 'obb',
                                                                 'imgsz': '[64, 64]'})
    user.add(f, registry=tmp_path / 'reg.yaml', models_dir=tmp_path / 'm')
    from edge_infer.core.registry import load_registry
    spec = load_registry(tmp_path / 'reg.yaml')['obb']
    out = YoloObbDecoder(2)([_output([(50, 40, 60, 20, 1, 0.9, 0.5)], 2)],
                            Transform(1.0, 1.0, 0.0, 0.0, 100, 80))
    (msg,) = _detections(spec.label_map(), out)
    assert msg.class_id == 1 and msg.label == spec.label(1) and _same_rectangle(
        (msg.center_x, msg.center_y, msg.size_x, msg.size_y, msg.theta), (50, 40, 60, 20, 0.5))
    img = draw_result(np.zeros((80, 100, 3), np.uint8), spec, out)
    # the outline passes through a corner of the rotated box, not the bounds' corner
    cx, cy = corners(out.rboxes)[0][0]
    near = img[int(cy) - 2:int(cy) + 3, int(cx) - 2:int(cx) + 3]
    assert near.any() and not img[int(out.boxes[0, 1]) + 1, int(out.boxes[0, 0]) + 1].any()

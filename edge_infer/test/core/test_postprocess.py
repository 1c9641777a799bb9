# Copyright 2026 edge_infer contributors. Apache-2.0.
"""NanoDet decoding, class-aware NMS, top-k, and refusal of NaN outputs."""

from edge_infer.core.postprocess import NanoDetDecoder, nms, OutputError, TopKDecoder
from edge_infer.core.preprocess import Transform
import numpy as np
import pytest

IDENTITY = Transform(1.0, 1.0, 0.0, 0.0)


def test_nms_suppresses_overlaps_of_the_same_class_only():
    boxes = np.array([[0, 0, 10, 10], [1, 1, 11, 11], [0, 0, 10, 10], [50, 50, 60, 60]],
                     np.float32)
    scores = np.array([0.9, 0.8, 0.7, 0.6], np.float32)
    classes = np.array([0, 0, 1, 0])
    keep = nms(boxes, scores, classes, 0.5, 100)
    assert keep.tolist() == [0, 2, 3]        # box 1 overlaps box 0 (same class): gone
    assert nms(boxes, scores, classes, 0.5, 2).tolist() == [0, 2]


def _decoder(**kw):
    args = {'input_w': 32, 'input_h': 32, 'strides': [8, 16], 'bins': 4, 'num_classes': 3,
            'score_threshold': 0.3, 'nms_iou': 0.5, 'max_detections': 10}
    args.update(kw)
    return NanoDetDecoder(**args)


def _empty_outputs(dec):
    n8, n16 = 16, 4
    return [np.zeros((1, n8, 3), np.float32), np.zeros((1, n16, 3), np.float32),
            np.full((1, n8, 16), -20, np.float32), np.full((1, n16, 16), -20, np.float32)]


def test_nanodet_decode_places_a_box_around_the_cell_centre():
    dec = _decoder()
    outs = _empty_outputs(dec)
    # stride-8 grid is 4x4; cell (row 1, col 2) -> centre (20, 12)
    cell = 1 * 4 + 2
    outs[0][0, cell, 2] = 0.9
    # distance bins 0..3: put all mass on bin 1 (l, t) and bin 2 (r, b) -> 8 and 16 px
    reg = outs[2][0, cell].reshape(4, 4)
    reg[0, 1] = reg[1, 1] = 20
    reg[2, 2] = reg[3, 2] = 20
    det = dec(outs, Transform(2.0, 2.0, 0.0, 4.0))      # source = (model - pad) / 2
    assert len(det) == 1 and det.class_ids[0] == 2
    assert det.scores[0] == pytest.approx(0.9)
    expected = np.array([(20 - 8) / 2, (12 - 8 - 4) / 2, (20 + 16) / 2, (12 + 16 - 4) / 2])
    np.testing.assert_allclose(det.boxes[0], expected, atol=1e-3)


def test_nanodet_below_threshold_gives_nothing_and_bad_shapes_raise():
    dec = _decoder()
    assert len(dec(_empty_outputs(dec), IDENTITY)) == 0
    with pytest.raises(OutputError, match='expected 4 outputs'):
        dec(_empty_outputs(dec)[:3], IDENTITY)
    outs = _empty_outputs(dec)
    outs[0] = np.zeros((1, 15, 3), np.float32)
    with pytest.raises(OutputError, match='do not match'):
        dec(outs, IDENTITY)


def test_nan_outputs_are_refused():
    dec = _decoder()
    outs = _empty_outputs(dec)
    outs[0][0, 0, 0] = np.nan
    with pytest.raises(OutputError, match='NaN'):
        dec(outs, IDENTITY)
    with pytest.raises(OutputError, match='NaN'):
        TopKDecoder(3)([np.array([[1.0, np.inf, 0.0]], np.float32)])


def test_topk_softmax_orders_and_normalises():
    logits = np.array([[0.0, 3.0, 1.0, 2.0]], np.float32)
    res = TopKDecoder(3)([logits])
    assert res.class_ids.tolist() == [1, 3, 2]
    p = np.exp(logits[0]) / np.exp(logits[0]).sum()
    np.testing.assert_allclose(res.scores, p[[1, 3, 2]], rtol=1e-5)
    assert len(TopKDecoder(10)([logits])) == 4

# Copyright 2026 edge_infer contributors. Apache-2.0.
"""Detector layouts: real weights in each YOLO layout give NanoDet's detections back.

The test models are the trained NanoDet with ONNX nodes appended
(yolo_layouts.py): YOLOv8 ``[1, 84, N]`` and transposed, YOLOv5 with an
objectness channel, end-to-end with NMS inside, and one with Ultralytics'
input (RGB 0..1). On real frames (the bundled video and photos) each decoder
must reproduce the NanoDet decoder's detections: the same classes, scores
within 1e-4, boxes within 0.5 px.
"""

import dataclasses

from edge_infer import paths
from edge_infer.backends.libs.ort import OrtBackend
from edge_infer.backends.measure.profiling import calibration_frames
from edge_infer.core.detector_layouts import (BoxScoreDecoder, DetrDecoder, EndToEndDecoder,
                                              YoloxDecoder)
from edge_infer.core.model import Model
from edge_infer.core.postprocess import OutputError
from edge_infer.core.preprocess import Transform
from edge_infer.core.registry import load_registry
import numpy as np
import pytest
import yolo_layouts

IDENTITY = Transform(1.0, 1.0, 0.0, 0.0)


@pytest.fixture(scope='module')
def nanodet(data_home):
    spec = load_registry(paths.config_dir() / 'models.yaml')['nanodet']
    return spec, data_home / 'models'


@pytest.fixture(scope='module')
def frames():
    return calibration_frames(6)[0]


@pytest.fixture(scope='module')
def reference(nanodet, frames):
    spec, models = nanodet
    model = Model(spec, OrtBackend(intra_op_threads=1), models, verify_checksum=False)
    out = [model.infer(f).output for f in frames]
    model.close()
    assert sum(len(d) for d in out) >= 10      # people and objects on the real frames
    return out


def _spec(spec, tmp, name, decoder, **input_changes):
    args = {k: spec.decoder_args[k] for k in ('score_threshold', 'nms_iou', 'max_detections')}
    inp = dataclasses.replace(spec.input_spec, **input_changes)
    return dataclasses.replace(spec, name=name, file=f'{name}.onnx', decoder=decoder,
                               decoder_args=args, input_spec=inp, sha256=None)


def _same(ref, got):
    """Assert the same detections: classes equal, scores within 1e-4, boxes within 0.5 px."""
    assert len(got) == len(ref), (len(got), len(ref))
    used = set()
    for box, score, cid in zip(ref.boxes, ref.scores, ref.class_ids):
        match = [j for j in range(len(got)) if j not in used and got.class_ids[j] == cid and
                 abs(got.scores[j] - score) <= 1e-4 and
                 np.abs(got.boxes[j] - box).max() <= 0.5]
        assert match, (cid, score, box, got)
        used.add(match[0])


@pytest.mark.parametrize('layout', ['yolov8', 'yolov8_transposed', 'yolov5', 'end2end',
                                    'yolov8_ultralytics_input'])
def test_each_layout_gives_nanodets_detections_back_on_real_frames(
        layout, nanodet, frames, reference, tmp_path):
    spec, models = nanodet
    src = models / spec.file
    dst = tmp_path / f'{layout}.onnx'
    changes = {}
    if layout == 'yolov8':
        yolo_layouts.yolov8(src, dst)
    elif layout == 'yolov8_transposed':
        yolo_layouts.yolov8(src, dst, transposed=True)
    elif layout == 'yolov5':
        yolo_layouts.yolov5(src, dst)
    elif layout == 'end2end':
        yolo_layouts.end2end(src, dst)
    else:
        yolo_layouts.yolov8(src, dst, ultralytics_input=True, labels=spec.labels)
        # as Ultralytics models take it: RGB, 0..1 (the pad stays NanoDet's 0 here,
        # so that the letterbox border is the same pixels as the reference's)
        changes = {'color': 'rgb', 'mean': (0.0, 0.0, 0.0), 'std': (255.0, 255.0, 255.0)}
    decoder = 'yolov8' if layout.startswith('yolov8') else layout
    test_spec = _spec(spec, tmp_path, layout, decoder, **changes)
    model = Model(test_spec, OrtBackend(intra_op_threads=1), tmp_path, verify_checksum=False)
    try:
        for frame, ref in zip(frames, reference):
            _same(ref, model.infer(frame).output)
    finally:
        model.close()


def _encode(boxes_xyxy, class_ids, scores, nc=3, n=20, objectness=None):
    """Return [1, 4+nc, n] rows: the given boxes first, the rest empty (score 0)."""
    rows = np.zeros((n, 4 + nc), np.float32)
    for i, (b, c, s) in enumerate(zip(boxes_xyxy, class_ids, scores)):
        rows[i, :4] = [(b[0] + b[2]) / 2, (b[1] + b[3]) / 2, b[2] - b[0], b[3] - b[1]]
        rows[i, 4 + c] = s
    if objectness is not None:
        rows = np.concatenate([rows[:, :4], objectness[:, None], rows[:, 4:]], 1)
    return rows


def test_yolov8_decodes_known_boxes_in_both_layouts_to_source_pixels():
    boxes = np.array([[10, 20, 110, 220], [300, 40, 360, 90]], np.float32)
    rows = _encode(boxes, [2, 0], [0.9, 0.6])
    dec = BoxScoreDecoder(3, score_threshold=0.5, nms_iou=0.5)
    tf = Transform(0.5, 0.5, 8.0, 0.0)      # letterbox: scale 0.5, 8 px pad on the left
    for out in (rows.T[None], rows[None]):
        d = dec([out], tf)
        assert list(d.class_ids) == [2, 0] and np.allclose(d.scores, [0.9, 0.6])
        assert np.allclose(d.boxes, [[4, 40, 204, 440], [584, 80, 704, 180]])


def test_class_aware_nms_keeps_overlapping_boxes_of_two_classes_agnostic_does_not():
    boxes = np.array([[0, 0, 100, 100], [2, 2, 102, 102]], np.float32)
    out = _encode(boxes, [0, 1], [0.9, 0.8]).T[None]
    aware = BoxScoreDecoder(3, 0.5, 0.5)([out], IDENTITY)
    agnostic = BoxScoreDecoder(3, 0.5, 0.5, agnostic=True)([out], IDENTITY)
    assert list(aware.class_ids) == [0, 1] and list(agnostic.class_ids) == [0]


def test_yolov5_score_is_objectness_times_class():
    boxes = np.array([[0, 0, 50, 50], [100, 100, 150, 150]], np.float32)
    obj = np.zeros(20, np.float32)
    obj[:2] = [0.5, 0.9]
    rows = _encode(boxes, [1, 2], [0.9, 0.5], objectness=obj)
    d = BoxScoreDecoder(3, 0.3, 0.5, objectness=True)([rows[None]], IDENTITY)
    assert list(d.class_ids) == [1, 2] and np.allclose(d.scores, [0.45, 0.45])
    # 0.9 x 0.5: a decoder reading the class score alone would keep the first at 0.9
    strict = BoxScoreDecoder(3, 0.5, 0.5, objectness=True)([rows[None]], IDENTITY)
    assert len(strict) == 0


def test_end2end_rows_thresholded_capped_and_checked():
    rows = np.zeros((1, 300, 6), np.float32)        # padded, as YOLOv10 exports
    rows[0, 0] = [10, 10, 50, 50, 0.8, 2]
    rows[0, 1] = [60, 10, 90, 50, 0.3, 0]
    rows[0, 2] = [12, 12, 52, 52, 0.7, 1]
    d = EndToEndDecoder(3, score_threshold=0.25)([rows], IDENTITY)
    assert list(d.class_ids) == [2, 1, 0] and np.allclose(d.scores, [0.8, 0.7, 0.3])
    assert len(EndToEndDecoder(3, 0.25, max_detections=1)([rows], IDENTITY)) == 1
    # our NMS on top, class-agnostic: the overlapping second-best goes
    d = EndToEndDecoder(3, 0.25, nms_iou=0.5, agnostic=True)([rows], IDENTITY)
    assert list(d.class_ids) == [2, 0]
    rows[0, 0, 5] = 7
    with pytest.raises(OutputError, match='class ids'):
        EndToEndDecoder(3, 0.25)([rows], IDENTITY)


def test_a_layout_that_does_not_fit_says_the_shape_and_what_it_expected():
    with pytest.raises(OutputError, match=r'\[1, 90, 20\].*no side of 84'):
        BoxScoreDecoder(80, 0.5, 0.5)([np.zeros((1, 90, 20), np.float32)], IDENTITY)
    with pytest.raises(OutputError, match=r'\[1, 10, 7\]'):
        EndToEndDecoder(80, 0.5)([np.zeros((1, 10, 7), np.float32)], IDENTITY)
    bad = np.zeros((1, 84, 20), np.float32)
    bad[0, 5, 3] = np.nan
    with pytest.raises(OutputError, match='NaN'):
        BoxScoreDecoder(80, 0.5, 0.5)([bad], IDENTITY)


def test_the_registry_accepts_the_new_decoders_and_refuses_a_misfit(tmp_path):
    labels = tmp_path / 'labels.txt'
    labels.write_text('a\nb\nc\n')
    entry = ('  m_{d}:\n    file: m.onnx\n    task: {task}\n    input: {{width: 64, height: 64}}\n'
             '    output: {{decoder: {d}, score_threshold: 0.3, nms_iou: 0.5, '
             'agnostic: true}}\n    labels: labels.txt\n')
    ok = ''.join(entry.format(d=d, task='detection') for d in ('yolov8', 'yolov5', 'end2end'))
    (tmp_path / 'ok.yaml').write_text('models:\n' + ok)
    reg = load_registry(tmp_path / 'ok.yaml')
    assert isinstance(reg['m_yolov5'].make_decoder(), BoxScoreDecoder)
    assert reg['m_yolov5'].make_decoder().objectness and reg['m_yolov8'].make_decoder().agnostic
    assert isinstance(reg['m_end2end'].make_decoder(), EndToEndDecoder)
    bad = entry.format(d='yolov8', task='classification')
    (tmp_path / 'bad.yaml').write_text('models:\n' + bad)
    from edge_infer.core.registry import RegistryError
    with pytest.raises(RegistryError, match="decoder 'yolov8' does not fit task"):
        load_registry(tmp_path / 'bad.yaml')


def test_yolox_grid_offsets_and_log_sizes_decode_to_known_boxes():
    """Boxes encoded as YOLOX's head writes them (offset from the cell corner, log size)."""
    w = h = 64                       # grids 8x8, 4x4, 2x2 for strides 8, 16, 32 -> 84 rows
    nc = 3
    rows = np.zeros((84, 5 + nc), np.float32)
    want = []
    for row, stride, gx, gy, box, cid in ((9, 8, 1, 1, (4, 6, 30, 20), 2),   # stride 8 cell (1,1)
                                          (64 + 5, 16, 1, 1, (10, 12, 50, 60), 0)):
        cx, cy = (box[0] + box[2]) / 2, (box[1] + box[3]) / 2
        rows[row, :4] = [cx / stride - gx, cy / stride - gy,
                         np.log((box[2] - box[0]) / stride), np.log((box[3] - box[1]) / stride)]
        rows[row, 4], rows[row, 5 + cid] = 0.9, 0.8
        want.append((box, cid))
    d = YoloxDecoder(w, h, nc, score_threshold=0.5, nms_iou=0.5)([rows[None]], IDENTITY)
    got = sorted(zip(d.boxes.tolist(), d.class_ids.tolist()), key=lambda b: b[1])
    assert [c for _, c in got] == [0, 2] and np.allclose(d.scores, 0.72)
    for (box, cid), (gb, gc) in zip(sorted(want, key=lambda b: b[1]), got):
        assert gc == cid and np.allclose(gb, box, atol=1e-4)
    with pytest.raises(OutputError, match='84 cells'):
        YoloxDecoder(w, h, nc, 0.5, 0.5)([np.zeros((1, 80, 8), np.float32)], IDENTITY)


def test_rtdetr_normalised_queries_decode_to_source_pixels_without_nms():
    nc, w, h = 4, 640, 480
    q = np.zeros((1, 300, 4 + nc), np.float32)
    q[0, 7, :4] = [0.5, 0.5, 0.25, 0.5]         # centre of the input, 160 x 240
    q[0, 7, 4 + 3] = 0.9
    q[0, 8, :4] = [0.5, 0.5, 0.25, 0.5]         # the same box, another class: both kept
    q[0, 8, 4 + 1] = 0.6
    tf = Transform(0.5, 0.5, 0.0, 0.0)          # stretched from a 1280 x 960 frame
    d = DetrDecoder(w, h, nc, score_threshold=0.5)([q], tf)
    assert list(d.class_ids) == [3, 1] and np.allclose(d.scores, [0.9, 0.6])
    assert np.allclose(d.boxes[0], [480, 240, 800, 720])
    with pytest.raises(OutputError, match='no side of 8'):
        DetrDecoder(w, h, nc, 0.5)([np.zeros((1, 300, 85), np.float32)], IDENTITY)


def test_tf_style_num_boxes_scores_classes_decode_in_any_order():
    """Four outputs as TensorFlow Object Detection API exports write them: y1 x1 y2 x2 in 0..1."""
    boxes = np.zeros((1, 10, 4), np.float32)
    boxes[0, 0] = [0.25, 0.1, 0.75, 0.5]        # y1 x1 y2 x2 of a 300 x 200 input
    boxes[0, 1] = [0.0, 0.0, 0.5, 0.5]
    boxes[0, 2] = [0.1, 0.1, 0.2, 0.2]          # beyond num_detections: not read
    scores = np.zeros((1, 10), np.float32)
    scores[0, :3] = [0.9, 0.4, 0.95]
    classes = np.zeros((1, 10), np.float32)
    classes[0, :3] = [1, 3, 2]                  # 1-based, as TF label maps count
    num = np.array([2.0], np.float32)
    dec = EndToEndDecoder(3, score_threshold=0.3, input_w=300, input_h=200)
    for outs in ([num, boxes, scores, classes], [boxes, classes, scores, num]):
        d = dec(outs, IDENTITY)
        assert list(d.class_ids) == [0, 2] and np.allclose(d.scores, [0.9, 0.4])
        assert np.allclose(d.boxes[0], [30, 50, 150, 150])
    with pytest.raises(OutputError, match=r'four TF-style outputs.*\[1, 10, 5\]'):
        dec([num, np.zeros((1, 10, 5), np.float32), scores, classes], IDENTITY)

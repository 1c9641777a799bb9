# Copyright 2026 edge_infer contributors. Apache-2.0.
"""Pose, segmentation, CenterNet and SSD decoders: known objects encoded as each head writes them.

Each test places boxes / keypoints / masks in source pixels, encodes them in
the model's output layout through a real letterbox, stretch or centre-crop
:class:`Transform` (from :class:`Preprocessor`), decodes, and checks the
source-pixel result (boxes and keypoints within 0.5 px, masks IoU > 0.95).
"""

import cv2
from edge_infer.core.centernet_ssd import CenterNetDecoder, SsdDecoder
from edge_infer.core.draw import draw_keypoints, draw_mask
from edge_infer.core.image import Frame
from edge_infer.core.pose import COCO17, COCO17_SKELETON, MoveNetDecoder, YoloPoseDecoder
from edge_infer.core.postprocess import InstanceMasks, OutputError, Poses, SemanticMask
from edge_infer.core.preprocess import InputSpec, Preprocessor, Transform
from edge_infer.core.registry import load_registry, RegistryError
from edge_infer.core.segmentation import SemanticDecoder, YoloSegDecoder
import numpy as np
import pytest
import yaml

SRC_W, SRC_H = 320, 200


def _tf(resize='letterbox', w=128, h=128, src_w=SRC_W, src_h=SRC_H) -> Transform:
    spec = InputSpec(width=w, height=h, resize=resize, crop_fraction=1.0)
    return Preprocessor(spec)(Frame(np.zeros((src_h, src_w, 3), np.uint8), 'rgb'))[1]


def _to_input(xy, tf: Transform) -> np.ndarray:
    """Source pixels -> model-input pixels (the inverse of the Transform)."""
    xy = np.asarray(xy, np.float32)
    return np.stack([xy[..., 0] * tf.scale_x + tf.pad_x, xy[..., 1] * tf.scale_y + tf.pad_y], -1)


def _iou(a: np.ndarray, b: np.ndarray) -> float:
    return float((a & b).sum() / max(1, (a | b).sum()))


def _circle(cx, cy, r, w=SRC_W, h=SRC_H) -> np.ndarray:
    ys, xs = np.mgrid[0:h, 0:w] + 0.5
    return np.hypot(xs - cx, ys - cy) < r


def _sdf_map(tf: Transform, circles, map_w, map_h, input_w, input_h) -> np.ndarray:
    """Return per circle a map over the model input: source-pixel distance inside its edge."""
    ys, xs = np.mgrid[0:map_h, 0:map_w] + 0.5
    u, v = xs * input_w / map_w, ys * input_h / map_h
    src = tf.points_to_source(np.stack([u, v], -1))
    return np.stack([r - np.hypot(src[..., 0] - cx, src[..., 1] - cy)
                     for cx, cy, r in circles]).astype(np.float32)


# --- Transform -------------------------------------------------------------------------------

@pytest.mark.parametrize('resize', ['letterbox', 'stretch', 'center_crop'])
def test_points_and_masks_map_back_to_source_pixels_in_each_resize_mode(resize):
    tf = _tf(resize, 96, 64)
    assert (tf.src_w, tf.src_h) == (SRC_W, SRC_H)
    pts = np.array([[[100.0, 50.0], [200.5, 150.25]]], np.float32)
    np.testing.assert_allclose(tf.points_to_source(_to_input(pts, tf)), pts, atol=1e-3)
    truth = _circle(150, 90, 60) | (np.mgrid[0:SRC_H, 0:SRC_W][1] < 40)
    # the mask as the model sees it: the same preprocessing as an image
    seen = Preprocessor(InputSpec(width=96, height=64, resize=resize, crop_fraction=1.0))(
        Frame(np.repeat(truth[..., None] * 255, 3, 2).astype(np.uint8), 'rgb'))[0][0, 0]
    x0, y0, x1, y1 = tf.visible(96, 64)
    if resize == 'center_crop':
        assert (x0, x1, y0, y1) == (10, 310, 0, 200)     # the 300 x 200 centre crop
        truth[:, :x0] = truth[:, x1:] = False
    else:
        assert (x0, y0, x1, y1) == (0, 0, SRC_W, SRC_H)
    back = tf.mask_to_source(seen / 255.0)
    assert back.shape == (SRC_H, SRC_W) and back.dtype == np.float32
    assert _iou(back > 0.5, truth) > 0.95
    if resize == 'center_crop':
        assert not back[:, :x0].any() and not back[:, x1:].any()
    # a quarter-resolution map covering the same input, and uint8 ids (nearest)
    small = cv2.resize(seen / 255.0, (24, 16), interpolation=cv2.INTER_AREA)
    assert _iou(tf.mask_to_source(small, input_size=(96, 64)) > 0.5, truth) > 0.9
    ids = tf.mask_to_source((seen > 127).astype(np.uint8) * 7, cv2.INTER_NEAREST)
    assert ids.dtype == np.uint8 and set(np.unique(ids)) <= {0, 7}
    assert _iou(ids == 7, truth) > 0.95


def test_a_transform_made_by_hand_keeps_working_but_has_no_source_size():
    tf = Transform(2.0, 2.0, 0.0, 4.0)
    assert (tf.src_w, tf.src_h) == (0, 0)
    np.testing.assert_allclose(tf.points_to_source([[10, 8]]), [[5, 2]])
    with pytest.raises(ValueError, match='source size'):
        tf.mask_to_source(np.zeros((4, 4), np.float32))


# --- pose ------------------------------------------------------------------------------------

def _people():
    """Two people: box (source px), score, 17 keypoints (x, y, visibility)."""
    rng = np.random.default_rng(3)
    people = []
    for box, score in (((40, 30, 120, 190), 0.9), ((200, 20, 260, 150), 0.7)):
        kps = np.zeros((17, 3), np.float32)
        kps[:, 0] = rng.uniform(box[0], box[2], 17)
        kps[:, 1] = rng.uniform(box[1], box[3], 17)
        kps[:, 2] = rng.uniform(0.1, 1.0, 17)
        people.append((np.array(box, np.float32), score, kps))
    return people


def _yolo_pose_rows(people, tf, n=40, dims=3):
    rows = np.zeros((n, 5 + dims * 17), np.float32)
    for i, (box, score, kps) in enumerate(people + [(people[0][0] + 2, 0.5, people[0][2])]):
        b = _to_input(box.reshape(2, 2), tf).ravel()      # the last: a duplicate, lower score
        rows[i, :5] = [(b[0] + b[2]) / 2, (b[1] + b[3]) / 2, b[2] - b[0], b[3] - b[1], score]
        k = np.concatenate([_to_input(kps[:, :2], tf), kps[:, 2:]], 1)[:, :dims]
        rows[i, 5:] = k.ravel()
    rows[5, :5] = [30, 30, 10, 10, 0.1]                   # under the threshold
    return rows


@pytest.mark.parametrize('resize', ['letterbox', 'stretch'])
def test_yolov8_pose_decodes_boxes_and_keypoints_in_both_layouts(resize):
    tf, people = _tf(resize, 160, 128), _people()
    rows = _yolo_pose_rows(people, tf)
    dec = YoloPoseDecoder(17, score_threshold=0.25, nms_iou=0.5)
    for out in (rows.T[None], rows[None]):
        poses = dec([out], tf)
        assert isinstance(poses, Poses) and len(poses) == 2
        assert list(poses.class_ids) == [0, 0] and np.allclose(poses.scores, [0.9, 0.7])
        assert poses.keypoints.shape == (2, 17, 3)
        for i, (box, _, kps) in enumerate(people):
            np.testing.assert_allclose(poses.boxes[i], box, atol=0.5)
            np.testing.assert_allclose(poses.keypoints[i], kps, atol=0.5)
    # kpt_shape [17, 2]: no visibility, keypoint scores 1
    two = YoloPoseDecoder(17, 0.25, 0.5, keypoint_dims=2)([_yolo_pose_rows(people, tf, dims=2)
                                                          [None]], tf)
    np.testing.assert_allclose(two.keypoints[1, :, :2], people[1][2][:, :2], atol=0.5)
    assert np.all(two.keypoints[..., 2] == 1)
    with pytest.raises(OutputError, match=r'yolov8_pose.*\[1, 40, 50\].*no side of 56'):
        dec([np.zeros((1, 40, 50), np.float32)], tf)
    rows[0, 7] = np.inf
    with pytest.raises(OutputError, match='NaN or Inf'):
        dec([rows[None]], tf)


def test_movenet_single_pose_box_from_confident_keypoints_score_is_their_mean():
    tf = _tf('letterbox', 192, 192)
    _, _, kps = _people()[0]
    kps[:3, 2] = 0.05                       # three unsure keypoints: outside the box
    kps[:3, :2] = [[5, 5], [300, 190], [310, 10]]
    inp = _to_input(kps[:, :2], tf)
    out = np.zeros((1, 1, 17, 3), np.float32)
    out[0, 0, :, 0], out[0, 0, :, 1], out[0, 0, :, 2] = inp[:, 1] / 192, inp[:, 0] / 192, kps[:, 2]
    dec = MoveNetDecoder(192, 192, score_threshold=0.2, keypoint_threshold=0.3)
    poses = dec([out], tf)
    assert len(poses) == 1 and poses.scores[0] == pytest.approx(kps[:, 2].mean())
    np.testing.assert_allclose(poses.keypoints[0], kps, atol=0.5)
    sure = kps[kps[:, 2] > 0.3, :2]
    np.testing.assert_allclose(poses.boxes[0], [*sure.min(0), *sure.max(0)], atol=0.5)
    assert len(MoveNetDecoder(192, 192, score_threshold=0.9)([out], tf)) == 0
    with pytest.raises(OutputError, match=r'movenet.*\[1, 1, 17, 3\].*\[1, 1, 16, 3\]'):
        dec([out[:, :, 1:]], tf)


@pytest.mark.parametrize('resize', ['letterbox', 'stretch'])
def test_movenet_multi_pose_rows_decode_above_the_threshold_best_first(resize):
    tf, people = _tf(resize, 256, 160), _people()
    out = np.zeros((1, 6, 56), np.float32)
    size = np.array([256, 160], np.float32)
    for row, (box, score, kps) in zip((3, 1), people):
        k = _to_input(kps[:, :2], tf) / size
        out[0, row, :51] = np.stack([k[:, 1], k[:, 0], kps[:, 2]], 1).ravel()
        b = _to_input(box.reshape(2, 2), tf) / size
        out[0, row, 51:] = [b[0, 1], b[0, 0], b[1, 1], b[1, 0], score]
    out[0, 4, 55] = 0.1
    poses = MoveNetDecoder(256, 160, score_threshold=0.2)([out], tf)
    assert len(poses) == 2 and np.allclose(poses.scores, [0.9, 0.7])
    for i, (box, _, kps) in enumerate(people):
        np.testing.assert_allclose(poses.boxes[i], box, atol=0.5)
        np.testing.assert_allclose(poses.keypoints[i], kps, atol=0.5)
    assert len(MoveNetDecoder(256, 160, max_detections=1)([out], tf)) == 1


# --- segmentation ----------------------------------------------------------------------------

def _classes_truth():
    ids = np.zeros((SRC_H, SRC_W), np.uint8)
    ids[_circle(100, 100, 60)] = 1
    ids[40:160, 200:300] = 2
    return ids


@pytest.mark.parametrize('resize', ['letterbox', 'stretch'])
def test_semantic_argmax_in_both_layouts_and_at_a_lower_resolution(resize):
    tf, truth = _tf(resize, 128, 96), _classes_truth()
    dec = SemanticDecoder(3, 128, 96)
    for size in ((128, 96), (64, 48)):          # at the input size, and at half of it
        onehot = np.stack([truth == c for c in range(3)], -1).astype(np.uint8) * 255
        seen = Preprocessor(InputSpec(width=128, height=96, resize=resize, layout='NHWC'))(
            Frame(onehot, 'rgb'))[0][0]
        seen = cv2.resize(seen, size, interpolation=cv2.INTER_AREA)
        for out in (seen[None], np.transpose(seen, (2, 0, 1))[None]):
            got = dec([out], tf)
            assert isinstance(got, SemanticMask) and got.mask.shape == (SRC_H, SRC_W)
            for c in (1, 2):
                assert _iou(got.mask == c, truth == c) > (0.95 if size[0] == 128 else 0.9)


@pytest.mark.parametrize('resize', ['letterbox', 'stretch'])
def test_semantic_single_foreground_channel_logits_probabilities_and_ids(resize):
    tf = _tf(resize, 128, 128)
    truth = _circle(160, 100, 70)
    sdf = _sdf_map(tf, [(160, 100, 70)], 128, 128, 128, 128)[0]
    logits = sdf / 4.0                               # logit 0 on the edge
    probs = 1 / (1 + np.exp(-logits))
    for dec, plane in ((SemanticDecoder(2, 128, 128, activation='sigmoid'), logits),
                       (SemanticDecoder(2, 128, 128), probs)):
        for out in (plane[None, None], plane[None, :, :, None], plane[None]):
            mask = dec([out], tf).mask
            assert set(np.unique(mask)) == {0, 1} and _iou(mask == 1, truth) > 0.95
    ids = (sdf > 0).astype(np.int64)[None]           # argmax inside the model
    assert _iou(SemanticDecoder(2, 128, 128)([ids], tf).mask == 1, truth) > 0.95
    with pytest.raises(OutputError, match=r'class ids 0\.\.5'):
        SemanticDecoder(2, 128, 128)([ids * 5], tf)


def test_semantic_shapes_that_do_not_fit_say_what_was_expected():
    tf = _tf()
    with pytest.raises(OutputError, match=r'\[1, 3, H, W\].*got shape \[1, 5, 8, 8\]'):
        SemanticDecoder(3, 128, 128)([np.zeros((1, 5, 8, 8), np.float32)], tf)
    with pytest.raises(OutputError, match='got shape'):       # one channel needs 2 labels
        SemanticDecoder(3, 128, 128)([np.zeros((1, 1, 8, 8), np.float32)], tf)
    bad = np.zeros((1, 3, 8, 8), np.float32)
    bad[0, 1, 2, 2] = np.nan
    with pytest.raises(OutputError, match='NaN'):
        SemanticDecoder(3, 128, 128)([bad], tf)


def _seg_outputs(tf, circles, classes, scores, nc=2, m=32, n=30, size=(192, 160)):
    """YOLOv8-seg outputs: rows [4 + nc + m, n] and prototypes [1, m, H/4, W/4]."""
    w, h = size
    protos = np.zeros((m, h // 4, w // 4), np.float32)
    protos[:len(circles)] = _sdf_map(tf, circles, w // 4, h // 4, w, h) / 8.0
    rows = np.zeros((n, 4 + nc + m), np.float32)
    for i, ((cx, cy, r), c, s) in enumerate(zip(circles, classes, scores)):
        b = _to_input(np.array([[cx - r, cy - r], [cx + r, cy + r]]), tf).ravel()
        rows[i, :4] = [(b[0] + b[2]) / 2, (b[1] + b[3]) / 2, b[2] - b[0], b[3] - b[1]]
        rows[i, 4 + c] = s
        rows[i, 4 + nc + i] = 1.0                    # its own prototype
    return rows, protos


@pytest.mark.parametrize('resize', ['letterbox', 'stretch'])
def test_yolov8_seg_masks_are_the_known_shapes_at_the_source_size(resize):
    tf = _tf(resize, 192, 160)          # prototypes 40 x 48 (not 32: M's side)
    circles = [(90, 100, 60), (150, 100, 40), (260, 60, 35)]   # the first two overlap
    rows, protos = _seg_outputs(tf, circles, [1, 0, 1], [0.9, 0.8, 0.7])
    dec = YoloSegDecoder(2, 192, 160, score_threshold=0.25, nms_iou=0.7)
    for outs in ([rows.T[None], protos[None]], [np.transpose(protos, (1, 2, 0))[None],
                                                rows[None]]):
        got = dec(outs, tf)
        assert isinstance(got, InstanceMasks) and got.mask.shape == (SRC_H, SRC_W)
        assert list(got.class_ids) == [1, 0, 1] and np.allclose(got.scores, [0.9, 0.8, 0.7])
        for i, (cx, cy, r) in enumerate(circles):
            np.testing.assert_allclose(got.boxes[i], [cx - r, cy - r, cx + r, cy + r], atol=0.5)
        assert _iou(got.mask == 1, _circle(*circles[0])) > 0.95     # the best wins overlaps
        assert _iou(got.mask == 2, _circle(*circles[1]) & ~_circle(*circles[0])) > 0.95
        assert _iou(got.mask == 3, _circle(*circles[2])) > 0.95
    with pytest.raises(OutputError, match=r'yolov8_seg.*got shapes \[\[1, 38, 30\]\]'):
        dec([rows.T[None]], tf)
    with pytest.raises(OutputError, match=r'got shapes \[\[1, 37, 30\], \[1, 32, 40, 48\]\]'):
        dec([rows.T[None, 1:], protos[None]], tf)


# --- CenterNet and SSD -----------------------------------------------------------------------

BOXES = np.array([[20, 30, 100, 150], [180, 60, 300, 140]], np.float32)


def _heatmap(tf, boxes, classes, scores, grid=(32, 32), nc=3, stride=4, offset=0.0):
    """Return (heatmap H x W x nc with Gaussian peaks, cells, box corners in input px)."""
    h, w = grid
    heat = np.zeros((h, w, nc), np.float32)
    ys, xs = np.mgrid[0:h, 0:w]
    cells, corners = [], []
    for box, c, s in zip(boxes, classes, scores):
        b = _to_input(box.reshape(2, 2), tf).ravel()
        cx, cy = int((b[0] + b[2]) / 2 / stride), int((b[1] + b[3]) / 2 / stride)
        blob = s * np.exp(-((xs - cx) ** 2 + (ys - cy) ** 2) / 4.0)
        heat[..., c] = np.maximum(heat[..., c], blob)
        cells.append((cx, cy))
        corners.append(b)
    return heat, cells, corners


@pytest.mark.parametrize('resize', ['letterbox', 'stretch'])
def test_centernet_ltrb_peaks_decode_to_known_boxes(resize):
    tf = _tf(resize, 128, 128)
    heat, cells, corners = _heatmap(tf, BOXES, [2, 0], [0.9, 0.6])
    for units, offset in (('cells', 0.0), ('pixels', 0.5)):
        reg = np.zeros((32, 32, 4), np.float32)
        for (cx, cy), b in zip(cells, corners):
            px, py = (cx + offset) * 4, (cy + offset) * 4
            d = np.array([px - b[0], py - b[1], b[2] - px, b[3] - py])
            reg[cy, cx] = d / 4 if units == 'cells' else d
        dec = CenterNetDecoder(128, 128, 3, score_threshold=0.3, box_units=units,
                               cell_offset=offset)
        for outs in ([heat[None], reg[None]],
                     [np.transpose(reg, (2, 0, 1))[None], np.transpose(heat, (2, 0, 1))[None]]):
            det = dec(outs, tf)
            assert list(det.class_ids) == [2, 0] and np.allclose(det.scores, [0.9, 0.6])
            np.testing.assert_allclose(det.boxes, BOXES, atol=0.5)
    assert len(CenterNetDecoder(128, 128, 3, max_detections=1)([heat[None], reg[None]], tf)) == 1
    logits = np.log(np.clip(heat, 1e-6, 1 - 1e-6) / (1 - np.clip(heat, 1e-6, 1 - 1e-6)))
    det = CenterNetDecoder(128, 128, 3, 0.3, box_units='pixels', cell_offset=0.5,
                           activation='sigmoid')([logits[None], reg[None]], tf)
    assert np.allclose(det.scores, [0.9, 0.6], atol=1e-5)


def test_centernet_wh_offset_classic_encoding():
    tf = _tf('letterbox', 128, 128)
    heat, cells, corners = _heatmap(tf, BOXES, [1, 1], [0.8, 0.7])
    wh, off = np.zeros((1, 2, 32, 32), np.float32), np.zeros((1, 2, 32, 32), np.float32)
    for (cx, cy), b in zip(cells, corners):
        off[0, :, cy, cx] = [(b[0] + b[2]) / 8 - cx, (b[1] + b[3]) / 8 - cy]
        wh[0, :, cy, cx] = [(b[2] - b[0]) / 4, (b[3] - b[1]) / 4]
    dec = CenterNetDecoder(128, 128, 3, 0.3, box_encoding='wh_offset', nms_iou=0.5)
    det = dec([np.transpose(heat, (2, 0, 1))[None], wh, off], tf)
    assert list(det.class_ids) == [1, 1]
    np.testing.assert_allclose(det.boxes, BOXES, atol=0.5)
    with pytest.raises(OutputError, match=r'centernet.*heatmap \[1, H, W, 3\].*got shapes'):
        dec([heat[None], wh[:, :, :16]], tf)
    bad = heat.copy()
    bad[0, 0, 0] = np.nan
    with pytest.raises(OutputError, match='NaN'):
        dec([bad[None], wh, off], tf)


@pytest.mark.parametrize('fmt', ['xyxy', 'yxyx', 'cxcywh'])
def test_ssd_boxes_and_scores_with_a_background_column(fmt):
    tf = _tf('stretch', 300, 300)
    n = 50
    b = np.stack([_to_input(box.reshape(2, 2), tf).ravel() / 300 for box in BOXES])
    enc = {'xyxy': b, 'yxyx': b[:, [1, 0, 3, 2]],
           'cxcywh': np.concatenate([(b[:, :2] + b[:, 2:]) / 2, b[:, 2:] - b[:, :2]], 1)}[fmt]
    boxes = np.zeros((1, n, 4), np.float32)
    boxes[0, :2] = enc
    logits = np.zeros((1, n, 4), np.float32)       # background + 3 classes
    logits[0, :, 0] = 5.0
    logits[0, 0, 3], logits[0, 1, 1] = 8.0, 7.0
    dec = SsdDecoder(300, 300, 3, score_threshold=0.5, box_format=fmt, background_class=True,
                     activation='softmax')
    det = dec([boxes, logits], tf)          # 4 columns both: the boxes are the first
    assert list(det.class_ids) == [2, 0]
    np.testing.assert_allclose(det.boxes, BOXES, atol=0.5)
    pixels = SsdDecoder(300, 300, 3, 0.5, box_format=fmt, normalized=False,
                        background_class=True, activation='softmax')
    np.testing.assert_allclose(pixels([boxes * 300, logits], tf).boxes, BOXES, atol=0.5)
    probs = np.zeros((1, n, 3), np.float32)
    probs[0, 0, 2] = 0.9
    det = SsdDecoder(300, 300, 3, 0.5, box_format=fmt)([probs, boxes], tf)   # by shape
    assert list(det.class_ids) == [2] and np.allclose(det.scores, [0.9])
    with pytest.raises(OutputError, match=r'ssd.*scores \[1, N, 3\].*got shapes'):
        SsdDecoder(300, 300, 3)([boxes, logits[:, :, :2]], tf)


# --- drawing ---------------------------------------------------------------------------------

def test_draw_mask_changes_the_masked_pixels_only_and_draw_keypoints_marks_them():
    img = np.full((60, 80, 3), 100, np.uint8)
    mask = np.zeros((60, 80), np.uint8)
    mask[10:20, 10:30], mask[40:50, 50:70] = 1, 2
    out = draw_mask(img.copy(), mask)
    changed = np.any(out != img, 2)
    assert np.array_equal(changed, mask > 0)
    assert not np.array_equal(out[15, 15], out[45, 55])      # a colour per id
    np.testing.assert_array_equal(draw_mask(img.copy(), mask), out)   # deterministic
    kps = np.array([[[20, 30, 0.9], [60, 30, 0.8], [40, 50, 0.1]]], np.float32)
    drawn = draw_keypoints(img.copy(), kps, [(0, 1), (1, 2)], threshold=0.3)
    assert np.any(drawn[30, 20] != 100) and np.any(drawn[30, 60] != 100)
    assert np.any(drawn[30, 40] != 100)                       # the edge 0-1
    assert np.all(drawn[50, 40] == 100) and np.all(drawn[42, 50] == 100)   # under threshold


# --- registry --------------------------------------------------------------------------------

def _registry(tmp_path, models: dict, labels='person\n'):
    (tmp_path / 'labels.txt').write_text(labels)
    path = tmp_path / 'models.yaml'
    path.write_text(yaml.safe_dump({'models': {
        name: dict({'file': 'm.onnx', 'input': {'width': 64, 'height': 64},
                    'labels': 'labels.txt'}, **entry) for name, entry in models.items()}}))
    return load_registry(path)


def test_registry_entries_for_each_new_decoder_parse_and_build(tmp_path):
    pose_args = {'decoder': 'yolov8_pose', 'keypoints': 'coco17', 'score_threshold': 0.4,
                 'keypoint_threshold': 0.5}
    hand_args = {'decoder': 'yolov8_pose', 'kpt_shape': [3, 2],
                 'keypoints': ['wrist', 'thumb', 'index'],
                 'skeleton': [['wrist', 'thumb'], [0, 2]]}
    ssd_args = {'decoder': 'ssd', 'box_format': 'yxyx', 'background_class': True,
                'activation': 'softmax'}
    reg = _registry(tmp_path, {
        'pose': {'task': 'pose', 'output': pose_args},
        'move': {'task': 'pose', 'output': {'decoder': 'movenet'}},
        'hand': {'task': 'pose', 'output': hand_args},
        'sem': {'task': 'segmentation', 'output': {'decoder': 'semantic',
                                                   'activation': 'sigmoid'}},
        'seg': {'task': 'segmentation', 'output': {'decoder': 'yolov8_seg', 'nms_iou': 0.6}},
        'cn': {'task': 'detection', 'output': {'decoder': 'centernet', 'box_units': 'pixels',
                                               'cell_offset': 0.5}},
        'ssd': {'task': 'detection', 'output': ssd_args},
    }, labels='background\nperson\n')
    pose = reg['pose']
    assert pose.keypoint_names == list(COCO17) and len(pose.skeleton) == 19
    assert pose.skeleton == [tuple(e) for e in COCO17_SKELETON]
    dec = pose.make_decoder(score_threshold=0.6)
    assert isinstance(dec, YoloPoseDecoder) and dec.score_threshold == 0.6
    assert dec.keypoint_threshold == 0.5 and dec.width == 56
    assert isinstance(reg['move'].make_decoder(), MoveNetDecoder)
    assert reg['move'].keypoint_names == list(COCO17)
    hand = reg['hand']
    assert hand.keypoint_names == ['wrist', 'thumb', 'index']
    assert hand.skeleton == [(0, 1), (0, 2)]
    assert hand.make_decoder().width == 5 + 3 * 2
    assert reg['sem'].make_decoder(score_threshold=0.5).activation == 'sigmoid'
    assert reg['seg'].make_decoder().nms_iou == 0.6
    assert reg['cn'].make_decoder().cell_offset == 0.5
    ssd = reg['ssd'].make_decoder()
    assert ssd.columns == 3 and ssd.box_format == 'yxyx' and reg['ssd'].keypoint_names == []


@pytest.mark.parametrize('task,output,needle', [
    ('pose', {'decoder': 'yolov8_pose', 'keypoints': 'hands21'}, "keypoints 'hands21' unknown"),
    ('pose', {'decoder': 'yolov8_pose', 'keypoints': 'coco17', 'kpt_shape': [5, 3]},
     'kpt_shape says 5 keypoints, the names are 17'),
    ('pose', {'decoder': 'movenet', 'skeleton': [[0, 17]]}, 'skeleton edge .*17'),
    ('pose', {'decoder': 'movenet', 'treshold': 0.3}, "'movenet' takes no treshold"),
    ('detection', {'decoder': 'yolov8_pose'}, "'yolov8_pose' does not fit task 'detection'"),
    ('segmentation', {'decoder': 'semantic'}, 'semantic needs 2..256 labels'),
    ('segmentation', {'decoder': 'yolov8_seg', 'max_detections': 300}, '1..255'),
    ('detection', {'decoder': 'ssd', 'box_format': 'xywh'}, "box_format 'xywh' unknown"),
    ('detection', {'decoder': 'ssd', 'normalized': 'yes'}, 'normalized must be true or false'),
    ('detection', {'decoder': 'centernet', 'box_encoding': 'corners'}, "box_encoding 'corn"),
])
def test_registry_refuses_bad_new_decoder_entries(tmp_path, task, output, needle):
    with pytest.raises(RegistryError, match=needle):
        _registry(tmp_path, {'m': {'task': task, 'output': output}})

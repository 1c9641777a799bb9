# Copyright 2026 edge_infer contributors. Apache-2.0.
"""Your own model as exporters really write it: dynamic axes, float16 I/O, clipped boxes.

The files are the trained NanoDet in the YOLOv8 layout (yolo_layouts.py),
rewritten as ``torch.onnx.export(..., dynamic_axes=...)`` and
``export(half=True)`` leave a file: free input and output sides with no
metadata, float16 tensors in and out. Each must be registered from the
file alone (with ``--imgsz`` where nothing says the size) and find the same
people on a real photo as the plain file.
"""

import hashlib
import re

from edge_infer import paths
from edge_infer.core.preprocess import Transform
from edge_infer.core.registry import load_models, load_registry
from edge_infer.tools.models import user
import numpy as np
import onnx
from onnx import helper, TensorProto
import pytest
import yolo_layouts


@pytest.fixture(scope='module')
def v8(data_home, tmp_path_factory):
    """Return NanoDet in the YOLOv8 layout ([1, 84, N]), static, no metadata."""
    spec = load_registry(paths.config_dir() / 'models.yaml')['nanodet']
    d = tmp_path_factory.mktemp('exports')
    return yolo_layouts.yolov8(data_home / 'models' / spec.file, d / 'v8.onnx')


@pytest.fixture(scope='module')
def photo(footage):
    return next(p for p in footage['photos'] if p.name == 'astronaut.png')


def _dynamic(src, dst, imgsz=None):
    """Write ``src`` with dynamic axes, as torch.onnx.export(dynamic_axes=...) does."""
    m = onnx.load(str(src))
    for dim, name in zip(m.graph.input[0].type.tensor_type.shape.dim,
                         ('batch', None, 'height', 'width')):
        if name:
            dim.dim_param = name
    for dim, name in zip(m.graph.output[0].type.tensor_type.shape.dim,
                         ('batch', None, 'anchors')):
        if name:
            dim.dim_param = name
    del m.graph.value_info[:]
    if imgsz:
        m.metadata_props.append(onnx.StringStringEntryProto(key='imgsz', value=str(imgsz)))
    onnx.save(m, str(dst))
    return dst


def _half(src, dst):
    """Write ``src`` with float16 input and output, as export(half=True) leaves them."""
    m = onnx.load(str(src))
    g = m.graph
    inp, out = g.input[0], g.output[0]
    for node in g.node:
        node.input[:] = ['x32' if x == inp.name else x for x in node.input]
        node.output[:] = ['y32' if x == out.name else x for x in node.output]
    g.node.insert(0, helper.make_node('Cast', [inp.name], ['x32'], to=TensorProto.FLOAT))
    g.node.append(helper.make_node('Cast', ['y32'], [out.name], to=TensorProto.FLOAT16))
    inp.type.tensor_type.elem_type = TensorProto.FLOAT16
    out.type.tensor_type.elem_type = TensorProto.FLOAT16
    onnx.save(m, str(dst))
    return dst


BOX = r'at \((-?[\d.]+), (-?[\d.]+)\)-\((-?[\d.]+), (-?[\d.]+)\)'


def _boxes(lines):
    return [ln for ln in lines if ' at (' in ln]


def _sha(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_dynamic_axes_without_metadata_take_imgsz_and_nothing_is_kept_on_failure(
        v8, photo, tmp_path):
    dyn = _dynamic(v8, tmp_path / 'dyn.onnx')
    reg, models = tmp_path / 'home' / 'models.yaml', tmp_path / 'home' / 'models'
    before = _sha(dyn)
    # nothing says the size: Ultralytics' 640, at which this export does not run
    with pytest.raises(user.ModelError, match=r"input 'input' \[None, 3, None, None\]: it "
                                              r'does not run at \[1, 3, 640, 640\].*--imgsz'):
        user.add(dyn, 'dyn', registry=reg, models_dir=models, try_on=photo)
    assert not reg.exists() and not list(models.glob('*.onnx'))
    assert not list(reg.parent.glob('labels/*'))
    name, prop = user.add(dyn, 'dyn', registry=reg, models_dir=models, imgsz=(416, 416),
                          try_on=photo)
    assert prop.family == 'yolov8' and len(prop.labels) == 80
    assert 'free input size: 416x416 from --imgsz' in prop.why
    assert any('input fixed at [1, 3, 416, 416]' in w for w in prop.why)
    assert _sha(dyn) == before
    # the same people as the static file, checked the same way
    static_name, static = user.add(v8, 'static', registry=reg, models_dir=models,
                                   try_on=photo)
    assert _boxes(prop.checked) == _boxes(static.checked) and _boxes(prop.checked)
    spec = load_models(user_path=reg)['dyn']
    assert (spec.input_spec.width, spec.input_spec.height) == (416, 416)


def test_dynamic_axes_with_imgsz_metadata_need_no_flag_and_a_wrong_flag_is_said(v8, tmp_path):
    dyn = _dynamic(v8, tmp_path / 'dyn.onnx', imgsz=[416, 416])
    prop = user.propose(dyn, imgsz=(320, 320))
    assert prop.family == 'yolov8'
    assert 'free input size: 416x416 from the metadata (imgsz)' in prop.why
    assert '--imgsz 320x320 not used: the metadata says 416x416' in prop.why


def test_the_family_flag_on_a_dynamic_layout_counts_classes_from_the_run(v8, tmp_path):
    dyn = _dynamic(v8, tmp_path / 'dyn.onnx')
    prop = user.propose(dyn, family='yolov8', imgsz=(416, 416))
    assert prop.family == 'yolov8' and len(prop.labels) == 80


def test_float16_input_and_output_run_through_casts_with_the_same_boxes(v8, photo, tmp_path):
    half = _half(v8, tmp_path / 'half.onnx')
    reg, models = tmp_path / 'models.yaml', tmp_path / 'models'
    name, prop = user.add(half, 'half', registry=reg, models_dir=models, try_on=photo)
    assert any('float16 input: a Cast from float32 inserted' in w for w in prop.why)
    assert any("float16 output 'output0': a Cast to float32 appended" in w for w in prop.why)
    assert prop.inputs['normalize']['std'] == [255, 255, 255]      # scaling kept
    _, plain = user.add(v8, 'plain', registry=reg, models_dir=models, try_on=photo)
    got, want = _boxes(prop.checked), _boxes(plain.checked)
    assert len(got) == len(want) and got
    for a, b in zip(got, want):         # float16 rounds the scores: labels and boxes match
        assert a.split()[0] == b.split()[0] and a.split(' at ')[1] == b.split(' at ')[1]


def test_every_box_is_clipped_to_the_source_image():
    tf = Transform(0.5, 0.5, 10.0, 0.0, 200, 100)
    boxes = np.array([[-20.0, -8.0, 60.0, 30.0], [100.0, 20.0, 130.0, 70.0]], np.float32)
    out = tf.to_source(boxes)
    assert out.tolist() == [[0.0, 0.0, 100.0, 60.0], [180.0, 40.0, 200.0, 100.0]]
    loose = Transform(0.5, 0.5, 10.0, 0.0)      # made by hand: the source size is unknown
    assert loose.to_source(np.array([[-20.0, 0, 0, 0]], np.float32))[0, 0] == -60.0


def test_checked_boxes_of_a_real_photo_stay_inside_it(v8, photo, tmp_path):
    import cv2
    name, prop = user.add(v8, 'v8', registry=tmp_path / 'r.yaml', models_dir=tmp_path / 'm',
                          try_on=photo, out_png=tmp_path / 'v8.png')
    h, w = cv2.imread(str(photo)).shape[:2]
    boxes = [[float(v) for v in re.search(BOX, line).groups()] for line in _boxes(prop.checked)]
    assert boxes
    for x1, y1, x2, y2 in boxes:
        assert 0 <= x1 <= x2 <= w and 0 <= y1 <= y2 <= h, (x1, y1, x2, y2)
    assert (tmp_path / 'v8.png').is_file()

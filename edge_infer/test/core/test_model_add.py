# Copyright 2026 edge_infer contributors. Apache-2.0.
"""`edge_infer model add | list | check`: your own ONNX file recognised, registered, run.

The YOLO-layout files are the trained NanoDet with ONNX nodes appended
(yolo_layouts.py), so recognising them is checked on real weights and the
check's detections on a real photo.
"""

from edge_infer import paths
from edge_infer.core.registry import load_models, load_registry
from edge_infer.tools.models import user
import numpy as np
import onnx
from onnx import helper, TensorProto
import pytest
import yolo_layouts


@pytest.fixture(scope='module')
def nanodet(data_home):
    spec = load_registry(paths.config_dir() / 'models.yaml')['nanodet']
    return spec, data_home / 'models' / spec.file


@pytest.fixture(scope='module')
def layouts(nanodet, tmp_path_factory):
    """Return {layout: file} of NanoDet in each YOLO layout, as an exporter would write it."""
    spec, src = nanodet
    d = tmp_path_factory.mktemp('layouts')
    return {
        'yolov8': yolo_layouts.yolov8(src, d / 'v8.onnx'),
        'yolov8_transposed': yolo_layouts.yolov8(src, d / 'v8t.onnx', transposed=True),
        'yolov5': yolo_layouts.yolov5(src, d / 'v5.onnx'),
        'end2end': yolo_layouts.end2end(src, d / 'e2e.onnx', labels=spec.labels),
        'ultralytics': yolo_layouts.yolov8(src, d / 'ul.onnx', ultralytics_input=True,
                                           labels=spec.labels)}


@pytest.fixture(scope='module')
def photo(footage):
    return next(p for p in footage['photos'] if p.name == 'astronaut.png')


@pytest.mark.parametrize('layout, family', [
    ('yolov8', 'yolov8'), ('yolov8_transposed', 'yolov8'), ('yolov5', 'yolov5'),
    ('end2end', 'end2end'), ('ultralytics', 'yolov8')])
def test_each_yolo_layout_is_recognised_with_no_flags(layouts, nanodet, layout, family):
    spec, _ = nanodet
    prop = user.propose(layouts[layout])
    assert prop.family == family and prop.task == 'detection'
    assert prop.labels == spec.labels          # COCO: from the shape, or the metadata's names
    assert (prop.inputs['width'], prop.inputs['height']) == (416, 416)
    assert prop.inputs['pad_value'] == 114 and prop.inputs['color'] == 'rgb'
    assert prop.inputs['normalize']['std'] == [255, 255, 255]
    if layout == 'ultralytics':
        assert any('the metadata' in w for w in prop.why)


def test_added_model_is_registered_for_the_nodes_and_finds_the_person(
        layouts, nanodet, photo, tmp_path):
    registry, models = tmp_path / 'home' / 'models.yaml', tmp_path / 'home' / 'models'
    name, prop = user.add(layouts['ultralytics'], 'my_yolo', registry=registry,
                          models_dir=models)
    assert name == 'my_yolo' and (models / 'my_yolo.onnx').is_file()
    specs = load_models(user_path=registry)
    spec = specs['my_yolo']
    assert spec.origin == str(registry) and spec.decoder == 'yolov8'
    assert specs['nanodet'].origin.endswith('config/models.yaml')
    assert spec.sha256 and spec.labels[0] == 'person'
    lines = user.check(spec, photo, models, out_png=tmp_path / 'my_yolo.png')
    assert 'person' in '\n'.join(lines[1:]) and (tmp_path / 'my_yolo.png').is_file()
    # the user's entry wins on the same key
    user.add(layouts['yolov8'], 'nanodet', registry=registry, models_dir=models)
    specs = load_models(user_path=registry)
    assert specs['nanodet'].origin == str(registry) and 'my_yolo' in specs


def _single_output_model(path, shape, meta=None):
    """Write a model with an image input and one output of ``shape`` (zeros)."""
    return _model_with_outputs(path, [shape], meta)


def test_an_ambiguous_layout_names_the_families_that_fit_and_asks_for_family(tmp_path):
    f = _single_output_model(tmp_path / 'amb.onnx', [1, 2000, 90])
    with pytest.raises(user.ModelError, match=r'fits yolov8 .*86 classes.* and yolov5 .*85 '
                                              r'classes.*--family'):
        user.propose(f)
    prop = user.propose(f, family='yolov5')
    assert prop.family == 'yolov5' and len(prop.labels) == 85
    labels = tmp_path / 'labels.txt'
    labels.write_text('\n'.join(f'thing{i}' for i in range(86)))
    name, prop = user.add(f, registry=tmp_path / 'reg.yaml', models_dir=tmp_path / 'm',
                          labels_file=labels)
    assert prop.family == 'yolov8' and prop.labels[85] == 'thing85'


def test_an_unreadable_file_or_layout_gets_one_line_with_what_was_seen(tmp_path):
    junk = tmp_path / 'junk.onnx'
    junk.write_bytes(b'\x00not a model' * 10)
    with pytest.raises(user.ModelError, match='not a readable ONNX file'):
        user.propose(junk)
    odd = _single_output_model(tmp_path / 'odd.onnx', [1, 2, 3, 4])
    with pytest.raises(user.ModelError, match=r'outputs \[\[1, 2, 3, 4\]\] fit no known'):
        user.propose(odd)
    obb = _single_output_model(tmp_path / 'obb.onnx', [1, 20], {'task': 'obb'})
    with pytest.raises(user.ModelError, match="task 'obb'.*expected one"):
        user.propose(obb)


def test_the_cli_adds_lists_and_checks(layouts, photo, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv('EDGE_INFER_HOME', str(tmp_path / 'home'))
    monkeypatch.setattr(user, '_photo', lambda: photo)
    monkeypatch.chdir(tmp_path)
    assert user.main(['add', str(layouts['yolov5']), '--name', 'v5', '--no-variants']) == 0
    out = capsys.readouterr().out
    assert "added 'v5'" in out and 'family yolov5' in out and 'person' in out
    assert (tmp_path / 'out' / 'v5.png').is_file()
    assert user.main(['list']) == 0
    listed = capsys.readouterr().out
    assert 'v5' in listed and str(tmp_path / 'home' / 'models.yaml') in listed
    assert user.main(['check', 'v5', str(photo)]) == 0
    assert 'person' in capsys.readouterr().out
    assert user.main(['check', 'nope', str(photo)]) == 2
    assert "model 'nope' is not registered" in capsys.readouterr().err
    assert user.main(['add', str(tmp_path / 'missing.onnx')]) == 2
    assert 'no such file' in capsys.readouterr().err


def test_yolox_and_rtdetr_by_family_or_metadata(tmp_path):
    grid = _single_output_model(tmp_path / 'yolox.onnx', [1, 8400, 85])
    guessed = user.propose(grid)
    assert guessed.family == 'yolov5' and any('--family yolox' in w for w in guessed.why)
    prop = user.propose(grid, family='yolox')
    assert prop.family == 'yolox' and len(prop.labels) == 80
    assert prop.inputs['color'] == 'bgr' and prop.inputs['normalize']['std'] == [1, 1, 1]
    detr = _single_output_model(tmp_path / 'detr.onnx', [1, 300, 84], {
        'author': 'Ultralytics', 'task': 'detect',
        'description': 'Ultralytics RT-DETR-l model trained on coco.yaml'})
    prop = user.propose(detr)
    assert prop.family == 'rtdetr' and prop.inputs['resize'] == 'stretch'
    assert prop.output['decoder'] == 'rtdetr' and len(prop.labels) == 80


def _model_with_outputs(path, shapes, meta=None):
    """Write a model with a 64x64 image input and outputs of ``shapes`` (zeros)."""
    x = helper.make_tensor_value_info('x', TensorProto.FLOAT, [1, 3, 64, 64])
    outs, nodes, inits = [], [], []
    for i, shape in enumerate(shapes):
        outs.append(helper.make_tensor_value_info(f'y{i}', TensorProto.FLOAT, shape))
        nodes.append(helper.make_node('ConstantOfShape', [f's{i}'], [f'y{i}']))
        inits.append(onnx.numpy_helper.from_array(np.array(shape, np.int64), f's{i}'))
    model = helper.make_model(helper.make_graph(nodes, 't', [x], outs, inits),
                              opset_imports=[helper.make_opsetid('', 13)])
    model.ir_version = 8
    for k, v in (meta or {}).items():
        model.metadata_props.append(onnx.StringStringEntryProto(key=k, value=v))
    onnx.save(model, str(path))
    return path


def test_pose_and_segmentation_layouts_are_recognised(tmp_path):
    pose = _single_output_model(tmp_path / 'pose.onnx', [1, 56, 84], {
        'author': 'Ultralytics', 'task': 'pose', 'kpt_shape': '[17, 3]',
        'names': "{0: 'person'}"})
    prop = user.propose(pose)
    assert (prop.family, prop.task, prop.labels) == ('yolov8_pose', 'pose', ['person'])
    assert prop.output['kpt_shape'] == [17, 3] and prop.output['keypoints'] == 'coco17'
    assert prop.inputs['pad_value'] == 114
    seg = _model_with_outputs(tmp_path / 'seg.onnx', [[1, 4 + 80 + 32, 84], [1, 32, 16, 16]])
    prop = user.propose(seg)
    assert (prop.family, prop.task, len(prop.labels)) == ('yolov8_seg', 'segmentation', 80)
    single = _single_output_model(tmp_path / 'movenet.onnx', [1, 1, 17, 3])
    prop = user.propose(single)
    assert (prop.family, prop.task, prop.labels) == ('movenet', 'pose', ['person'])
    fg = _single_output_model(tmp_path / 'fg.onnx', [1, 64, 64, 1])
    prop = user.propose(fg)
    assert (prop.family, prop.labels) == ('semantic', ['background', 'foreground'])
    classes = _single_output_model(tmp_path / 'cls.onnx', [1, 21, 32, 32])
    assert len(user.propose(classes).labels) == 21
    # each proposal becomes a registry entry the nodes can read
    for f in (pose, seg, single, fg):
        name, _ = user.add(f, registry=tmp_path / 'reg.yaml', models_dir=tmp_path / 'm')
    from edge_infer.core.registry import load_registry
    specs = load_registry(tmp_path / 'reg.yaml')
    assert {s.task for s in specs.values()} == {'pose', 'segmentation'}
    assert specs['pose'].keypoint_names[0] == 'nose' and len(specs['pose'].skeleton) == 19


def test_an_integer_input_is_fed_through_a_cast_in_a_derived_file(tmp_path):
    x = helper.make_tensor_value_info('input', TensorProto.INT32, [1, 192, 192, 3])
    y = helper.make_tensor_value_info('y', TensorProto.FLOAT, [1, 1, 17, 3])
    nodes = [helper.make_node('Shape', ['input'], ['s']),
             helper.make_node('Slice', ['s', 'b', 'e'], ['one']),
             helper.make_node('Concat', ['one', 'rest'], ['shape'], axis=0),
             helper.make_node('ConstantOfShape', ['shape'], ['y'])]
    inits = [onnx.numpy_helper.from_array(np.array(v, np.int64), n)
             for n, v in (('b', [0]), ('e', [1]), ('rest', [1, 17, 3]))]
    model = helper.make_model(helper.make_graph(nodes, 't', [x], [y], inits),
                              opset_imports=[helper.make_opsetid('', 13)])
    model.ir_version = 8
    f = tmp_path / 'int.onnx'
    onnx.save(model, str(f))
    before = f.read_bytes()
    name, prop = user.add(f, registry=tmp_path / 'reg.yaml', models_dir=tmp_path / 'm')
    assert prop.family == 'movenet' and prop.inputs['normalize']['std'] == [1, 1, 1]
    assert any('int32 input: a Cast from float32 inserted' in w for w in prop.why)
    assert f.read_bytes() == before                 # the user's file is untouched
    derived = onnx.load(str(tmp_path / 'm' / 'int.onnx'))
    assert derived.graph.input[0].type.tensor_type.elem_type == TensorProto.FLOAT
    assert derived.graph.node[0].op_type == 'Cast'


def test_an_ultralytics_classify_export_reads_probabilities_from_its_metadata(tmp_path):
    names = {i: f'kind{i}' for i in range(5)}
    f = _single_output_model(tmp_path / 'cls.onnx', [1, 5], {
        'author': 'Ultralytics', 'task': 'classify', 'names': repr(names), 'imgsz': '[64, 64]'})
    prop = user.propose(f)
    assert (prop.family, prop.task, prop.labels) == ('topk', 'classification',
                                                     [f'kind{i}' for i in range(5)])
    assert prop.output['softmax'] is False          # the export's output is softmaxed
    assert prop.inputs['resize'] == 'center_crop' and prop.inputs['normalize']['std'] == [
        255, 255, 255]
    plain = _single_output_model(tmp_path / 'plain.onnx', [1, 5])     # no metadata: logits
    assert user.propose(plain).output['softmax'] is True


def test_the_reference_preprocessing_is_ultralytics_named_or_a_stated_default(tmp_path):
    reg, models = tmp_path / 'reg.yaml', tmp_path / 'm'
    yolo = _single_output_model(tmp_path / 'y.onnx', [1, 84, 8400],
                                {'author': 'Ultralytics', 'task': 'detect'})
    name, prop = user.add(yolo, registry=reg, models_dir=models)
    pre = load_registry(reg)[name].preprocess
    assert (pre.pipeline, pre.interpolation, pre.pad_value) == ('cv2_resize', 'linear', 114)
    assert 'LetterBox' in pre.source and not pre.default
    assert any("Ultralytics' LetterBox" in w for w in prop.why)
    grid = _single_output_model(tmp_path / 'g.onnx', [1, 8400, 85])
    name, _ = user.add(grid, family='yolox', registry=reg, models_dir=models)
    pre = load_registry(reg)[name].preprocess
    assert pre.default and 'INTER_LINEAR' in pre.default and pre.color == 'bgr'
    name, _ = user.add(grid, name='named', family='yolox', registry=reg, models_dir=models,
                       preprocess={'pipeline': 'warp_perspective', 'color': 'bgr',
                                   'source': 'train.py L3'})
    pre = load_registry(reg)[name].preprocess
    assert (pre.pipeline, pre.source, pre.default) == ('warp_perspective', 'train.py L3', '')
    with pytest.raises(user.ModelError, match="pipeline 'bicubic' unknown"):
        user.add(grid, name='bad', family='yolox', registry=reg, models_dir=models,
                 preprocess='bicubic')

# Copyright 2026 edge_infer contributors. Apache-2.0.
"""fp16 / int8 model variants: float32 I/O kept, cached, checked against fp32 on real frames."""

import dataclasses

import cv2
from edge_infer import paths
from edge_infer.backends.libs.ort import OrtCpuBackend
from edge_infer.backends.precision.variants import make_variant, variant_kinds, VariantError
from edge_infer.core.image import Frame
from edge_infer.core.model import Model
from edge_infer.core.registry import load_registry
import numpy as np
import onnx
from onnx import helper, numpy_helper, TensorProto
import onnxruntime as ort
import pytest


def _quiet(line):
    pass


@pytest.fixture(scope='module')
def mobilenet(data_home):
    spec = load_registry(paths.config_dir() / 'models.yaml')['mobilenet_v2']
    return spec, data_home / 'models'


def _model(spec, folder, file=None):
    spec = dataclasses.replace(spec, file=file or spec.file)
    return Model(spec, OrtCpuBackend(intra_op_threads=2), folder, verify_checksum=False)


def _top1(model, frames):
    return [int(model.infer(f).output.class_ids[0]) for f in frames]


def test_kinds():
    assert variant_kinds() == ('fp16', 'int8', 'int8-nncf')


def test_fp16_keeps_float32_io_and_the_top1(mobilenet, footage, tmp_path):
    spec, models = mobilenet
    src = models / spec.file
    out = make_variant(src, 'fp16', tmp_path, log=_quiet)
    m = onnx.load(str(out))
    onnx.checker.check_model(m, full_check=True)
    assert [i.type.tensor_type.elem_type for i in m.graph.input] == [TensorProto.FLOAT]
    assert [o.type.tensor_type.elem_type for o in m.graph.output] == [TensorProto.FLOAT]
    assert {i.data_type for i in m.graph.initializer} == {TensorProto.FLOAT16}
    assert out.stat().st_size < 0.55 * src.stat().st_size
    photos = [Frame(cv2.imread(str(p)), 'bgr') for p in footage['photos']
              if p.stem in ('chelsea', 'coffee')]
    assert len(photos) == 2
    assert _top1(_model(spec, tmp_path, out.name), photos) == _top1(_model(spec, models), photos)


def test_cache_reuses_and_a_new_source_gets_a_new_file(mobilenet, tmp_path):
    spec, models = mobilenet
    src = models / spec.file
    lines = []
    first = make_variant(src, 'fp16', tmp_path, log=lines.append)
    assert len(lines) == 1 and first.name.startswith('mobilenet_v2.fp16.')
    mtime = first.stat().st_mtime_ns
    assert make_variant(src, 'fp16', tmp_path, log=lines.append) == first
    assert first.stat().st_mtime_ns == mtime and len(lines) == 1     # no reconversion
    model = onnx.load(str(src))
    helper.set_model_props(model, {'edited': 'yes'})
    other = tmp_path / 'src' / src.name
    other.parent.mkdir()
    onnx.save(model, str(other))
    second = make_variant(other, 'fp16', tmp_path, log=_quiet)
    assert second != first and second.is_file() and first.is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [first.name, second.name, 'src'])                             # no temporary left


def test_bad_requests_fail_clearly(mobilenet, tmp_path):
    spec, models = mobilenet
    src = models / spec.file
    with pytest.raises(VariantError, match="kind 'int4' unknown: use one of fp16, int8"):
        make_variant(src, 'int4', tmp_path)
    for kind in ('int8', 'int8-nncf'):
        with pytest.raises(VariantError, match=f"{kind} needs the model's registry entry"):
            make_variant(src, kind, tmp_path)
    garbage = tmp_path / 'garbage.onnx'
    garbage.write_bytes(b'\x00not a model' * 50)
    with pytest.raises(VariantError, match='source garbage.onnx is not a valid ONNX model'):
        make_variant(garbage, 'fp16', tmp_path)
    with pytest.raises(VariantError, match='not found'):
        make_variant(tmp_path / 'missing.onnx', 'fp16', tmp_path)
    assert [p.name for p in tmp_path.iterdir()] == ['garbage.onnx']


def test_fp16_keeps_shape_inputs_in_float32(tmp_path):
    """Resize scales and float math on a shape stay float32; the rest goes float16."""
    f32 = TensorProto.FLOAT
    nodes = [
        helper.make_node('Resize', ['x', '', 'scales'], ['up'], mode='nearest'),
        helper.make_node('Constant', [], ['k'], value_float=0.5),
        helper.make_node('Mul', ['up', 'k'], ['half']),
        helper.make_node('Shape', ['half'], ['shape']),
        helper.make_node('Cast', ['shape'], ['shape_f'], to=f32),
        helper.make_node('Mul', ['shape_f', 'one'], ['shape_f1']),
        helper.make_node('Cast', ['shape_f1'], ['shape_i'], to=TensorProto.INT64),
        helper.make_node('Reshape', ['half', 'shape_i'], ['y']),
    ]
    graph = helper.make_graph(
        nodes, 'g', [helper.make_tensor_value_info('x', f32, [1, 2, 3, 3])],
        [helper.make_tensor_value_info('y', f32, [1, 2, 6, 6])],
        [numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), 'scales'),
         numpy_helper.from_array(np.ones(4, np.float32), 'one')])
    src = tmp_path / 'tiny.onnx'
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid('', 17)], ir_version=8)
    onnx.save(model, str(src))
    out = make_variant(src, 'fp16', tmp_path / 'cache', log=_quiet)
    m = onnx.load(str(out))
    kinds = {i.name: i.data_type for i in m.graph.initializer}
    assert kinds == {'scales': TensorProto.FLOAT, 'one': TensorProto.FLOAT}
    casts = {n.output[0]: n.attribute[0].i for n in m.graph.node if n.op_type == 'Cast'}
    assert casts['shape_f'] == f32                  # shape arithmetic kept float32
    assert m.graph.output[0].type.tensor_type.elem_type == f32
    x = np.arange(18, dtype=np.float32).reshape(1, 2, 3, 3)
    run = ort.InferenceSession(str(out), providers=['CPUExecutionProvider']).run
    ref = ort.InferenceSession(str(src), providers=['CPUExecutionProvider']).run
    np.testing.assert_allclose(run(None, {'x': x})[0], ref(None, {'x': x})[0], rtol=1e-3)

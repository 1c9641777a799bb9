# Copyright 2026 edge_infer contributors. Apache-2.0.
"""The numpy BLAS backend: each conv lowering equals ONNX Runtime; whole models too."""

from edge_infer import paths
from edge_infer.backends.blas import BlasBackend, METHODS
from edge_infer.backends.variants import calibration_tensors
from edge_infer.core.backend import BackendError, OrtBackend
from edge_infer.core.registry import load_registry
import numpy as np
import onnx
from onnx import helper, numpy_helper, TensorProto
import pytest


def _conv_model(tmp_path, c, m, k, stride=1, pad=0, group=1, dilation=1, hw=17):
    rng = np.random.default_rng(c * 100 + m + k)
    w = rng.standard_normal((m, c // group, k, k)).astype(np.float32)
    b = rng.standard_normal(m).astype(np.float32)
    node = helper.make_node('Conv', ['x', 'w', 'b'], ['y'], strides=[stride, stride],
                            pads=[pad] * 4, group=group, dilations=[dilation, dilation])
    graph = helper.make_graph(
        [node], 'conv', [helper.make_tensor_value_info('x', TensorProto.FLOAT, [1, c, hw, hw])],
        [helper.make_tensor_value_info('y', TensorProto.FLOAT, None)],
        [numpy_helper.from_array(w, 'w'), numpy_helper.from_array(b, 'b')])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid('', 17)])
    model.ir_version = 8
    path = tmp_path / f'conv_{c}_{m}_{k}_{stride}_{pad}_{group}_{dilation}.onnx'
    onnx.save(model, str(path))
    return path, rng.standard_normal((1, c, hw, hw)).astype(np.float32)


CASES = [{'c': 8, 'm': 16, 'k': 3, 'pad': 1}, {'c': 8, 'm': 16, 'k': 3, 'stride': 2, 'pad': 1},
         {'c': 16, 'm': 8, 'k': 1}, {'c': 8, 'm': 8, 'k': 3, 'pad': 1, 'group': 8},
         {'c': 8, 'm': 12, 'k': 3, 'pad': 1, 'group': 4},
         {'c': 4, 'm': 6, 'k': 3, 'pad': 2, 'dilation': 2},
         {'c': 3, 'm': 5, 'k': 5, 'stride': 2, 'pad': 2}]


@pytest.mark.parametrize('method', METHODS)
@pytest.mark.parametrize('case', CASES, ids=lambda c: '-'.join(f'{k}{v}' for k, v in c.items()))
def test_each_lowering_equals_onnxruntime(tmp_path, method, case):
    path, x = _conv_model(tmp_path, **case)
    ref = OrtBackend(intra_op_threads=1).load(path).run(x)[0]
    sess = BlasBackend(method).load(path)
    out = sess.run(x)[0]
    assert out.shape == ref.shape
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-4)    # float32 sum order
    plan = sess.plan[0]['method']
    if case.get('group', 1) == case['c'] == case['m']:
        assert plan == 'depthwise'
    elif case['k'] == 1 and case.get('stride', 1) == 1 and not case.get('pad'):
        assert plan == 'gemm'
    elif case.get('group', 1) == 1:
        assert plan == method


@pytest.mark.parametrize('name', ['mobilenet_v2', 'nanodet'])
def test_whole_models_equal_onnxruntime_on_a_real_frame(data_home, name):
    spec = load_registry(paths.config_dir() / 'models.yaml')[name]
    path = data_home / 'models' / spec.file
    x = calibration_tensors(spec, 1)[0]
    ref = [r.copy() for r in OrtBackend(intra_op_threads=2).load(path).run(x)]
    sess = BlasBackend('auto', tune_runs=1).load(path)
    out = sess.run(x)
    for a, b in zip(out, ref):
        assert a.shape == b.shape
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-5 * max(1.0, np.abs(b).max()))
    # every conv layer got a lowering; the 3x3 dense ones were timed three ways
    assert len(sess.plan) == sum(1 for n in onnx.load(str(path)).graph.node
                                 if n.op_type == 'Conv')
    tuned = [p for p in sess.plan if p['ms']]
    assert all(set(p['ms']) == set(METHODS) and p['method'] == min(p['ms'], key=p['ms'].get)
               for p in tuned)


def test_unsupported_op_is_named(tmp_path):
    node = helper.make_node('Softsign', ['x'], ['y'], name='odd_one')
    graph = helper.make_graph([node], 'g',
                              [helper.make_tensor_value_info('x', TensorProto.FLOAT, [1, 3])],
                              [helper.make_tensor_value_info('y', TensorProto.FLOAT, [1, 3])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid('', 17)])
    model.ir_version = 8
    onnx.save(model, str(tmp_path / 'odd.onnx'))
    with pytest.raises(BackendError, match='unsupported op Softsign \\(odd_one\\)'):
        BlasBackend().load(tmp_path / 'odd.onnx')
    ok, why = BlasBackend().available()
    assert ok and 'numpy' in why

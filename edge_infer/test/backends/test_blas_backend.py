# Copyright 2026 edge_infer contributors. Apache-2.0.
"""The numpy BLAS backend: each conv lowering, every op and both whole models equal ORT."""

import time

import cv2
from edge_infer import paths
from edge_infer.backends.libs.blas import BlasBackend, METHODS
from edge_infer.backends.libs.blas_conv import SLOW_FACTOR
from edge_infer.backends.libs.ort import OrtCpuBackend
from edge_infer.core.backend import BackendError
from edge_infer.core.image import Frame
from edge_infer.core.model import Model
from edge_infer.core.registry import load_registry
import numpy as np
import onnx
from onnx import helper, numpy_helper, TensorProto
import pytest

# float32 sums in another order than ORT's: observed max |diff| <= 4.1e-7 x output scale
# on single layers and <= 1.3e-6 x scale on the whole models (1.25e-5 absolute).
TOL = 1e-5


def _close(out, ref):
    assert out.shape == ref.shape
    np.testing.assert_allclose(out, ref, rtol=0, atol=TOL * max(1.0, float(np.abs(ref).max())))


def _save(tmp_path, nodes, inputs, outputs, inits, name):
    graph = helper.make_graph(nodes, name, inputs, outputs,
                              [numpy_helper.from_array(v, k) for k, v in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid('', 17)])
    model.ir_version = 8
    path = tmp_path / f'{name}.onnx'
    onnx.save(model, str(path))
    return path


def _value(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def _conv_model(tmp_path, c, m, k, stride=1, pad=0, group=1, dilation=1, hw=17,
                auto_pad=None, layers=1):
    rng = np.random.default_rng(c * 100 + m + k + stride + group)
    pads = {'auto_pad': auto_pad} if auto_pad else {'pads': [pad] * 4}
    nodes, inits, src = [], {}, 'x'
    for i in range(layers):
        inits[f'w{i}'] = rng.standard_normal((m, c // group, k, k)).astype(np.float32)
        inits[f'b{i}'] = rng.standard_normal(m).astype(np.float32)
        nodes.append(helper.make_node('Conv', [src, f'w{i}', f'b{i}'], [f'y{i}'],
                                      name=f'conv{i}', strides=[stride, stride], group=group,
                                      dilations=[dilation, dilation], **pads))
        src = f'y{i}'
    name = f'conv_{c}_{m}_{k}_{stride}_{pad}_{group}_{dilation}_{auto_pad}_{layers}'
    path = _save(tmp_path, nodes, [_value('x', [1, c, hw, hw])], [_value(src, None)], inits,
                 name)
    return path, [rng.standard_normal((1, c, hw, hw)).astype(np.float32) for _ in range(2)]


CASES = [{'c': 8, 'm': 16, 'k': 3, 'pad': 1},                      # 3x3 stride 1
         {'c': 8, 'm': 16, 'k': 3, 'stride': 2, 'pad': 1},         # 3x3 stride 2
         {'c': 16, 'm': 8, 'k': 1},                                # 1x1: a plain GEMM
         {'c': 16, 'm': 8, 'k': 1, 'stride': 2},                   # 1x1 strided: GEMM too
         {'c': 8, 'm': 8, 'k': 3, 'pad': 1, 'group': 8},           # depthwise
         {'c': 8, 'm': 16, 'k': 3, 'stride': 2, 'pad': 1, 'group': 8},   # depthwise x2
         {'c': 8, 'm': 12, 'k': 3, 'pad': 1, 'group': 4},          # grouped
         {'c': 4, 'm': 6, 'k': 3, 'pad': 2, 'dilation': 2},        # dilated
         {'c': 3, 'm': 5, 'k': 5, 'stride': 2, 'pad': 2},          # 5x5 stride 2
         {'c': 3, 'm': 5, 'k': 4, 'stride': 2, 'auto_pad': 'SAME_UPPER'}]  # uneven pads


@pytest.mark.parametrize('method', METHODS)
@pytest.mark.parametrize('case', CASES, ids=lambda c: '-'.join(f'{k}{v}' for k, v in c.items()))
def test_each_lowering_equals_onnxruntime(tmp_path, method, case):
    path, xs = _conv_model(tmp_path, **case)
    ort = OrtCpuBackend(1).open_session(path)
    sess = BlasBackend(method).open_session(path)
    assert sess.backend_name == f'numpy-blas/cpu/{method}'
    for x in xs:     # twice: the buffers kept from the first run must not leak into the second
        _close(sess.run(x)[0], ort.run(x)[0])
    (entry,) = sess.plan
    if case.get('group', 1) == case['c'] > 1:
        assert (entry['kind'], entry['method']) == ('depthwise', 'depthwise')
    elif case['k'] == 1:
        assert (entry['kind'], entry['method']) == ('pointwise', 'gemm')
    else:
        assert entry['method'] == method and entry['ms'] == {}     # forced: not timed
        assert entry['kind'] == ('dense' if case.get('group', 1) == 1 else 'grouped')


def test_auto_times_every_method_once_per_shape_and_keeps_the_fastest(tmp_path):
    path, xs = _conv_model(tmp_path, c=16, m=16, k=3, pad=1, hw=24, layers=3)
    sess = BlasBackend('auto', tune_runs=2).open_session(path)
    _close(sess.run(xs[0])[0], OrtCpuBackend(1).open_session(path).run(xs[0])[0])
    first, *alike = sess.plan
    assert [p['node'] for p in sess.plan] == ['conv0', 'conv1', 'conv2']
    assert all(p['op'] == 'Conv' and p['shape'] == '16x24x24->16x24x24 k3x3 s1 d1 g1'
               for p in sess.plan)
    assert set(first['ms']) == set(METHODS) and all(v > 0 for v in first['ms'].values())
    assert first['method'] == min(first['ms'], key=first['ms'].get)
    for m in first['cut']:    # timed once only: it was over 10x the best before it
        before = [first['ms'][k] for k in METHODS[:METHODS.index(m)]]
        assert first['ms'][m] > SLOW_FACTOR * min(before)
    for p in alike:           # same shape: not timed again
        assert p['ms'] == first['ms'] and p['method'] == first['method']
        assert 'same shape' in p['note']
    assert 0 < sess.tune_ms < 1e3 * 10


def test_every_other_op_and_in_place_buffers_equal_onnxruntime(tmp_path):
    rng = np.random.default_rng(7)
    f = np.float32
    inits = {'w': rng.standard_normal((8, 4, 3, 3)).astype(f), 'b': np.zeros(8, f),
             'up': np.array([1, 8, 8, 8], np.int64), 'down': np.array([1, 8, 3, 3], np.int64),
             'parts': np.array([6, 10], np.int64), 'shape': np.array([1, 10, 64], np.int64),
             'lo': np.array(0, f), 'hi': np.array(0.5, f),
             'gw': rng.standard_normal((8, 5)).astype(f), 'gb': rng.standard_normal(5).astype(f),
             'mw': rng.standard_normal((10, 3)).astype(f)}
    n = helper.make_node
    nodes = [n('Conv', ['x', 'w', 'b'], ['c'], pads=[1] * 4),
             n('Relu', ['c'], ['r']), n('Sigmoid', ['c'], ['s']),     # c read twice: kept
             n('Add', ['r', 's'], ['a']),                              # s is an output: kept
             n('LeakyRelu', ['a'], ['l'], alpha=0.1),
             n('MaxPool', ['l'], ['p'], kernel_shape=[3, 3], strides=[2, 2], pads=[1] * 4),
             n('Resize', ['p', '', '', 'up'], ['u'], mode='linear',
               coordinate_transformation_mode='half_pixel'),
             n('Resize', ['l', '', '', 'down'], ['d'], mode='linear',
               coordinate_transformation_mode='half_pixel'),
             n('Concat', ['u', 'l'], ['cat'], axis=1),
             n('Split', ['cat', 'parts'], ['s1', 's2'], axis=1),
             n('Clip', ['s1', 'lo', 'hi'], ['clip']),
             n('Reshape', ['s2', 'shape'], ['rs']),
             n('Transpose', ['rs'], ['t'], perm=[0, 2, 1]),
             n('MatMul', ['t', 'mw'], ['mm']),
             n('GlobalAveragePool', ['d'], ['g']), n('Flatten', ['g'], ['fl']),
             n('Gemm', ['fl', 'gw', 'gb'], ['logits'], alpha=0.5, beta=2.0)]
    outs = ['s', 'clip', 't', 'mm', 'logits']
    path = _save(tmp_path, nodes, [_value('x', [1, 4, 8, 8])], [_value(o, None) for o in outs],
                 inits, 'ops')
    ort = OrtCpuBackend(1).open_session(path)
    sess = BlasBackend().open_session(path)
    kept = None
    for _ in range(2):
        x = rng.standard_normal((1, 4, 8, 8)).astype(f)
        outs = sess.run(x)
        for out, ref in zip(outs, ort.run(x)):
            _close(out, ref)
        # buffers allocated at load, rewritten in place: the same arrays every run
        assert kept is None or all(a is b or a.base is b.base for a, b in zip(outs, kept))
        kept = outs
    with pytest.raises(BackendError, match='input shape'):
        sess.run(np.zeros((1, 4, 9, 9), f))


def _photo_frame(footage, name):
    path = next(p for p in footage['photos'] if p.name == name)
    return Frame(cv2.cvtColor(cv2.imread(str(path)), cv2.COLOR_BGR2RGB), 'rgb')


@pytest.mark.parametrize('name,photo', [('mobilenet_v2', 'chelsea.png'),
                                        ('nanodet', 'astronaut.png')])
def test_whole_models_equal_onnxruntime_on_a_real_photo(data_home, footage, name, photo):
    spec = load_registry(paths.config_dir() / 'models.yaml')[name]
    models = data_home / 'models'
    blas = Model(spec, BlasBackend('auto', tune_runs=1), models)
    ort = Model(spec, OrtCpuBackend(2), models)
    frame = _photo_frame(footage, photo)
    tensor, _ = blas.preprocess(frame)
    ref = [r.copy() for r in ort.session.run(tensor)]
    for out, r in zip(blas.session.run(tensor), ref):
        _close(out, r)
    got, want = blas.infer(frame).output, ort.infer(frame).output
    if name == 'nanodet':     # the astronaut: a person, found as ORT finds her
        people = [s for s, c in zip(got.scores, got.class_ids) if spec.label(c) == 'person']
        assert people and max(people) > 0.6
        assert len(got) == len(want)
        np.testing.assert_allclose(got.boxes, want.boxes, atol=0.05)
    else:                     # the cat: same top-1 class as ORT
        assert got.class_ids[0] == want.class_ids[0]
        assert 'cat' in spec.label(got.class_ids[0]).lower()
    # every conv layer has a lowering; the timed ones keep their fastest method
    plan = blas.session.plan
    assert len(plan) == sum(1 for n in onnx.load(str(models / spec.file)).graph.node
                            if n.op_type == 'Conv')
    timed = [p for p in plan if p['ms']]
    assert timed and all(p['kind'] in ('dense', 'grouped') for p in timed)
    assert all(p['method'] == min(p['ms'], key=p['ms'].get) for p in timed)
    assert all(p['method'] in ('gemm', 'depthwise') for p in plan if not p['ms'])


def test_unsupported_op_is_named_at_load(tmp_path):
    node = helper.make_node('Softsign', ['x'], ['y'], name='odd_one')
    path = _save(tmp_path, [node], [_value('x', [1, 3])], [_value('y', [1, 3])], {}, 'odd')
    with pytest.raises(BackendError, match=r'numpy-blas: unsupported op Softsign \(odd_one\)'):
        BlasBackend().open_session(path)


def test_describes_itself():
    b = BlasBackend()
    ok, why = b.available()
    assert ok and why.startswith(f'numpy {np.__version__} with ')
    assert b.name == 'numpy-blas/cpu' and b.library == 'numpy' and b.precision == 'fp32'
    assert b.options() == {'conv_method': 'auto', 'tune_runs': 3}
    assert b.versions()['numpy'] == np.__version__ and b.versions()['blas']
    assert BlasBackend('im2row').name == 'numpy-blas/cpu/im2row'
    with pytest.raises(ValueError, match='winograd'):
        BlasBackend('winograd')


def test_the_energy_window_covers_the_timed_run_and_its_own_work_stays_out(data_home):
    """Model.infer: around_run opens before the timed run and closes after it.

    The meter's end() may take a while (integration, a callback, a lock, the
    GIL); that time must not show up as inference time. Here the closing
    callable sleeps 50 ms: the window (begin .. finish) contains the run, and
    inference_ms stays within the time between begin returning and finish
    being called.
    """
    spec = load_registry(paths.config_dir() / 'models.yaml')['mobilenet_v2']
    model = Model(spec, OrtCpuBackend(1), data_home / 'models')
    marks = {}

    def around():
        marks['opened'] = time.perf_counter()

        def finish():
            marks['closing'] = time.perf_counter()
            time.sleep(0.05)
        return finish
    frame = Frame(np.full((240, 320, 3), 90, np.uint8), 'rgb')
    result = model.infer(frame, around_run=around)
    window_ms = (marks['closing'] - marks['opened']) * 1e3
    assert 0 < result.inference_ms <= window_ms
    assert result.postprocess_ms < 50      # the 50 ms sleep is in neither figure
    model.close()

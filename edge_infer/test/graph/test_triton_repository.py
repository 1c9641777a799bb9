# Copyright 2026 edge_infer contributors. Apache-2.0.
"""Triton repositories and the served backend's mapping, without a server.

What ``edge_infer serve`` runs a model on (a measured choice the server's
venv can run, else the best of those), the config.pbtxt it writes (dynamic
batching, the file's sha256, the compute-time output, the uint8 frame
input and the server's normalisation of it), and the stock
repository of ``--write-repo`` (the batch freed where a batch of 3 answers
as three single runs; a file where it cannot be gets no batcher, and says
why).
"""

import pathlib
import re
import types

from edge_infer import paths
from edge_infer.backends.libs.triton import is_loopback, parse_url
from edge_infer.core.image import Frame
from edge_infer.core.preprocess import Preprocessor
from edge_infer.core.registry import load_models
from edge_infer.tools.triton import batch_dim, repository, serve, served_model
from edge_infer.tools.triton.served_model import backend_for, servable
import numpy as np
import pytest


def _model_path(name: str) -> pathlib.Path:
    path = paths.models_dir() / load_models()[name].file
    if not path.is_file():
        pytest.skip(f'{path} missing: edge_infer prepare')
    return path


def test_what_the_server_runs_itself():
    for name in ('onnxruntime/cpu/t1', 'onnxruntime/cpu/t2', 'openvino/cpu/t1',
                 'openvino/cpu/t2/bf16', 'openvino/cpu/t1/fp16'):
        assert servable(name), name
    for name in ('openvino/cpu/t1/bf16+pre', 'onnxruntime/cpu/t2/int8', 'ncnn/cpu/t1',
                 'opencv-dnn/cpu', 'numpy-blas/cpu', 'onnxruntime/cuda',
                 'openvino/cpu/t1/bf16/int8', 'triton/host/nanodet'):
        assert not servable(name), name
    ov = backend_for('openvino/cpu/t2/bf16')
    assert (ov.name, ov.intra_op_threads, ov.precision) == ('openvino/cpu/t2/bf16', 2, 'bf16')
    assert backend_for('onnxruntime/cpu/t1').name == 'onnxruntime/cpu/t1'
    with pytest.raises(ValueError, match='not servable'):
        backend_for('ncnn/cpu/t1')


def test_urls_and_loopback():
    assert parse_url('grpc://gpu-box:8001') == ('gpu-box', 8001)
    assert parse_url('grpc://10.0.0.5') == ('10.0.0.5', 8001)
    assert parse_url('127.0.0.1:9001') == ('127.0.0.1', 9001)
    with pytest.raises(ValueError, match='grpc://host:port'):
        parse_url('http://gpu-box:8000')
    assert is_loopback('localhost') and is_loopback('127.0.0.2') and not is_loopback('10.0.0.5')


def test_the_served_config_batches_and_names_the_file(tmp_path):
    path = _model_path('nanodet')
    folder = repository.write_served(tmp_path / 'repo', 'nanodet', path, 'ab' * 32,
                                     'openvino/cpu/t1/bf16', tmp_path, max_batch=4,
                                     queue_delay_us=250)
    text = (folder / 'config.pbtxt').read_text()
    assert 'backend: "python"' in text and 'max_batch_size: 4' in text
    assert 'max_queue_delay_microseconds: 250' in text
    assert '{ name: "input" data_type: TYPE_FP32 dims: [ 3, 416, 416 ] }' in text
    assert 'edge_infer_compute_us" data_type: TYPE_INT64 dims: [ 1 ]' in text
    assert f'string_value: "{"ab" * 32}"' in text and 'openvino/cpu/t1/bf16' in text
    assert (folder / '1' / 'model.onnx').read_bytes() == path.read_bytes()
    assert (folder / '1' / 'model.py').is_file()
    unbatched = repository.write_served(tmp_path / 'r0', 'nanodet', path, 'ab' * 32,
                                        'onnxruntime/cpu/t1', tmp_path, max_batch=0)
    text = (unbatched / 'config.pbtxt').read_text()
    assert 'dynamic_batching' not in text and 'dims: [ 1, 3, 416, 416 ]' in text


def test_the_served_input_is_the_uint8_frame_with_the_normalisation(tmp_path):
    spec = load_models()['nanodet'].input_spec
    folder = repository.write_served(tmp_path / 'repo', 'nanodet', _model_path('nanodet'),
                                     'ab' * 32, 'onnxruntime/cpu/t1', tmp_path, max_batch=4,
                                     input_spec=spec)
    text = (folder / 'config.pbtxt').read_text()
    assert '{ name: "input" data_type: TYPE_UINT8 dims: [ 416, 416, 3 ] }' in text
    params = dict(re.findall(r'key: "(\w+)" value: \{ string_value: "([^"]*)"', text))
    assert params['edge_infer_input'] == 'u8' and params['edge_infer_layout'] == spec.layout
    assert [float(v) for v in params['edge_infer_mean'].split(',')] == list(spec.mean)
    assert [float(v) for v in params['edge_infer_std'].split(',')] == list(spec.std)
    inputs, _ = repository.io_of(_model_path('nanodet'))
    with pytest.raises(ValueError, match='--input float'):
        repository.u8_input('two', inputs * 2, spec)


@pytest.mark.parametrize('name', ['nanodet', 'movenet_lightning', 'mobilenet_v2'])
def test_the_server_normalises_the_uint8_frame_as_the_robot_does(name):
    """The robot's u8 frame, normalised by the served model, is the robot's float input."""
    spec = load_models()[name].input_spec
    rng = np.random.default_rng(4)
    frame = Frame(rng.integers(0, 256, (300, 500, 3), np.uint8), 'bgr')
    floats, _ = Preprocessor(spec, 'float')(frame)
    frame_u8, _ = Preprocessor(spec, 'u8')(frame)
    _, params = repository.u8_input(name, [repository.Tensor('x', 'TYPE_FP32', floats.shape)],
                                    spec)
    got = served_model.Normalise(params, np)(frame_u8)
    assert got.shape == floats.shape and got.dtype == np.float32
    np.testing.assert_allclose(got, floats, rtol=1e-6, atol=1e-5)


def test_rows_over_the_floor_rebuild_the_dense_outputs_there(tmp_path):
    """What the server sends (cells reaching the floor) rebuilds each of those cells exactly."""
    from edge_infer.backends.libs import triton_rows
    spec = load_models()['nanodet']
    plan = repository.rows_plan_for(spec, _model_path('nanodet'), 0.3)
    assert plan.scores == ['cls_8', 'cls_16', 'cls_32'] and plan.classes == 80
    again = triton_rows.Plan.from_params(plan.params())
    assert (again.floor, again.scores, again.paired, again.dense) == \
        (plan.floor, plan.scores, plan.paired, plan.dense)
    rng = np.random.default_rng(2)
    rebuild = triton_rows.Rebuild(plan)
    for _ in range(3):      # each frame clears the cells the last one wrote
        outs = {n: rng.random(shape, dtype=np.float32) * 0.25 for n, shape in plan.dense}
        for n in plan.scores:       # a tenth of the cells score 0.6 in one class
            cells = outs[n].reshape(-1, plan.classes)
            hit = rng.random(len(cells)) < 0.1
            cells[hit, rng.integers(0, plan.classes)] = 0.6
        rows, scores, paired = triton_rows.encode(plan, outs)
        assert 0 < len(rows) < sum(plan.cells)
        dense = dict(zip([n for n, _ in plan.dense], rebuild(rows, scores, paired)))
        for s_name, p_name in zip(plan.scores, plan.paired):
            keep = outs[s_name].max(-1) >= plan.floor
            np.testing.assert_array_equal(dense[s_name][keep], outs[s_name][keep])
            np.testing.assert_array_equal(dense[p_name][keep], outs[p_name][keep])
            assert not dense[s_name][~keep].any() and not dense[p_name][~keep].any()
    with pytest.raises(ValueError, match='out of range'):
        rebuild(np.array([sum(plan.cells)]), np.zeros((1, 80)), np.zeros((1, plan.width)))
    # no sparse form: every other decoder, or a floor of 0
    assert repository.rows_plan_for(load_models()['mobilenet_v2'],
                                    _model_path('mobilenet_v2'), 0.05) is None
    assert repository.rows_plan_for(spec, _model_path('nanodet'), 0) is None
    folder = repository.write_served(tmp_path, 'nanodet', _model_path('nanodet'), 'ab' * 32,
                                     'onnxruntime/cpu/t1', pathlib.Path('/src'), rows_plan=plan)
    text = (folder / 'config.pbtxt').read_text()
    assert '{ name: "edge_infer_scores" data_type: TYPE_FP32 dims: [ -1, 80 ] }' in text
    assert 'cls_8:1x2704x80' in text and 'floor=0.3;' in text and '"cls_8"' not in text


@pytest.mark.parametrize('name', ['nanodet', 'selfie', 'centernet', 'mobilenet_v2'])
def test_a_freed_batch_answers_as_single_runs(name):
    """The rewritten file, at batch 3, answers each input as the original file alone."""
    import onnxruntime as ort
    path = _model_path(name)
    data, why = batch_dim.batched_copy(path)
    assert data is not None, why
    one = ort.InferenceSession(str(path), providers=['CPUExecutionProvider'])
    three = ort.InferenceSession(data, providers=['CPUExecutionProvider'])
    feed = one.get_inputs()[0]
    x = np.random.default_rng(9).random([3] + list(feed.shape[1:]), np.float32)
    outs = three.run(None, {feed.name: x})
    for i in range(3):
        for got, alone in zip(outs, one.run(None, {feed.name: x[i:i + 1]})):
            np.testing.assert_allclose(got[i:i + 1], alone, rtol=1e-4, atol=1e-4)


def test_a_batch_that_cannot_be_freed_says_why():
    import onnx
    from onnx import helper, TensorProto
    # a Reshape with a computed shape: nothing to rewrite, refused with the reason
    graph = helper.make_graph(
        [helper.make_node('Shape', ['x'], ['s']), helper.make_node('Reshape', ['x', 's'], ['y'])],
        'g', [helper.make_tensor_value_info('x', TensorProto.FLOAT, [1, 4])],
        [helper.make_tensor_value_info('y', TensorProto.FLOAT, [1, 4])])
    model, why = batch_dim.free_batch(helper.make_model(graph))
    assert model is None and 'computed shape' in why
    onnx.checker.check_model(helper.make_model(graph))
    data, why = batch_dim.batched_copy(_model_path('movenet_lightning'))
    assert data is None and why


def test_a_stock_repository_batches_what_was_freed(tmp_path):
    nanodet = _model_path('nanodet')
    batched, why = batch_dim.batched_copy(nanodet)
    assert batched is not None, why
    fixed = repository.write_stock(tmp_path, 'nanodet', nanodet, 'cd' * 32, 'openvino',
                                   'openvino/cpu/t1/bf16', batched=None,
                                   why_not='Resize sizes unknown')
    text = (fixed / 'config.pbtxt').read_text()
    assert 'max_batch_size: 0' in text and 'Resize sizes unknown' in text
    assert 'dynamic_batching' not in text and 'default_model_filename: "model.onnx"' in text
    assert 'INFERENCE_NUM_THREADS" value: { string_value: "1"' in text
    assert (fixed / '1' / 'model.onnx').read_bytes() == nanodet.read_bytes()
    free = repository.write_stock(tmp_path / 'b', 'nanodet', nanodet, 'ef' * 32,
                                  'onnxruntime', batched=batched)
    text = (free / 'config.pbtxt').read_text()
    assert 'backend: "onnxruntime"' in text and 'max_batch_size: 8' in text
    assert 'dynamic_batching' in text and 'dims: [ 3, 416, 416 ]' in text
    assert (free / '1' / 'model.onnx').read_bytes() == batched
    assert repository.stock_backend('openvino/cpu/t2/bf16') == 'openvino'
    assert repository.stock_backend('ncnn/cpu/t1') == 'onnxruntime'


class _Manager:
    """Answers as a backend manager whose profile chose ``best``."""

    def __init__(self, best: str, names):
        self.best, self.names = best, names

    def profile(self, spec, path, measure=True):
        return types.SimpleNamespace(results=[self.best])

    def select(self, results, spec):
        return types.SimpleNamespace(backend=results[0]), 'best'

    def candidates(self, spec, path):
        return [types.SimpleNamespace(name=n) for n in self.names]

    def choose(self, spec, path, only=(), use_cache=True):
        return None, types.SimpleNamespace(chosen=only[-1], why=f'among {len(only)}')


def test_the_measured_choice_maps_to_what_the_server_runs():
    names = ['onnxruntime/cpu/t1', 'ncnn/cpu/t2', 'openvino/cpu/t1/bf16+pre',
             'openvino/cpu/t1/bf16']
    chosen, why = serve.choose_served(_Manager('openvino/cpu/t1/bf16', names), None,
                                      pathlib.Path('x'), print)
    assert chosen == 'openvino/cpu/t1/bf16' and why == 'among 2'
    chosen, why = serve.choose_served(_Manager('ncnn/cpu/t2', names), None,
                                      pathlib.Path('x'), print)
    assert chosen == 'openvino/cpu/t1/bf16'
    assert why.startswith('the profile chose ncnn/cpu/t2, which this server does not run')


def test_the_server_listens_for_grpc_only(tmp_path):
    env = types.SimpleNamespace(server=pathlib.Path('/x/tritonserver'),
                                backends=pathlib.Path('/x/backends'))
    cmd = serve.Server(env, tmp_path / 'repo', 9001, '127.0.0.1').command()
    assert cmd[cmd.index('--grpc-port') + 1] == '9001'
    assert cmd[cmd.index('--allow-http') + 1] == 'false'
    assert cmd[cmd.index('--allow-metrics') + 1] == 'false'
    assert cmd[cmd.index('--grpc-address') + 1] == '127.0.0.1'
